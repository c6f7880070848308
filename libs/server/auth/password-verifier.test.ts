// Username/password verification against stored SCRAM credentials: the Basic header, the
// StoredKey check, the success cache and that a changed credential misses it; a flood of
// checks leaves libuv's thread pool (the process's disk I/O) free.
import { stat } from "node:fs/promises";
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

  it("a flood of wrong passwords leaves libuv's thread pool to disk I/O", async () => {
    // libuv's pool has 4 threads (UV_THREADPOOL_SIZE is not set in tests). Were PBKDF2 on it,
    // a file operation issued behind 16 checks would wait for 12 of them to finish first.
    const v = new PasswordVerifier(() => [credential("alice", "s3cret", "SCRAM-SHA-512", 16_384)]);
    try {
      let finished = 0;
      const checks = Array.from({ length: 16 }, (_, i) =>
        v.verify("alice", `wrong-${i}`).then((r) => {
          finished++;
          return r;
        }),
      );
      await stat(import.meta.dirname);
      const finishedWhenIoDone = finished;
      expect(await Promise.all(checks)).toEqual(Array(16).fill("bad"));
      expect(finishedWhenIoDone).toBeLessThan(4);
    } finally {
      await v.close();
    }
  });
});
