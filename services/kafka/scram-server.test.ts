// The SCRAM server against RFC 7677's SCRAM-SHA-256 example (exact bytes) and against a
// SCRAM-SHA-512 client written here with node:crypto only (not our helpers): a right password
// authenticates and the server signature checks out; a wrong password, an unknown user, a
// tampered nonce or channel-binding data, and channel binding all fail.
import { createHash, createHmac, pbkdf2Sync, randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  keysOfSaltedPassword,
  saltedPassword,
  type ScramCredential,
  type ScramMechanism,
} from "../../libs/common/scram.js";
import { decodeSaslName, ScramServerExchange } from "./scram-server.js";

function credential(
  user: string,
  mechanism: ScramMechanism,
  password: string,
  salt: Buffer,
  iterations: number,
): ScramCredential {
  return {
    user,
    mechanism,
    salt,
    iterations,
    ...keysOfSaltedPassword(mechanism, saltedPassword(mechanism, password, salt, iterations)),
  };
}

/** A SCRAM-SHA-512 client from RFC 5802 with node:crypto only. */
function clientFinal(
  password: string,
  clientFirstBare: string,
  serverFirst: string,
  channel = "biws",
): { message: string; serverSignature: string } {
  const attrs = Object.fromEntries(serverFirst.split(",").map((a) => [a[0], a.slice(2)]));
  const salted = pbkdf2Sync(
    password,
    Buffer.from(attrs.s!, "base64"),
    Number(attrs.i),
    64,
    "sha512",
  );
  const clientKey = createHmac("sha512", salted).update("Client Key").digest();
  const storedKey = createHash("sha512").update(clientKey).digest();
  const withoutProof = `c=${channel},r=${attrs.r}`;
  const authMessage = `${clientFirstBare},${serverFirst},${withoutProof}`;
  const signature = createHmac("sha512", storedKey).update(authMessage).digest();
  const proof = Buffer.from(clientKey.map((b, i) => b ^ signature[i]!));
  const serverKey = createHmac("sha512", salted).update("Server Key").digest();
  return {
    message: `${withoutProof},p=${proof.toString("base64")}`,
    serverSignature: createHmac("sha512", serverKey).update(authMessage).digest("base64"),
  };
}

describe("SCRAM server", () => {
  it("reproduces RFC 7677's SCRAM-SHA-256 example byte for byte", () => {
    const salt = Buffer.from("W22ZaJ0SNY7soEsUEjb6gQ==", "base64");
    const stored = credential("user", "SCRAM-SHA-256", "pencil", salt, 4096);
    const x = new ScramServerExchange(
      "SCRAM-SHA-256",
      (u) => (u === "user" ? stored : undefined),
      () => "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
    );
    const first = x.step(Buffer.from("n,,n=user,r=rOprNGfwEbeRWgbNEkqO"));
    expect(first.ok && first.response.toString()).toBe(
      "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
    );
    const final = x.step(
      Buffer.from(
        "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
      ),
    );
    expect(final.ok && final.done && final.user).toBe("user");
    expect(final.ok && final.response.toString()).toBe(
      "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
    );
  });

  const salt = randomBytes(32);
  const alice = credential("alice", "SCRAM-SHA-512", "s3cret", salt, 4096);
  const lookup = (u: string, m: ScramMechanism): ScramCredential | undefined =>
    u === "alice" && m === "SCRAM-SHA-512" ? alice : undefined;

  function run(
    user: string,
    password: string,
    tamper: (final: string) => string = (f) => f,
  ): { ok: boolean; response?: string; expectedSignature: string } {
    const x = new ScramServerExchange("SCRAM-SHA-512", lookup);
    const bare = `n=${user},r=${randomBytes(18).toString("base64")}`;
    const first = x.step(Buffer.from(`n,,${bare}`));
    if (!first.ok) throw new Error(first.message);
    const serverFirst = first.response.toString();
    const { message, serverSignature } = clientFinal(password, bare, serverFirst);
    const final = x.step(Buffer.from(tamper(message)));
    return final.ok
      ? { ok: true, response: final.response.toString(), expectedSignature: serverSignature }
      : { ok: false, expectedSignature: serverSignature };
  }

  it("authenticates SCRAM-SHA-512 with the right password and proves itself with the server signature", () => {
    const r = run("alice", "s3cret");
    expect(r.ok).toBe(true);
    expect(r.response).toBe(`v=${r.expectedSignature}`);
  });

  it("accepts librdkafka's client-final nonce (its client nonce, then the combined nonce), as Kafka does", () => {
    expect(
      run("alice", "s3cret", (f) =>
        f.replace(/,r=([^,]*)/, (_m, n: string) => `,r=${n.slice(0, 24)}${n}`),
      ).ok,
    ).toBe(false); // proof over the original text
    const x = new ScramServerExchange("SCRAM-SHA-512", lookup);
    const bare = "n=alice,r=cnonce-librdkafka";
    const first = x.step(Buffer.from(`n,,${bare}`));
    const serverFirst = first.ok ? first.response.toString() : "";
    const combined = serverFirst.split(",")[0]!.slice(2);
    // What librdkafka sends: r=<cnonce><combined nonce>, proof computed over exactly that text.
    const salted = pbkdf2Sync(
      "s3cret",
      Buffer.from(serverFirst.split(",")[1]!.slice(2), "base64"),
      4096,
      64,
      "sha512",
    );
    const clientKey = createHmac("sha512", salted).update("Client Key").digest();
    const withoutProof = `c=biws,r=cnonce-librdkafka${combined}`;
    const sig = createHmac("sha512", createHash("sha512").update(clientKey).digest())
      .update(`${bare},${serverFirst},${withoutProof}`)
      .digest();
    const final = x.step(
      Buffer.from(
        `${withoutProof},p=${Buffer.from(clientKey.map((b, i) => b ^ sig[i]!)).toString("base64")}`,
      ),
    );
    expect(final.ok).toBe(true);
  });

  it("fails a wrong password, an unknown user, a changed nonce or channel-binding data", () => {
    expect(run("alice", "wrong").ok).toBe(false);
    expect(run("mallory", "s3cret").ok).toBe(false);
    expect(run("alice", "s3cret", (f) => f.replace(",r=", ",r=x")).ok).toBe(false);
    expect(run("alice", "s3cret", (f) => f.replace("c=biws", "c=eSws")).ok).toBe(false);
  });

  it("gives an unknown user a stable decoy salt (no user enumeration) and refuses channel binding", () => {
    const saltOf = (user: string): string => {
      const x = new ScramServerExchange("SCRAM-SHA-512", lookup);
      const r = x.step(Buffer.from(`n,,n=${user},r=abc`));
      return r.ok ? r.response.toString().split(",")[1]! : "";
    };
    expect(saltOf("nobody")).toBe(saltOf("nobody"));
    expect(saltOf("nobody")).not.toBe(saltOf("someone"));
    const x = new ScramServerExchange("SCRAM-SHA-512", lookup);
    expect(x.step(Buffer.from("p=tls-unique,,n=alice,r=abc")).ok).toBe(false);
    expect(x.step(Buffer.from("c=biws,r=abc,p=AAAA")).ok).toBe(false); // over after a failure
  });

  it("decodes SASL names and refuses malformed ones", () => {
    expect(decodeSaslName("a=2Cb=3Dc")).toBe("a,b=c");
    expect(decodeSaslName("a=b")).toBeUndefined();
  });
});
