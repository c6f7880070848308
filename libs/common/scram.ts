// SCRAM credentials (RFC 5802, with SHA-512 as RFC 7677 does for SHA-256, and Kafka's
// SCRAM-SHA-512): from a password, a salt and an iteration count, the keys a server keeps.
// SaltedPassword = PBKDF2-HMAC(password, salt, i); ClientKey = HMAC(SaltedPassword, "Client Key");
// StoredKey = H(ClientKey); ServerKey = HMAC(SaltedPassword, "Server Key"). The server keeps
// salt, iterations, StoredKey and ServerKey only: never the password or the salted password.
import { createHash, createHmac, pbkdf2Sync, randomBytes } from "node:crypto";

export type ScramMechanism = "SCRAM-SHA-512" | "SCRAM-SHA-256";
/** Kafka's minimum (and its default) iteration count. */
export const SCRAM_ITERATIONS_MIN = 4096;
/** Kafka's maximum iteration count. */
export const SCRAM_ITERATIONS_MAX = 16384;
export const SCRAM_SALT_BYTES = 32;
/** Kafka's user names are SASL names; ours are bounded and printable. */
export const SCRAM_USER_LENGTH_MAX = 256;

export interface ScramCredential {
  readonly user: string;
  readonly mechanism: ScramMechanism;
  readonly salt: Buffer;
  readonly iterations: number;
  readonly storedKey: Buffer;
  readonly serverKey: Buffer;
}

export function hashOf(mechanism: ScramMechanism): "sha512" | "sha256" {
  return mechanism === "SCRAM-SHA-512" ? "sha512" : "sha256";
}

export function isScramMechanism(value: unknown): value is ScramMechanism {
  return value === "SCRAM-SHA-512" || value === "SCRAM-SHA-256";
}

export function hmac(hash: string, key: Buffer, data: Buffer | string): Buffer {
  return createHmac(hash, key).update(data).digest();
}

export function digest(hash: string, data: Buffer): Buffer {
  return createHash(hash).update(data).digest();
}

/** Hi() of RFC 5802: PBKDF2 with the mechanism's HMAC. What Kafka's AdminClient sends as salted_password. */
export function saltedPassword(
  mechanism: ScramMechanism,
  password: string,
  salt: Buffer,
  iterations: number,
): Buffer {
  const hash = hashOf(mechanism);
  return pbkdf2Sync(
    Buffer.from(password.normalize("NFKC"), "utf8"),
    salt,
    iterations,
    digest(hash, Buffer.alloc(0)).length,
    hash,
  );
}

/** The keys a server stores, from the salted password (the controller derives them from the client's upsert). */
export function keysOfSaltedPassword(
  mechanism: ScramMechanism,
  salted: Buffer,
): { storedKey: Buffer; serverKey: Buffer } {
  const hash = hashOf(mechanism);
  const clientKey = hmac(hash, salted, "Client Key");
  return { storedKey: digest(hash, clientKey), serverKey: hmac(hash, salted, "Server Key") };
}

export function randomSalt(): Buffer {
  return randomBytes(SCRAM_SALT_BYTES);
}

/** Checks a user name: 1..256 characters, no control characters. Undefined when fine. */
export function checkScramUser(user: unknown): string | undefined {
  if (typeof user !== "string" || user.length === 0 || user.length > SCRAM_USER_LENGTH_MAX)
    return `user name must be 1..${SCRAM_USER_LENGTH_MAX} characters`;
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(user)) return "user name must not contain control characters";
  return undefined;
}

export function checkScramIterations(iterations: unknown): string | undefined {
  if (
    typeof iterations !== "number" ||
    !Number.isInteger(iterations) ||
    iterations < SCRAM_ITERATIONS_MIN ||
    iterations > SCRAM_ITERATIONS_MAX
  ) {
    return `iterations must be an integer in ${SCRAM_ITERATIONS_MIN}..${SCRAM_ITERATIONS_MAX} (Kafka's bounds)`;
  }
  return undefined;
}

export function xor(a: Buffer, b: Buffer): Buffer {
  const out = Buffer.alloc(a.length);
  for (let i = 0; i < a.length; i++) out[i] = a[i]! ^ b[i]!;
  return out;
}
