// Conversions between the tern.v1 client-quota messages (proto/tern/v1/controller.proto) and the
// plain model of libs/common/client-quota.ts. Malformed wire entities come back as undefined or
// throw INVALID_REQUEST; the controller checks values again before anything is stored.
import {
  isQuotaKey,
  type ClientQuotaEntry,
  type QuotaEntity,
  type QuotaFilterComponent,
  type QuotaKey,
} from "../common/client-quota.js";
import { TernError } from "../common/errors.js";
import type {
  ClientQuotaEntry as WireQuotaEntry,
  ClientQuotaEntry__Output as WireQuotaEntry__Output,
  QuotaEntityComponent as WireComponent,
  QuotaEntityComponent__Output as WireComponent__Output,
  QuotaFilterComponent as WireFilter,
  QuotaFilterComponent__Output as WireFilter__Output,
} from "../common/proto-types/index.js";

export function quotaEntityToWire(e: QuotaEntity): WireComponent[] {
  const out: WireComponent[] = [];
  if (e.user !== undefined)
    out.push({ entityType: "user", name: e.user ?? "", isDefault: e.user === null });
  if (e.clientId !== undefined)
    out.push({ entityType: "client-id", name: e.clientId ?? "", isDefault: e.clientId === null });
  return out;
}

/** Throws INVALID_REQUEST for an unknown entity type or a type named twice. */
export function quotaEntityFromWire(
  components: ReadonlyArray<Partial<WireComponent__Output>> | null | undefined,
): QuotaEntity {
  let user: string | null | undefined;
  let clientId: string | null | undefined;
  for (const c of components ?? []) {
    const value = c?.isDefault === true ? null : String(c?.name ?? "");
    if (c?.entityType === "user" && user === undefined) user = value;
    else if (c?.entityType === "client-id" && clientId === undefined) clientId = value;
    else
      throw new TernError(
        "INVALID_REQUEST",
        `entity type "${String(c?.entityType)}" is unknown or named twice: user or client-id`,
      );
  }
  return {
    ...(user !== undefined ? { user } : {}),
    ...(clientId !== undefined ? { clientId } : {}),
  };
}

export function quotaEntryToWire(e: ClientQuotaEntry): WireQuotaEntry {
  return {
    entity: quotaEntityToWire(e.entity),
    values: Object.entries(e.values).map(([key, value]) => ({ key, value })),
  };
}

/** An entry from the wire; undefined when malformed (a view is best effort, item by item). */
export function quotaEntryFromWire(
  w: Partial<WireQuotaEntry__Output> | null | undefined,
): ClientQuotaEntry | undefined {
  try {
    const entity = quotaEntityFromWire(w?.entity);
    const values: Partial<Record<QuotaKey, number>> = {};
    for (const v of w?.values ?? [])
      if (isQuotaKey(v?.key) && typeof v.value === "number" && v.value > 0) values[v.key] = v.value;
    return { entity, values };
  } catch {
    return undefined;
  }
}

export function quotaFilterToWire(f: QuotaFilterComponent): WireFilter {
  return { entityType: f.entityType, matchType: f.match, name: f.name ?? "" };
}

export function quotaFilterFromWire(
  w: Partial<WireFilter__Output> | null | undefined,
): QuotaFilterComponent {
  const entityType = w?.entityType;
  const match = w?.matchType;
  if (entityType !== "user" && entityType !== "client-id")
    throw new TernError("INVALID_REQUEST", `unknown entity type "${String(entityType)}"`);
  if (match !== "exact" && match !== "default" && match !== "any")
    throw new TernError(
      "INVALID_REQUEST",
      `match type must be exact, default or any, got "${String(match)}"`,
    );
  return match === "exact"
    ? { entityType, match, name: String(w?.name ?? "") }
    : { entityType, match };
}
