// CreateAcls (30), DescribeAcls (29) and DeleteAcls (31), v0-v1 (v2 is flexible and not
// served), through the controller (libs/common/acl.ts has the model). Layouts from Kafka's
// message schemas: v1 adds the resource pattern type after the resource name (v0 means
// LITERAL). Changing ACLs needs ALTER on the cluster, listing them DESCRIBE (Kafka's rule);
// a refusal is CLUSTER_AUTHORIZATION_FAILED and changes nothing.
import {
  operationCode,
  operationOf,
  patternTypeCode,
  patternTypeOf,
  permissionCode,
  permissionOf,
  resourceTypeCode,
  resourceTypeOf,
  OPERATION,
  PATTERN_TYPE,
  PERMISSION,
  RESOURCE_TYPE,
  type AclBinding,
  type AclFilter,
} from "../../libs/common/acl.js";
import { isTernError, TernError } from "../../libs/common/errors.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { ANONYMOUS_PRINCIPAL, clusterAllowed } from "./kafka-access.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { kafkaErrorCode } from "./kafka-errors.js";

const refusedCluster = (op: string): TernError =>
  new TernError("CLUSTER_AUTHORIZATION_FAILED", `${op} needs it on the cluster`);

/**
 * The Kafka client the controller checks the change against (the listener's principal; without
 * an authorizer on this listener it is not known here, and counts as anonymous).
 */
const principalOf = (deps: KafkaDeps): string => deps.access?.principal ?? ANONYMOUS_PRINCIPAL;

function errorOf(e: unknown): TernError {
  return isTernError(e)
    ? e
    : new TernError("UNKNOWN_SERVER_ERROR", e instanceof Error ? e.message : String(e));
}

/** One creation: a field tern does not know makes it INVALID_REQUEST (as Kafka answers an UNKNOWN enum). */
function bindingOf(raw: {
  resourceType: number;
  resourceName: string;
  patternType: number;
  principal: string;
  host: string;
  operation: number;
  permission: number;
}): AclBinding | TernError {
  const resourceType = resourceTypeOf(raw.resourceType);
  const patternType = patternTypeOf(raw.patternType);
  const operation = operationOf(raw.operation);
  const permission = permissionOf(raw.permission);
  if (!resourceType || !patternType || !operation || !permission)
    return new TernError(
      "INVALID_REQUEST",
      "the resource type, pattern type, operation or permission is not one an ACL can have",
    );
  return {
    principal: raw.principal,
    host: raw.host,
    resourceType,
    resourceName: raw.resourceName,
    patternType,
    operation,
    permission,
  };
}

function readFilter(r: KafkaReader, version: number): AclFilter | TernError {
  const type = r.int8();
  const name = r.nullableString();
  const pattern = version >= 1 ? r.int8() : PATTERN_TYPE.LITERAL;
  const principal = r.nullableString();
  const host = r.nullableString();
  const operation = r.int8();
  const permission = r.int8();
  const resourceType = type === RESOURCE_TYPE.ANY ? undefined : resourceTypeOf(type);
  const patternType =
    pattern === PATTERN_TYPE.ANY
      ? undefined
      : pattern === PATTERN_TYPE.MATCH
        ? ("match" as const)
        : patternTypeOf(pattern);
  const op = operation === OPERATION.ANY ? undefined : operationOf(operation);
  const perm = permission === PERMISSION.ANY ? undefined : permissionOf(permission);
  if (
    (type !== RESOURCE_TYPE.ANY && !resourceType) ||
    (pattern !== PATTERN_TYPE.ANY && !patternType) ||
    (operation !== OPERATION.ANY && !op) ||
    (permission !== PERMISSION.ANY && !perm)
  ) {
    return new TernError(
      "INVALID_REQUEST",
      "the filter names an unknown resource type, pattern type, operation or permission",
    );
  }
  return {
    resourceType,
    resourceName: name ?? undefined,
    patternType,
    principal: principal ?? undefined,
    host: host ?? undefined,
    operation: op,
    permission: perm,
  };
}

