// Username/password verification against stored SCRAM credentials: the Basic header, the
// StoredKey check, the success cache and that a changed credential misses it.
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
): ScramCredential {
  const salt = randomSalt();
  const keys = keysOfSaltedPassword(mechanism, saltedPassword(mechanism, password, salt, 4096));
  return { user, mechanism, salt, iterations: 4096, ...keys };
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
});
