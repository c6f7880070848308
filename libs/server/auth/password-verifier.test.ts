// Username/password verification against stored SCRAM credentials: the Basic header, the
// StoredKey check, the success cache and that a changed credential misses it; checks do not
// use libuv's thread pool (the process's disk I/O).
import { pbkdf2 } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  keysOfSaltedPassword,
  randomSalt,
  saltedPassword,
  type ScramCredential,
  type ScramMechanism,
} from "../../common/scram.js";
import {
  basicAuthorizationValue,
  parseBasicAuthorization,
  PasswordVerifier,
} from "./password-verifier.js";

function credential(
  user: string,
  password: string,
  mechanism: ScramMechanism = "SCRAM-SHA-512",
  iterations = 4096,
): ScramCredential {
  const salt = randomSalt();
  const keys = keysOfSaltedPassword(
    mechanism,
    saltedPassword(mechanism, password, salt, iterations),
  );
  return { user, mechanism, salt, iterations, ...keys };
}

describe("Basic authorization", () => {
  it("round-trips user:password (a colon may be in the password, not in the user)", () => {
    expect(parseBasicAuthorization(basicAuthorizationValue("alice", "s3:cret"))).toEqual({
      user: "alice",
      password: "s3:cret",
    });
    expect(typeof parseBasicAuthorization("Bearer x")).toBe("string");
    expect(
      typeof parseBasicAuthorization(`Basic ${Buffer.from("nocolon").toString("base64")}`),
    ).toBe("string");
  });
});

describe("PasswordVerifier", () => {
  it("accepts the right password, refuses a wrong one or an unknown user, and caches successes only", async () => {
    let creds = [credential("alice", "s3cret"), credential("bob", "pw", "SCRAM-SHA-256")];
    const v = new PasswordVerifier(() => creds);
    expect(await v.verify("alice", "s3cret")).toBe("ok");
    expect(await v.verify("alice", "wrong")).toBe("bad");
    expect(await v.verify("bob", "pw")).toBe("ok");
    expect(await v.verify("carol", "x")).toBe("bad");
    // A cached success is answered without PBKDF2...
    const started = process.hrtime.bigint();
    expect(await v.verify("alice", "s3cret")).toBe("ok");
    expect(Number(process.hrtime.bigint() - started) / 1e6).toBeLessThan(5);
    // ...and a new password (new salt and keys) misses the cache: the old one no longer works.
    creds = [credential("alice", "n3w"), creds[1]!];
    expect(await v.verify("alice", "s3cret")).toBe("bad");
    expect(await v.verify("alice", "n3w")).toBe("ok");
    creds = [];
    expect(await v.verify("alice", "n3w")).toBe("bad");
  });

  it("password checks do not run on libuv's thread pool, so a flood cannot take it from disk I/O", async () => {
    // Every thread of libuv's pool (4 unless UV_THREADPOOL_SIZE says otherwise) is busy with
    // a long derivation. Were the check's PBKDF2 on that pool, it would wait behind them.
    const poolThreads = Number(process.env.UV_THREADPOOL_SIZE ?? 4);
    const v = new PasswordVerifier(() => [credential("alice", "s3cret")]);
    try {
      let poolBusy = true;
      const blockers = Array.from(
        { length: poolThreads },
        () =>
          new Promise<void>((resolve) =>
            pbkdf2("x", "salt", 600_000, 64, "sha512", () => resolve()),
          ),
      );
      // A check queued on the pool could only start once a blocker had finished.
      void Promise.race(blockers).then(() => (poolBusy = false));
      expect(await v.verify("alice", "wrong")).toBe("bad");
      expect(await v.verify("alice", "s3cret")).toBe("ok");
      expect(poolBusy, "the checks finished while every pool thread was still busy").toBe(true);
      await Promise.all(blockers);
    } finally {
      await v.close();
    }
  });
});
