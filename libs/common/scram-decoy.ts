// What an unknown user is told at SCRAM's server-first: a salt and an iteration count that look
// like a real user's, so the answer does not reveal which user names exist. Both are derived
// (HMAC) from the user name and a secret every listener of the cluster shares, so they are
// the same on every broker and coordinator and on every attempt, as a real user's are; the
// iteration count is one of those real users of the mechanism have (picked per user name), so
// a cluster whose users all have 8192 iterations answers 8192 for unknown names too.
import { createHash, randomBytes } from "node:crypto";
import { hmac, SCRAM_ITERATIONS_MIN, type ScramCredential, type ScramMechanism } from "./scram.js";

export interface ScramDecoy {
  readonly salt: Buffer;
  readonly iterations: number;
}

export type DecoyLookup = (user: string, mechanism: ScramMechanism) => ScramDecoy;

/** Used while the cluster has no credentials at all (then there is no user to hide). */
const PROCESS_SECRET = randomBytes(32);
const secrets = new WeakMap<readonly ScramCredential[], Buffer>();

/**
 * The cluster's decoy secret: a hash of every credential's ServerKey, which only the cluster's
 * processes hold (WatchMetadata of tern processes), and which is the same on every listener.
 */
function clusterSecret(credentials: readonly ScramCredential[]): Buffer {
  if (credentials.length === 0) return PROCESS_SECRET;
  let secret = secrets.get(credentials);
  if (!secret) {
    const h = createHash("sha256").update("tern scram decoy secret");
    const keys = credentials.map((c) => c.serverKey.toString("base64")).sort();
    for (const k of keys) h.update(k).update("\u0000");
    secret = h.digest();
    secrets.set(credentials, secret);
  }
  return secret;
}

export function scramDecoy(
  credentials: readonly ScramCredential[],
  user: string,
  mechanism: ScramMechanism,
): ScramDecoy {
  const secret = clusterSecret(credentials);
  const salt = hmac("sha256", secret, `salt\u0000${mechanism}\u0000${user}`);
  const counts = credentials
    .filter((c) => c.mechanism === mechanism)
    .map((c) => c.iterations)
    .sort((a, b) => a - b);
  if (counts.length === 0) return { salt, iterations: SCRAM_ITERATIONS_MIN };
  const pick = hmac("sha256", secret, `iterations\u0000${mechanism}\u0000${user}`).readUInt32BE(0);
  return { salt, iterations: counts[pick % counts.length]! };
}
