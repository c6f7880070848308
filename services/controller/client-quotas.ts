// Client quotas in the controller's replicated metadata (libs/common/client-quota.ts has the
// model): one alterClientQuotas entry per AlterClientQuotas request, checked the same way on
// every replica, each entity's result standing alone (Kafka's rule: an entity's ops apply all
// or none). An entity whose last value is removed is gone. Bounded: CLIENT_QUOTA_ENTITIES_MAX
// entities, QUOTA_CHANGES_PER_REQUEST_MAX entities per request.
import {
  CLIENT_QUOTA_ENTITIES_MAX,
  QUOTA_CHANGES_PER_REQUEST_MAX,
  describeEntity,
  entityKey,
  entityMatches,
  invalidEntity,
  invalidQuotaValue,
  isQuotaKey,
  type ClientQuotaEntry,
  type QuotaAlteration,
  type QuotaEntity,
  type QuotaFilterComponent,
  type QuotaKey,
} from "../../libs/common/client-quota.js";
import type { Command } from "./command-codec.js";
import { NO_ERROR, type ItemError } from "./item-error.js";

export type ClientQuotaStore = Map<string, ClientQuotaEntry>;

export function newClientQuotaStore(): ClientQuotaStore {
  return new Map();
}

const invalid = (message: string): ItemError => ({ error: "INVALID_REQUEST", message });

/** The entity as stored (only its own fields), or why it is malformed. */
function entityOf(raw: unknown): QuotaEntity | string {
  const bad = invalidEntity(raw);
  if (bad) return bad;
  const e = raw as QuotaEntity;
  return {
    ...(e.user !== undefined ? { user: e.user } : {}),
    ...(e.clientId !== undefined ? { clientId: e.clientId } : {}),
  };
}

/** Checks an alteration without changing anything (validate_only, and before proposing). */
export function checkAlteration(a: QuotaAlteration): ItemError | undefined {
  const entity = entityOf(a?.entity);
  if (typeof entity === "string") return invalid(entity);
  const ops = Array.isArray(a.ops) ? a.ops : [];
  if (ops.length === 0) return invalid(`no quota change for ${describeEntity(entity)}`);
  const keys = new Set<string>();
  for (const op of ops) {
    const key = String(op?.key);
    if (keys.has(key))
      return invalid(`quota key ${key} appears twice for ${describeEntity(entity)}`);
    keys.add(key);
    if (op.remove === true) {
      if (!isQuotaKey(key)) return invalid(`unknown quota key "${key}"`);
      continue;
    }
    const bad = invalidQuotaValue(key, op.value);
    if (bad) return invalid(bad);
  }
  return undefined;
}

/** Applies one alterClientQuotas command; `changed` when the store differs afterwards. */
export function alterClientQuotas(
  store: ClientQuotaStore,
  c: Extract<Command, { type: "alterClientQuotas" }>,
): { results: ItemError[]; changed: boolean } {
  const entries = Array.isArray(c.entries) ? c.entries : [];
  if (entries.length > QUOTA_CHANGES_PER_REQUEST_MAX)
    return {
      results: entries.map(() =>
        invalid(`a request may change at most ${QUOTA_CHANGES_PER_REQUEST_MAX} entities`),
      ),
      changed: false,
    };
  const seen = new Map<string, number>();
  for (const a of entries) {
    const key = entityKey((a?.entity ?? {}) as QuotaEntity);
    seen.set(key, (seen.get(key) ?? 0) + 1);
  }
  let changed = false;
  const results = entries.map((a): ItemError => {
    const bad = checkAlteration(a);
    if (bad) return bad;
    const entity = entityOf(a.entity) as QuotaEntity;
    const key = entityKey(entity);
    if ((seen.get(key) ?? 0) > 1)
      return invalid(`${describeEntity(entity)} appears more than once in the request`);
    const before = store.get(key);
    const values: Partial<Record<QuotaKey, number>> = { ...before?.values };
    for (const op of a.ops) {
      if (op.remove === true) delete values[op.key as QuotaKey];
      else values[op.key as QuotaKey] = op.value!;
    }
    if (Object.keys(values).length === 0) {
      if (store.delete(key)) changed = true;
      return NO_ERROR;
    }
    if (before === undefined && store.size >= CLIENT_QUOTA_ENTITIES_MAX)
      return invalid(`the cluster already has quotas for ${CLIENT_QUOTA_ENTITIES_MAX} entities`);
    store.set(key, { entity, values: sortedValues(values) });
    changed = true;
    return NO_ERROR;
  });
  return { results, changed };
}

function sortedValues(v: Partial<Record<QuotaKey, number>>): Partial<Record<QuotaKey, number>> {
  const out: Partial<Record<QuotaKey, number>> = {};
  for (const k of Object.keys(v).sort() as QuotaKey[]) out[k] = v[k];
  return out;
}

/** Sorted by entity key (deterministic snapshots and views). */
export function clientQuotaEntries(store: ClientQuotaStore): ClientQuotaEntry[] {
  return [...store.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1)).map(([, e]) => e);
}

export function describeClientQuotas(
  store: ClientQuotaStore,
  components: readonly QuotaFilterComponent[],
  strict: boolean,
): ClientQuotaEntry[] {
  return clientQuotaEntries(store).filter((e) => entityMatches(e.entity, components, strict));
}

export function clientQuotaStoreFromSnapshot(value: unknown): ClientQuotaStore {
  const store = newClientQuotaStore();
  if (!Array.isArray(value)) return store;
  for (const e of value as ClientQuotaEntry[]) {
    const entity = entityOf(e?.entity);
    if (typeof entity === "string") continue;
    store.set(entityKey(entity), { entity, values: e.values });
  }
  return store;
}
