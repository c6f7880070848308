// ACLs in the controller's replicated metadata: CreateAcls adds bindings (an existing one is
// kept once), DeleteAcls removes every binding matching each filter and answers which; both are
// checked the same way on every replica, so the store is identical everywhere. Bounded
// (ACLS_MAX bindings, ACL_CHANGES_PER_REQUEST_MAX per request).
import {
  ACLS_MAX,
  bindingKey,
  invalidBinding,
  isOperation,
  isPatternType,
  isPermission,
  isResourceType,
  matchesFilter,
  type AclBinding,
  type AclFilter,
} from "../../libs/common/acl.js";
import type { Command } from "./command-codec.js";
import { NO_ERROR, type ItemError } from "./item-error.js";

export const ACL_CHANGES_PER_REQUEST_MAX = 1_000;

export type AclStore = Map<string, AclBinding>;

export interface AclCreationResult {
  readonly error: ItemError;
}

export interface AclDeletionResult {
  readonly error: ItemError;
  readonly deleted: readonly AclBinding[];
}

export function newAclStore(): AclStore {
  return new Map();
}

/** The binding as stored, or why it is malformed (field values from a log entry are untrusted). */
export function checkBinding(b: unknown): AclBinding | string {
  const x = b as Partial<AclBinding> | null;
  if (typeof x !== "object" || x === null) return "not a binding";
  if (!isResourceType(x.resourceType)) return `unknown resource type ${String(x.resourceType)}`;
  if (!isPatternType(x.patternType))
    return `pattern type must be literal or prefixed, got ${String(x.patternType)}`;
  if (!isOperation(x.operation)) return `unknown operation ${String(x.operation)}`;
  if (!isPermission(x.permission))
    return `permission must be allow or deny, got ${String(x.permission)}`;
  const binding: AclBinding = {
    principal: String(x.principal ?? ""),
    host: String(x.host ?? "*"),
    resourceType: x.resourceType,
    resourceName: String(x.resourceName ?? ""),
    patternType: x.patternType,
    operation: x.operation,
    permission: x.permission,
  };
  return invalidBinding(binding) ?? binding;
}

export function createAcls(
  store: AclStore,
  c: Extract<Command, { type: "createAcls" }>,
): { results: AclCreationResult[]; changed: boolean } {
  const creations = Array.isArray(c.creations) ? c.creations : [];
  if (creations.length > ACL_CHANGES_PER_REQUEST_MAX)
    return {
      results: creations.map(() => ({
        error: {
          error: "INVALID_REQUEST",
          message: `at most ${ACL_CHANGES_PER_REQUEST_MAX} ACLs per request`,
        },
      })),
      changed: false,
    };
  let changed = false;
  const results = creations.map((raw): AclCreationResult => {
    const b = checkBinding(raw);
    if (typeof b === "string") return { error: { error: "INVALID_REQUEST", message: b } };
    const key = bindingKey(b);
    if (store.has(key)) return { error: NO_ERROR };
    if (store.size >= ACLS_MAX)
      return {
        error: { error: "INVALID_REQUEST", message: `the cluster already has ${ACLS_MAX} ACLs` },
      };
    store.set(key, b);
    changed = true;
    return { error: NO_ERROR };
  });
  return { results, changed };
}

export function deleteAcls(
  store: AclStore,
  c: Extract<Command, { type: "deleteAcls" }>,
): { results: AclDeletionResult[]; changed: boolean } {
  const filters = Array.isArray(c.filters) ? c.filters : [];
  if (filters.length > ACL_CHANGES_PER_REQUEST_MAX)
    return {
      results: filters.map(() => ({
        error: {
          error: "INVALID_REQUEST",
          message: `at most ${ACL_CHANGES_PER_REQUEST_MAX} filters per request`,
        },
        deleted: [],
      })),
      changed: false,
    };
  let changed = false;
  const results = filters.map((f): AclDeletionResult => {
    const deleted: AclBinding[] = [];
    for (const [key, b] of store) {
      if (!matchesFilter(b, f)) continue;
      store.delete(key);
      deleted.push(b);
    }
    if (deleted.length > 0) changed = true;
    return { error: NO_ERROR, deleted };
  });
  return { results, changed };
}

/** Sorted (deterministic snapshots, views and listings). */
export function aclEntries(store: AclStore): AclBinding[] {
  return [...store.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, b]) => b);
}

export function describeAcls(store: AclStore, filter: AclFilter): AclBinding[] {
  return aclEntries(store).filter((b) => matchesFilter(b, filter));
}

export function aclStoreFromSnapshot(value: unknown): AclStore {
  const store = newAclStore();
  if (!Array.isArray(value)) return store;
  for (const raw of value) {
    const b = checkBinding(raw);
    if (typeof b !== "string") store.set(bindingKey(b), b);
  }
  return store;
}
