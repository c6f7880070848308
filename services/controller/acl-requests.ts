// The controller's CreateAcls / DescribeAcls / DeleteAcls requests (proto/tern/v1/controller.proto):
// wire fields to bindings and filters, one Raft entry per create or delete request, results
// in request order. A malformed binding fails alone (INVALID_REQUEST), before the proposal.
import {
  isOperation,
  isPatternType,
  isPermission,
  isResourceType,
  type AclBinding,
  type AclFilter,
} from "../../libs/common/acl.js";
import { TernError } from "../../libs/common/errors.js";
import {
  ACL_CHANGES_PER_REQUEST_MAX,
  checkBinding,
  describeAcls,
  type AclStore,
} from "./acl-store.js";
import type { Command } from "./command-codec.js";
import type { CommandError, CommandResult } from "./metadata-state-machine.js";
import type {
  AclFilter__Output,
  CreateAclsRequest__Output,
  CreateAclsResponse,
  DeleteAclsRequest__Output,
  DeleteAclsResponse,
  DescribeAclsRequest__Output,
  DescribeAclsResponse,
  ItemError,
} from "../../libs/common/proto-types/index.js";

type Propose = (c: Command) => Promise<CommandResult>;
const NONE: ItemError = { code: "NONE", message: "" };

function bounded<T>(items: readonly T[] | null | undefined, what: string): readonly T[] {
  const list = Array.isArray(items) ? items : [];
  if (list.length === 0 || list.length > ACL_CHANGES_PER_REQUEST_MAX)
    throw new TernError(
      "INVALID_REQUEST",
      `${what} needs 1..${ACL_CHANGES_PER_REQUEST_MAX} items, got ${list.length}`,
    );
  return list;
}

const text = (v: unknown): string | undefined =>
  v === undefined || v === null || v === "" ? undefined : String(v);

/** A wire filter; throws INVALID_REQUEST for a field value tern does not know. */
export function filterFromWire(w: Partial<AclFilter__Output> | null | undefined): AclFilter {
  const f = {
    principal: text(w?.principal),
    host: text(w?.host),
    resourceType: text(w?.resourceType),
    resourceName: text(w?.resourceName),
    patternType: text(w?.patternType),
    operation: text(w?.operation),
    permission: text(w?.permission),
  };
  if (f.resourceType !== undefined && !isResourceType(f.resourceType))
    throw new TernError("INVALID_REQUEST", `unknown resource type "${f.resourceType}"`);
  if (f.patternType !== undefined && f.patternType !== "match" && !isPatternType(f.patternType))
    throw new TernError("INVALID_REQUEST", `unknown pattern type "${f.patternType}"`);
  if (f.operation !== undefined && !isOperation(f.operation))
    throw new TernError("INVALID_REQUEST", `unknown operation "${f.operation}"`);
  if (f.permission !== undefined && !isPermission(f.permission))
    throw new TernError("INVALID_REQUEST", `unknown permission "${f.permission}"`);
  return f as AclFilter;
}

export async function createAclsRequest(
  req: CreateAclsRequest__Output,
  propose: Propose,
): Promise<CreateAclsResponse> {
  const creations = bounded(req?.creations, "CreateAcls");
  const checked = creations.map((w) =>
    checkBinding({
      ...w,
      host: text(w?.host) ?? "*",
      patternType: text(w?.patternType) ?? "literal",
    }),
  );
  const valid = checked.filter((b): b is AclBinding => typeof b !== "string");
  const outcomes =
    valid.length === 0
      ? []
      : await proposed(propose, { type: "createAcls", creations: valid }, "createAcls");
  let next = 0;
  return {
    results: checked.map((b) => {
      if (typeof b === "string") return { code: "INVALID_REQUEST" as const, message: b };
      const o = outcomes[next++];
      return o?.error ? { code: o.error.error, message: o.error.message } : NONE;
    }),
  };
}

export function describeAclsRequest(
  req: DescribeAclsRequest__Output,
  store: AclStore,
): DescribeAclsResponse {
  return { acls: describeAcls(store, filterFromWire(req?.filter)) };
}

export async function deleteAclsRequest(
  req: DeleteAclsRequest__Output,
  propose: Propose,
): Promise<DeleteAclsResponse> {
  const filters = bounded(req?.filters, "DeleteAcls").map(filterFromWire);
  const outcomes = await proposed(propose, { type: "deleteAcls", filters }, "deleteAcls");
  return {
    results: outcomes.map((o) => ({
      error: o.error ? { code: o.error.error, message: o.error.message } : NONE,
      deleted: [...(o.deleted ?? [])],
    })),
  };
}

async function proposed(
  propose: Propose,
  command: Command,
  type: "createAcls" | "deleteAcls",
): Promise<Array<{ error?: CommandError | undefined; deleted?: readonly AclBinding[] }>> {
  const r = await propose(command);
  if (r.type !== type) throw new TernError("UNKNOWN_SERVER_ERROR", `unexpected result ${r.type}`);
  return [...r.outcomes];
}
