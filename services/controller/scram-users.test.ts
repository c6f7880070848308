// SCRAM users in the controller's state machine: upsert, replace, delete (RESOURCE_NOT_FOUND
// for a missing one), Kafka's request rules (duplicate user, unknown mechanism, iteration
// bounds), the version moving only on a change, and the credentials surviving snapshot/restore.
import { describe, expect, it } from "vitest";
import { randomBytes } from "node:crypto";
import { encodeCommand, type Command, type ScramCredentialEntry } from "./command-codec.js";
import { type CommandResult, MetadataStateMachine } from "./metadata-state-machine.js";
import { scramCredentialsOf, scramEntries } from "./scram-users.js";

let index = 0;
const apply = (sm: MetadataStateMachine, c: Command): CommandResult =>
  sm.apply({ index: ++index, term: 1, data: encodeCommand(c) });

function entry(user: string, overrides: Partial<ScramCredentialEntry> = {}): ScramCredentialEntry {
  return {
    user,
    mechanism: "SCRAM-SHA-512",
    iterations: 4096,
    salt: randomBytes(32).toString("base64"),
    storedKey: randomBytes(64).toString("base64"),
    serverKey: randomBytes(64).toString("base64"),
    ...overrides,
  };
}

const errorsOf = (r: CommandResult): Array<string | undefined> =>
  r.type === "alterScram" ? r.outcomes.map((x) => x.error?.error) : ["not alterScram"];

describe("SCRAM users in the metadata state machine", () => {
  it("upserts, replaces and deletes credentials; the version moves only on a change", () => {
    const sm = new MetadataStateMachine();
    expect(
      errorsOf(
        apply(sm, {
          type: "alterScram",
          upsertions: [entry("alice"), entry("bob")],
          deletions: [],
        }),
      ),
    ).toEqual(["NONE", "NONE"]);
    const v1 = sm.version();
    expect(scramEntries(sm.scramCredentials()).map((e) => e.user)).toEqual(["alice", "bob"]);
    const replaced = entry("alice", { iterations: 8192 });
    apply(sm, { type: "alterScram", upsertions: [replaced], deletions: [] });
    expect(scramEntries(sm.scramCredentials())[0]).toEqual(replaced);
    expect(
      errorsOf(
        apply(sm, {
          type: "alterScram",
          upsertions: [],
          deletions: [{ user: "bob", mechanism: "SCRAM-SHA-512" }],
        }),
      ),
    ).toEqual(["NONE"]);
    const v2 = sm.version();
    expect(v2).toBeGreaterThan(v1);
    expect(
      errorsOf(
        apply(sm, {
          type: "alterScram",
          upsertions: [],
          deletions: [{ user: "bob", mechanism: "SCRAM-SHA-512" }],
        }),
      ),
    ).toEqual(["RESOURCE_NOT_FOUND"]);
    expect(sm.version()).toBe(v2);
    expect(
      scramCredentialsOf(sm.scramCredentials()).map((c) => [
        c.user,
        c.iterations,
        c.storedKey.length,
      ]),
    ).toEqual([["alice", 8192, 64]]);
  });

  it("refuses a duplicate user, an unknown mechanism, iterations out of Kafka's bounds and malformed keys", () => {
    const sm = new MetadataStateMachine();
    expect(
      errorsOf(
        apply(sm, {
          type: "alterScram",
          upsertions: [entry("a")],
          deletions: [{ user: "a", mechanism: "SCRAM-SHA-512" }],
        }),
      ),
    ).toEqual(["INVALID_REQUEST", "INVALID_REQUEST"]);
    expect(
      errorsOf(
        apply(sm, {
          type: "alterScram",
          upsertions: [entry("b", { mechanism: "PLAIN" })],
          deletions: [],
        }),
      ),
    ).toEqual(["UNSUPPORTED_SASL_MECHANISM"]);
    expect(
      errorsOf(
        apply(sm, {
          type: "alterScram",
          upsertions: [entry("c", { iterations: 1000 }), entry("d", { iterations: 20000 })],
          deletions: [],
        }),
      ),
    ).toEqual(["INVALID_REQUEST", "INVALID_REQUEST"]);
    expect(
      errorsOf(
        apply(sm, {
          type: "alterScram",
          upsertions: [entry("e", { storedKey: "not base64!" }), entry("")],
          deletions: [],
        }),
      ),
    ).toEqual(["INVALID_REQUEST", "INVALID_REQUEST"]);
    expect(sm.scramCredentials().size).toBe(0);
  });

  it("keeps the credentials across snapshot and restore (never a password: only salt and keys)", () => {
    const sm = new MetadataStateMachine();
    const alice = entry("alice");
    apply(sm, {
      type: "alterScram",
      upsertions: [
        alice,
        entry("bob", {
          mechanism: "SCRAM-SHA-256",
          storedKey: randomBytes(32).toString("base64"),
          serverKey: randomBytes(32).toString("base64"),
        }),
      ],
      deletions: [],
    });
    const snap = sm.snapshot();
    expect(
      Object.keys(JSON.parse(new TextDecoder().decode(snap)).scramCredentials[0]).sort(),
    ).toEqual(["iterations", "mechanism", "salt", "serverKey", "storedKey", "user"]);
    const restored = new MetadataStateMachine();
    restored.restore(snap, index);
    expect(scramEntries(restored.scramCredentials())).toEqual(scramEntries(sm.scramCredentials()));
    expect(new TextDecoder().decode(restored.snapshot())).toBe(new TextDecoder().decode(snap));
  });
});
