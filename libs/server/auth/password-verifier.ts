// Username/password on the gRPC API. The client sends `authorization: Basic
// base64(user:password)` (RFC 7617) in the call metadata, over TLS only (grpc-js refuses call
// credentials on an insecure channel; a plaintext server has no authorizer). The server checks
// it against the SCRAM credentials of the cluster metadata as a SCRAM server would check a
// proof: SaltedPassword = PBKDF2(password, stored salt, stored iterations), then
// H(HMAC(SaltedPassword, "Client Key")) must equal the StoredKey (constant-time compare).
// PBKDF2 costs milliseconds by design, so successful verifications are remembered in a bounded
// LRU keyed by a hash of (user, password, the stored credential): a password change or a
// deleted user misses the cache. Failures are never cached, and verifications in flight are
// bounded so a flood of wrong passwords cannot queue unbounded work. PBKDF2 runs on a worker
// thread of its own (pbkdf2-worker.ts), one at a time: a flood cannot occupy libuv's pool,
// which the process's disk I/O needs. An unknown user costs what a real one does (the
// iteration count real users have, scram-decoy.ts): the time taken does not tell which names
// exist.
import { createHash, timingSafeEqual } from "node:crypto";
import { scramDecoy } from "../../common/scram-decoy.js";
import {
  digest,
  hashOf,
  keysOfSaltedPassword,
  type ScramCredential,
  type ScramMechanism,
} from "../../common/scram.js";
import { Pbkdf2Worker } from "./pbkdf2-worker.js";
import { AUTHORIZATION_HEADER, basicAuthorizationValue } from "../../grpc/call-headers.js";

export { AUTHORIZATION_HEADER, basicAuthorizationValue };

/** Remembered successful verifications (user, password, credential). */
export const VERIFIED_CACHE_ENTRIES_MAX = 1_024;
/** Verifications waiting for or running PBKDF2; more are answered "busy" (the client retries). */
export const VERIFICATIONS_IN_FLIGHT_MAX = 16;
/** Bound on the header (a user name is at most 256 characters; passwords are not long). */
const AUTHORIZATION_VALUE_LENGTH_MAX = 4_096;

export interface BasicCredentials {
  readonly user: string;
  readonly password: string;
}

/** The user and password of a Basic authorization value, or why it is not one. */
export function parseBasicAuthorization(value: string): BasicCredentials | string {
  if (value.length > AUTHORIZATION_VALUE_LENGTH_MAX) return "the authorization header is too long";
  const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(value);
  if (!m) return 'the authorization header must be "Basic <base64 of user:password>"';
  const decoded = Buffer.from(m[1]!, "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon <= 0) return "the authorization header must carry user:password";
  return { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

export type Verification = "ok" | "bad" | "busy";

export class PasswordVerifier {
  private readonly verified = new Map<string, true>();
  private inFlight = 0;
  private readonly pbkdf2 = new Pbkdf2Worker();

  constructor(private readonly credentials: () => readonly ScramCredential[]) {}

  /** Stops the PBKDF2 worker (it does not keep the process alive while idle either way). */
  close(): Promise<void> {
    return this.pbkdf2.close();
  }

  async verify(user: string, password: string): Promise<Verification> {
    const credential = this.credentialOf(user);
    const key = credential === undefined ? undefined : cacheKey(credential, password);
    if (key !== undefined && this.verified.has(key)) {
      this.verified.delete(key);
      this.verified.set(key, true); // most recently used last
      return "ok";
    }
    if (this.inFlight >= VERIFICATIONS_IN_FLIGHT_MAX) return "busy";
    this.inFlight++;
    try {
      if (credential === undefined) {
        // Unknown users cost what known ones do (no timing oracle for which names exist).
        const decoy = scramDecoy(this.credentials(), user, "SCRAM-SHA-512");
        await this.salted("SCRAM-SHA-512", password, decoy.salt, decoy.iterations);
        return "bad";
      }
      const salted = await this.salted(
        credential.mechanism,
        password,
        credential.salt,
        credential.iterations,
      );
      const { storedKey } = keysOfSaltedPassword(credential.mechanism, salted);
      if (
        storedKey.length !== credential.storedKey.length ||
        !timingSafeEqual(storedKey, credential.storedKey)
      )
        return "bad";
      this.verified.set(key!, true);
      if (this.verified.size > VERIFIED_CACHE_ENTRIES_MAX)
        this.verified.delete(this.verified.keys().next().value!);
      return "ok";
    } finally {
      this.inFlight--;
    }
  }

  /** SCRAM's SaltedPassword (RFC 5802: Hi() over the NFKC-normalized password), on the worker. */
  private salted(
    mechanism: ScramMechanism,
    password: string,
    salt: Buffer,
    iterations: number,
  ): Promise<Buffer> {
    const hash = hashOf(mechanism);
    return this.pbkdf2.derive(
      Buffer.from(password.normalize("NFKC"), "utf8"),
      salt,
      iterations,
      digest(hash, Buffer.alloc(0)).length,
      hash,
    );
  }

  /** The user's credential, SCRAM-SHA-512 preferred (a user may have both mechanisms). */
  private credentialOf(user: string): ScramCredential | undefined {
    let found: ScramCredential | undefined;
    for (const c of this.credentials()) {
      if (c.user !== user) continue;
      if (c.mechanism === "SCRAM-SHA-512") return c;
      found = c;
    }
    return found;
  }
}

/** A digest, so the cache never holds a password. The stored key and salt make a changed credential miss. */
function cacheKey(c: ScramCredential, password: string): string {
  return createHash("sha256")
    .update(`${c.mechanism}\u0000${c.user}\u0000${c.iterations}\u0000`)
    .update(c.salt)
    .update(c.storedKey)
    .update("\u0000")
    .update(password, "utf8")
    .digest("base64");
}
