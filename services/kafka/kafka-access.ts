// What the principal of one Kafka request may do. With `--kafka-authorizer acl` every request is
// checked against the ACLs of the cluster metadata (libs/common/acl.ts), which reach this
// process with each metadata view, so a change applies to the next request (an open consumer
// is cut off at its next Fetch). Without an authorizer everything is allowed (the default: a
// local development cluster). A refusal is Kafka's *_AUTHORIZATION_FAILED for the item or the
// request, and nothing of the refused item is done.
import { CLUSTER_RESOURCE_NAME, type Authorizer, type Operation, type ResourceType } from "../../libs/common/acl.js";
import { TernError, type ErrorName } from "../../libs/common/errors.js";

/** A connection that did not authenticate (Kafka's name for it). */
export const ANONYMOUS_PRINCIPAL = "User:ANONYMOUS";

export interface RequestAccess {
  readonly principal: string;
  allowed(op: Operation, resourceType: ResourceType, name: string): boolean;
}

export function requestAccess(authorizer: Authorizer, principal: string): RequestAccess {
  return { principal, allowed: (op, type, name) => authorizer.allowed(principal, op, type, name) };
}

const REFUSAL: Readonly<Record<ResourceType, ErrorName>> = {
  topic: "TOPIC_AUTHORIZATION_FAILED",
  group: "GROUP_AUTHORIZATION_FAILED",
  cluster: "CLUSTER_AUTHORIZATION_FAILED",
  "transactional-id": "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
};

/** The refusal as a TernError (for a request that fails as a whole), or undefined when allowed. */
export function refusal(access: RequestAccess | undefined, op: Operation, type: ResourceType, name: string): TernError | undefined {
  if (access === undefined || access.allowed(op, type, name)) return undefined;
  return new TernError(REFUSAL[type], `${access.principal} may not ${op} ${type === "cluster" ? "the cluster" : `${type} "${name}"`}`);
}

/** Throws the refusal (a whole-request check). */
export function requireAllowed(access: RequestAccess | undefined, op: Operation, type: ResourceType, name: string): void {
  const r = refusal(access, op, type, name);
  if (r) throw r;
}

/** Cluster-level check with the cluster resource's one name. */
export const clusterAllowed = (access: RequestAccess | undefined, op: Operation): boolean => access === undefined || access.allowed(op, "cluster", CLUSTER_RESOURCE_NAME);

/**
 * Calls `call` with the allowed items only and answers every item in order: the refused ones
 * get `refused(item)` (nothing is done for them; no call at all when none is allowed).
 */
export async function answerAllowed<P, A>(items: readonly P[], allowed: (p: P) => boolean, call: (ps: P[]) => Promise<A[]>, refused: (p: P) => A): Promise<A[]> {
  const ok = items.map(allowed);
  const asked = items.filter((_, i) => ok[i]);
  const answers = asked.length === 0 ? [] : await call(asked);
  let next = 0;
  return items.map((p, i) => (ok[i] ? answers[next++]! : refused(p)));
}
