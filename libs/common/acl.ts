// Access control lists in Kafka's model (KIP-11, KIP-290): a binding says that a principal
// ("User:alice", or "User:*" for every user) may (ALLOW) or may not (DENY) perform an operation
// on a resource (topic, group, transactional id or the cluster) named literally ("*" for every
// one) or by prefix. The numeric codes are Kafka's, so CreateAcls/DescribeAcls/DeleteAcls
// carry them as they are. The decision (authorize) follows Kafka's AclAuthorizer: a matching
// DENY wins; otherwise a matching ALLOW of the operation or of one that implies it; otherwise
// refused (no ACL on a resource refuses too, as Kafka's allow.everyone.if.no.acl.found=false).
// Super-users are never refused.

export const RESOURCE_TYPE = {
  ANY: 1,
  TOPIC: 2,
  GROUP: 3,
  CLUSTER: 4,
  TRANSACTIONAL_ID: 5,
} as const;
export const PATTERN_TYPE = { ANY: 1, MATCH: 2, LITERAL: 3, PREFIXED: 4 } as const;
export const OPERATION = {
  ANY: 1,
  ALL: 2,
  READ: 3,
  WRITE: 4,
  CREATE: 5,
  DELETE: 6,
  ALTER: 7,
  DESCRIBE: 8,
  CLUSTER_ACTION: 9,
  DESCRIBE_CONFIGS: 10,
  ALTER_CONFIGS: 11,
  IDEMPOTENT_WRITE: 12,
} as const;
export const PERMISSION = { ANY: 1, DENY: 2, ALLOW: 3 } as const;

export type ResourceType = "topic" | "group" | "cluster" | "transactional-id";
export type PatternType = "literal" | "prefixed";
export type Operation =
  | "all"
  | "read"
  | "write"
  | "create"
  | "delete"
  | "alter"
  | "describe"
  | "cluster-action"
  | "describe-configs"
  | "alter-configs"
  | "idempotent-write";
export type Permission = "allow" | "deny";

export interface AclBinding {
  readonly principal: string;
  /** Kafka's host field: "*" for every client, else the one client IP address the binding applies to. */
  readonly host: string;
  readonly resourceType: ResourceType;
  readonly resourceName: string;
  readonly patternType: PatternType;
  readonly operation: Operation;
  readonly permission: Permission;
}

/** A filter (DescribeAcls, DeleteAcls): undefined fields match anything. */
export interface AclFilter {
  readonly principal?: string | undefined;
  readonly host?: string | undefined;
  readonly resourceType?: ResourceType | undefined;
  readonly resourceName?: string | undefined;
  /** "match": the bindings that would apply to resourceName (literal, "*" and prefixes). */
  readonly patternType?: PatternType | "match" | undefined;
  readonly operation?: Operation | undefined;
  readonly permission?: Permission | undefined;
}

/** The cluster resource's one name. */
export const CLUSTER_RESOURCE_NAME = "kafka-cluster";
export const WILDCARD = "*";
export const ACLS_MAX = 10_000;
export const ACL_NAME_BYTES_MAX = 1_024;

const RESOURCE_BY_CODE = new Map<number, ResourceType>([
  [2, "topic"],
  [3, "group"],
  [4, "cluster"],
  [5, "transactional-id"],
]);
const PATTERN_BY_CODE = new Map<number, PatternType>([
  [3, "literal"],
  [4, "prefixed"],
]);
const OPERATIONS: readonly Operation[] = [
  "all",
  "read",
  "write",
  "create",
  "delete",
  "alter",
  "describe",
  "cluster-action",
  "describe-configs",
  "alter-configs",
  "idempotent-write",
];
const OPERATION_BY_CODE = new Map<number, Operation>(OPERATIONS.map((o, i) => [i + 2, o]));
const PERMISSION_BY_CODE = new Map<number, Permission>([
  [2, "deny"],
  [3, "allow"],
]);

/** Each name's Kafka code: the tables above read backwards. */
function codesOf<T>(byCode: ReadonlyMap<number, T>): ReadonlyMap<T, number> {
  return new Map([...byCode].map(([code, name]) => [name, code]));
}
const RESOURCE_CODE = codesOf(RESOURCE_BY_CODE);
const PATTERN_CODE = codesOf(PATTERN_BY_CODE);
const OPERATION_CODE = codesOf(OPERATION_BY_CODE);
const PERMISSION_CODE = codesOf(PERMISSION_BY_CODE);

export const resourceTypeOf = (code: number): ResourceType | undefined =>
  RESOURCE_BY_CODE.get(code);