export async function createAclsResponse(
  deps: KafkaDeps,
  version: number,
  r: KafkaReader,
): Promise<Buffer> {
  const creations = r.array((x) => {
    const resourceType = x.int8();
    const resourceName = x.string();
    const patternType = version >= 1 ? x.int8() : PATTERN_TYPE.LITERAL;
    return bindingOf({
      resourceType,
      resourceName,
      patternType,
      principal: x.string(),
      host: x.string(),
      operation: x.int8(),
      permission: x.int8(),
    });
  });
  let results: Array<TernError | undefined>;
  if (!clusterAllowed(deps.access, "alter"))
    results = creations.map(() => refusedCluster("CreateAcls: ALTER"));
  else if (deps.aclAdmin === undefined)
    results = creations.map(
      () => new TernError("UNKNOWN_SERVER_ERROR", "this listener cannot change ACLs"),
    );
  else {
    const valid = creations.filter((c): c is AclBinding => !(c instanceof TernError));
    let answers: Array<TernError | undefined> = [];
    try {
      answers = valid.length === 0 ? [] : await deps.aclAdmin.createAcls(valid, principalOf(deps));
    } catch (e) {
      answers = valid.map(() => errorOf(e));
    }
    let next = 0;
    results = creations.map((c) => (c instanceof TernError ? c : answers[next++]));
  }
  const w = new KafkaWriter(64 + results.length * 8);
  w.int32(0); // throttle_time_ms
  w.array(results, (x, e) =>
    x.int16(kafkaErrorCode(e?.errorName)).nullableString(e?.message ?? null),
  );
  return w.finish();
}

export async function describeAclsResponse(
  deps: KafkaDeps,
  version: number,
  r: KafkaReader,
): Promise<Buffer> {
  const filter = readFilter(r, version);
  let error: TernError | undefined = filter instanceof TernError ? filter : undefined;
  let acls: AclBinding[] = [];
  if (error === undefined && !clusterAllowed(deps.access, "describe"))
    error = refusedCluster("DescribeAcls: DESCRIBE");
  if (error === undefined) {
    try {
      if (deps.aclAdmin === undefined)
        throw new TernError("UNKNOWN_SERVER_ERROR", "this listener cannot list ACLs");
      acls = await deps.aclAdmin.describeAcls(filter as AclFilter, principalOf(deps));
    } catch (e) {
      error = errorOf(e);
    }
  }
  // Grouped by resource (type, name, pattern), as Kafka answers.
  const resources = new Map<string, { binding: AclBinding; acls: AclBinding[] }>();
  for (const b of acls) {
    const key = `${b.resourceType}\u0000${b.resourceName}\u0000${b.patternType}`;
    const entry = resources.get(key) ?? { binding: b, acls: [] };
    entry.acls.push(b);
    resources.set(key, entry);
  }
  const w = new KafkaWriter(128 + acls.length * 64);
  w.int32(0)
    .int16(kafkaErrorCode(error?.errorName))
    .nullableString(error?.message ?? null);
  w.array([...resources.values()], (x, res) => {
    x.int8(resourceTypeCode(res.binding.resourceType)).string(res.binding.resourceName);
    if (version >= 1) x.int8(patternTypeCode(res.binding.patternType));
    x.array(res.acls, (y, b) =>
      y
        .string(b.principal)
        .string(b.host)
        .int8(operationCode(b.operation))
        .int8(permissionCode(b.permission)),
    );
  });
  return w.finish();
}

export async function deleteAclsResponse(
  deps: KafkaDeps,
  version: number,
  r: KafkaReader,
): Promise<Buffer> {
  const filters = r.array((x) => readFilter(x, version));
  let results: Array<{ error?: TernError; deleted: AclBinding[] }>;
  if (!clusterAllowed(deps.access, "alter"))
    results = filters.map(() => ({ error: refusedCluster("DeleteAcls: ALTER"), deleted: [] }));
  else {
    const valid = filters.filter((f): f is AclFilter => !(f instanceof TernError));
    let answers: Array<{ error?: TernError; deleted: AclBinding[] }> = [];
    try {
      if (deps.aclAdmin === undefined)
        throw new TernError("UNKNOWN_SERVER_ERROR", "this listener cannot change ACLs");
      answers = valid.length === 0 ? [] : await deps.aclAdmin.deleteAcls(valid, principalOf(deps));
    } catch (e) {
      answers = valid.map(() => ({ error: errorOf(e), deleted: [] }));
    }
    let next = 0;
    results = filters.map((f) =>
      f instanceof TernError ? { error: f, deleted: [] } : (answers[next++] ?? { deleted: [] }),
    );
  }
  const w = new KafkaWriter(128);
  w.int32(0);
  w.array(results, (x, res) => {
    x.int16(kafkaErrorCode(res.error?.errorName)).nullableString(res.error?.message ?? null);
    x.array(res.deleted, (y, b) => {
      y.int16(0).nullableString(null).int8(resourceTypeCode(b.resourceType)).string(b.resourceName);
      if (version >= 1) y.int8(patternTypeCode(b.patternType));
      y.string(b.principal)
        .string(b.host)
        .int8(operationCode(b.operation))
        .int8(permissionCode(b.permission));
    });
  });
  return w.finish();
}
