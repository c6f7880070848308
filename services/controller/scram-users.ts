// SCRAM users in the controller's replicated metadata: upserts and deletions of credentials
// (salt, iterations, StoredKey, ServerKey, base64 in the log and the snapshot), checked the
// same way on every replica. Kafka's AlterUserScramCredentials rules: one user may not appear
// twice in a request, deleting a credential that does not exist is RESOURCE_NOT_FOUND, and an
// unknown mechanism is UNSUPPORTED_SASL_MECHANISM. Each user's result stands alone.
import {
  checkScramIterations,
  checkScramUser,
  isScramMechanism,
  type ScramCredential,
} from "../../libs/common/scram.js";
import type { Command, ScramCredentialEntry } from "./command-codec.js";
import { NO_ERROR, type ItemError } from "./item-error.js";

export const SCRAM_CREDENTIALS_MAX = 10_000;
export const SCRAM_CHANGES_PER_REQUEST_MAX = 1_000;
const KEY_BYTES_MAX = 64;
const SALT_BYTES_MIN = 8;
const SALT_BYTES_MAX = 128;

export type ScramCredentialStore = Map<string, ScramCredentialEntry>;

export interface ScramResult {
  readonly user: string;
  readonly error: ItemError;
}

const keyOf = (user: string, mechanism: string): string => `${user}\u0000${mechanism}`;

export function newScramStore(): ScramCredentialStore {
  return new Map();
}

function checkEntry(e: ScramCredentialEntry): ItemError | undefined {
  const user = checkScramUser(e?.user);
  if (user) return { error: "INVALID_REQUEST", message: user };
  if (!isScramMechanism(e.mechanism))
    return {
      error: "UNSUPPORTED_SASL_MECHANISM",
      message: `mechanism ${String(e.mechanism)} is not supported: SCRAM-SHA-512 or SCRAM-SHA-256`,
    };
  const iterations = checkScramIterations(e.iterations);
  if (iterations) return { error: "INVALID_REQUEST", message: iterations };
  const salt = base64Length(e.salt);
  if (salt < SALT_BYTES_MIN || salt > SALT_BYTES_MAX)
    return {
      error: "INVALID_REQUEST",
      message: `salt must be ${SALT_BYTES_MIN}..${SALT_BYTES_MAX} bytes`,
    };
  const stored = base64Length(e.storedKey);
  const server = base64Length(e.serverKey);
  if (stored <= 0 || stored > KEY_BYTES_MAX || server !== stored)
    return { error: "INVALID_REQUEST", message: "stored and server keys are malformed" };
  return undefined;
}

function base64Length(s: unknown): number {
  if (typeof s !== "string" || !/^[A-Za-z0-9+/]*={0,2}$/.test(s)) return -1;
  return Buffer.from(s, "base64").length;
}

/** Applies one alterScram command; `changed` when the store differs afterwards. */
export function alterScram(
  store: ScramCredentialStore,
  c: Extract<Command, { type: "alterScram" }>,
): { results: ScramResult[]; changed: boolean } {
  const upsertions = Array.isArray(c.upsertions) ? c.upsertions : [];
  const deletions = Array.isArray(c.deletions) ? c.deletions : [];
  if (upsertions.length + deletions.length > SCRAM_CHANGES_PER_REQUEST_MAX) {
    return {
      results: [
        {
          user: "",
          error: {
            error: "INVALID_REQUEST",
            message: `a request may change at most ${SCRAM_CHANGES_PER_REQUEST_MAX} credentials`,
          },
        },
      ],
      changed: false,
    };
  }
  const seen = new Map<string, number>();
  for (const x of [...upsertions, ...deletions])
    seen.set(String(x?.user), (seen.get(String(x?.user)) ?? 0) + 1);
  const results: ScramResult[] = [];
  let changed = false;
  for (const d of deletions) {
    const user = String(d?.user ?? "");
    if ((seen.get(user) ?? 0) > 1) {
      results.push({
        user,
        error: {
          error: "INVALID_REQUEST",
          message: `user "${user}" appears more than once in the request`,
        },
      });
      continue;
    }
    if (!isScramMechanism(d.mechanism)) {
      results.push({
        user,
        error: {
          error: "UNSUPPORTED_SASL_MECHANISM",
          message: `mechanism ${String(d.mechanism)} is not supported`,
        },
      });
      continue;
    }
    if (!store.delete(keyOf(user, d.mechanism))) {
      results.push({
        user,
        error: {
          error: "RESOURCE_NOT_FOUND",
          message: `user "${user}" has no ${d.mechanism} credential`,
        },
      });
      continue;
    }
    changed = true;
    results.push({ user, error: NO_ERROR });
  }
  for (const u of upsertions) {
    const user = String(u?.user ?? "");
    const bad =
      (seen.get(user) ?? 0) > 1
        ? {
            error: "INVALID_REQUEST" as const,
            message: `user "${user}" appears more than once in the request`,
          }
        : checkEntry(u);
    if (bad) {
      results.push({ user, error: bad });
      continue;
    }
    const key = keyOf(user, u.mechanism);
    if (!store.has(key) && store.size >= SCRAM_CREDENTIALS_MAX) {
      results.push({
        user,
        error: {
          error: "INVALID_REQUEST",
          message: `the cluster already has ${SCRAM_CREDENTIALS_MAX} SCRAM credentials`,
        },
      });
      continue;
    }
    store.set(key, {
      user,
      mechanism: u.mechanism,
      iterations: u.iterations,
      salt: u.salt,
      storedKey: u.storedKey,
      serverKey: u.serverKey,
    });
    changed = true;
    results.push({ user, error: NO_ERROR });
  }
  return { results, changed };
}

/** Sorted by user then mechanism (deterministic snapshots and views). */
export function scramEntries(store: ScramCredentialStore): ScramCredentialEntry[] {
  return [...store.values()].sort((a, b) =>
    a.user === b.user ? (a.mechanism < b.mechanism ? -1 : 1) : a.user < b.user ? -1 : 1,
  );
}

export function scramStoreSnapshot(store: ScramCredentialStore): ScramCredentialEntry[] {
  return scramEntries(store);
}

export function scramStoreFromSnapshot(value: unknown): ScramCredentialStore {
  const store = newScramStore();
  if (!Array.isArray(value)) return store;
  for (const e of value as ScramCredentialEntry[]) store.set(keyOf(e.user, e.mechanism), e);
  return store;
}

/** The binary form the Kafka listeners use. */
export function scramCredentialsOf(store: ScramCredentialStore): ScramCredential[] {
  return scramEntries(store).flatMap((e) =>
    isScramMechanism(e.mechanism)
      ? [
          {
            user: e.user,
            mechanism: e.mechanism,
            iterations: e.iterations,
            salt: Buffer.from(e.salt, "base64"),
            storedKey: Buffer.from(e.storedKey, "base64"),
            serverKey: Buffer.from(e.serverKey, "base64"),
          },
        ]
      : [],
  );
}