export const patternTypeOf = (code: number): PatternType | undefined => PATTERN_BY_CODE.get(code);
export const operationOf = (code: number): Operation | undefined => OPERATION_BY_CODE.get(code);
export const permissionOf = (code: number): Permission | undefined => PERMISSION_BY_CODE.get(code);
export const resourceTypeCode = (t: ResourceType): number => RESOURCE_CODE.get(t)!;
export const patternTypeCode = (t: PatternType): number => PATTERN_CODE.get(t)!;
export const operationCode = (o: Operation): number => OPERATION_CODE.get(o)!;
export const permissionCode = (p: Permission): number => PERMISSION_CODE.get(p)!;

export const isResourceType = (v: unknown): v is ResourceType =>
  RESOURCE_CODE.has(v as ResourceType);
export const isPatternType = (v: unknown): v is PatternType => PATTERN_CODE.has(v as PatternType);
export const isOperation = (v: unknown): v is Operation => OPERATION_CODE.has(v as Operation);
export const isPermission = (v: unknown): v is Permission => PERMISSION_CODE.has(v as Permission);

/** Why a binding cannot be stored, or undefined when it can. */
export function invalidBinding(b: AclBinding): string | undefined {
  if (!/^User:.+$/.test(b.principal))
    return `principal "${b.principal}" must be User:<name> or User:*`;
  if (b.resourceName.length === 0) return "resource name is empty";
  if (
    Buffer.byteLength(b.resourceName) > ACL_NAME_BYTES_MAX ||
    Buffer.byteLength(b.principal) > ACL_NAME_BYTES_MAX
  )
    return `names are limited to ${ACL_NAME_BYTES_MAX} bytes`;
  if (b.resourceType === "cluster" && b.resourceName !== CLUSTER_RESOURCE_NAME)
    return `the cluster resource is named ${CLUSTER_RESOURCE_NAME}`;
  if (b.patternType === "prefixed" && b.resourceName === WILDCARD)
    return "a prefixed pattern cannot be *";
  return undefined;
}

export const bindingKey = (b: AclBinding): string =>
  [
    b.principal,
    b.host,
    b.resourceType,
    b.resourceName,
    b.patternType,
    b.operation,
    b.permission,
  ].join("\u0000");

export function matchesFilter(b: AclBinding, f: AclFilter): boolean {
  if (f.principal !== undefined && f.principal !== b.principal) return false;
  if (f.host !== undefined && f.host !== b.host) return false;
  if (f.resourceType !== undefined && f.resourceType !== b.resourceType) return false;
  if (f.operation !== undefined && f.operation !== b.operation) return false;
  if (f.permission !== undefined && f.permission !== b.permission) return false;
  if (f.patternType === "match")
    return f.resourceName === undefined || appliesTo(b, f.resourceName);
  if (f.patternType !== undefined && f.patternType !== b.patternType) return false;
  return f.resourceName === undefined || f.resourceName === b.resourceName;
}

/** Whether the binding's resource pattern covers a resource of that name. */
function appliesTo(b: AclBinding, name: string): boolean {
  if (b.patternType === "prefixed") return name.startsWith(b.resourceName);
  return b.resourceName === WILDCARD || b.resourceName === name;
}

/** Operations whose ALLOW also allows `op` (Kafka: READ, WRITE, DELETE, ALTER imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS). */
function allowedBy(op: Operation): readonly Operation[] {
  if (op === "describe") return ["describe", "read", "write", "delete", "alter", "all"];
  if (op === "describe-configs") return ["describe-configs", "alter-configs", "all"];
  return [op, "all"];
}

export interface Authorizer {
  /** Whether principal (e.g. "User:alice"), connected from host (its IP address), may perform op on the resource. */
  allowed(
    principal: string,
    op: Operation,
    resourceType: ResourceType,
    name: string,
    host: string,
  ): boolean;
}

/**
 * The IP address a binding's host is compared with (Kafka compares the client's address
 * text): an IPv4 client of a dual-stack socket ("::ffff:10.0.0.1") is its IPv4 address.
 */
export function clientHostOf(address: string | undefined): string {
  const a = address ?? "";
  return a.toLowerCase().startsWith("::ffff:") && a.includes(".") ? a.slice(7) : a;
}

/** The AclAuthorizer decision over one set of bindings. */
export function aclAuthorizer(
  acls: () => readonly AclBinding[],
  superUsers: ReadonlySet<string>,
): Authorizer {
  return {
    allowed(principal, op, resourceType, name, host) {
      if (superUsers.has(principal)) return true;
      const applicable = acls().filter(
        (b) =>
          b.resourceType === resourceType &&
          (b.principal === principal || b.principal === "User:*") &&
          (b.host === WILDCARD || b.host === host) &&
          appliesTo(b, name),
      );
      if (
        applicable.some(
          (b) => b.permission === "deny" && (b.operation === op || b.operation === "all"),
        )
      )
        return false;
      const implying = allowedBy(op);
      return applicable.some((b) => b.permission === "allow" && implying.includes(b.operation));
    },
  };
}
