// What one request's principal may do, and how a refusal is worded: shared by both listeners
// (the Kafka listener, services/kafka/kafka-access.ts, and the gRPC authorizer,
// libs/server/auth/grpc-authorizer.ts), so both answer the same *_AUTHORIZATION_FAILED code and
// message for the same ACLs. The decision itself is libs/common/acl.ts's.
import {
  CLUSTER_RESOURCE_NAME,
  type Authorizer,
  type Operation,
  type ResourceType,
} from "./acl.js";
import { TernError, type ErrorName } from "./errors.js";

export interface RequestAccess {
  readonly principal: string;
  allowed(op: Operation, resourceType: ResourceType, name: string): boolean;
}

/** host: the client's IP address (clientHostOf), which bindings with a host other than "*" must name. */
export function requestAccess(
  authorizer: Authorizer,
  principal: string,
  host: string,
): RequestAccess {
  return {
    principal,
    allowed: (op, type, name) => authorizer.allowed(principal, op, type, name, host),
  };
}

/** The error each resource type's refusal answers (Kafka's codes 29, 30, 31, 53). */
export const REFUSAL_ERROR: Readonly<Record<ResourceType, ErrorName>> = {
  topic: "TOPIC_AUTHORIZATION_FAILED",
  group: "GROUP_AUTHORIZATION_FAILED",
  cluster: "CLUSTER_AUTHORIZATION_FAILED",
  "transactional-id": "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
};

/** The refusal as a TernError (for a request that fails as a whole), or undefined when allowed. */
export function refusal(
  access: RequestAccess | undefined,
  op: Operation,
  type: ResourceType,
  name: string,
): TernError | undefined {
  if (access === undefined || access.allowed(op, type, name)) return undefined;
  return new TernError(
    REFUSAL_ERROR[type],
    `${access.principal} may not ${op} ${type === "cluster" ? "the cluster" : `${type} "${name}"`}`,
  );
}

/** Throws the refusal (a whole-request check). */
export function requireAllowed(
  access: RequestAccess | undefined,
  op: Operation,
  type: ResourceType,
  name: string,
): void {
  const r = refusal(access, op, type, name);
  if (r) throw r;
}

/** Cluster-level check with the cluster resource's one name. */
export const clusterAllowed = (access: RequestAccess | undefined, op: Operation): boolean =>
  access === undefined || access.allowed(op, "cluster", CLUSTER_RESOURCE_NAME);

/**
 * Kafka 2.8+'s rule for an idempotent producer without a transactional id: IDEMPOTENT_WRITE on
 * the cluster, or WRITE on some existing topic.
 */
export function mayWriteIdempotently(
  access: RequestAccess | undefined,
  topicNames: Iterable<string>,
): boolean {
  if (access === undefined || clusterAllowed(access, "idempotent-write")) return true;
  for (const name of topicNames) if (access.allowed("write", "topic", name)) return true;
  return false;
}
