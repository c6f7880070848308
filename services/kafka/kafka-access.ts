// What the principal of one Kafka request may do. With `--kafka-authorizer acl` every request is
// checked against the ACLs of the cluster metadata (libs/common/acl.ts), which reach this
// process with each metadata view, so a change applies to the next request (an open consumer
// is cut off at its next Fetch). Without an authorizer everything is allowed (the default: a
// local development cluster). A refusal is Kafka's *_AUTHORIZATION_FAILED for the item or the
// request, and nothing of the refused item is done.
import {
  clusterAllowed,
  refusal,
  requestAccess,
  requireAllowed,
  type RequestAccess,
} from "../../libs/common/acl-access.js";

// The shared part (also the gRPC authorizer's) lives in libs/common/acl-access.ts.
export { clusterAllowed, refusal, requestAccess, requireAllowed, type RequestAccess };

/** A connection that did not authenticate (Kafka's name for it). */
export const ANONYMOUS_PRINCIPAL = "User:ANONYMOUS";

/**
 * Calls `call` with the allowed items only and answers every item in order: the refused ones
 * get `refused(item)` (nothing is done for them; no call at all when none is allowed).
 */
export async function answerAllowed<P, A>(
  items: readonly P[],
  allowed: (p: P) => boolean,
  call: (ps: P[]) => Promise<A[]>,
  refused: (p: P) => A,
): Promise<A[]> {
  const ok = items.map(allowed);
  const asked = items.filter((_, i) => ok[i]);
  const answers = asked.length === 0 ? [] : await call(asked);
  let next = 0;
  return items.map((p, i) => (ok[i] ? answers[next++]! : refused(p)));
}
