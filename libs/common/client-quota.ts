// Client quotas in Kafka's model (KIP-13, KIP-55, KIP-124, KIP-546): an entity is a user, a
// client id, or both, each either named or `<default>`; each entity may carry a produce byte
// rate, a fetch byte rate and a request-time percentage. Which entity's value applies to a
// request is Kafka's precedence order (resolveQuota), per quota key. The controller stores the
// entries (services/controller/client-quotas.ts); brokers and coordinators enforce them
// (services/kafka/quota-manager.ts). docs/security.md, "Quotas", has the whole picture.

export const QUOTA_KEYS = [
  "producer_byte_rate",
  "consumer_byte_rate",
  "request_percentage",
] as const;
export type QuotaKey = (typeof QUOTA_KEYS)[number];

export function isQuotaKey(k: unknown): k is QuotaKey {
  return (QUOTA_KEYS as readonly unknown[]).includes(k);
}

/** Entity types, Kafka's names. */
export type QuotaEntityType = "user" | "client-id";

/**
 * An entity: a field absent means that type is not part of it; null means `<default>`.
 * `{ user: "alice" }`, `{ user: null, clientId: "app" }`, `{ clientId: null }`, ...
 */
export interface QuotaEntity {
  readonly user?: string | null;
  readonly clientId?: string | null;
}

export interface ClientQuotaEntry {
  readonly entity: QuotaEntity;
  readonly values: Partial<Record<QuotaKey, number>>;
}

/** One change of an entity's quotas (Kafka's AlterClientQuotas op): set `value`, or remove the key. */
export interface QuotaOp {
  readonly key: string;
  readonly value?: number;
  readonly remove?: boolean;
}

export interface QuotaAlteration {
  readonly entity: QuotaEntity;
  readonly ops: readonly QuotaOp[];
}

/** A DescribeClientQuotas filter component: a named entity, the default one, or any of that type. */
export interface QuotaFilterComponent {
  readonly entityType: QuotaEntityType;
  readonly match: "exact" | "default" | "any";
  readonly name?: string;
}

/** Entities the cluster holds at most, and changes one request may make. */
export const CLIENT_QUOTA_ENTITIES_MAX = 10_000;
export const QUOTA_CHANGES_PER_REQUEST_MAX = 1_000;
export const QUOTA_ENTITY_NAME_CHARS_MAX = 1_024;
/** Largest value a quota may have (a byte rate is a Java long in Kafka; this stays exact in a double). */
export const QUOTA_VALUE_MAX = Number.MAX_SAFE_INTEGER;

const part = (v: string | null | undefined): string =>
  v === undefined ? "-" : v === null ? "*" : `=${v}`;

/** A stable key of an entity (the store's and the resolver's). */
export function entityKey(e: QuotaEntity): string {
  return `${part(e.user)}\u0000${part(e.clientId)}`;
}

/** user=alice, client-id=<default> (logs, CLI, error messages). */
export function describeEntity(e: QuotaEntity): string {
  const show = (v: string | null): string => (v === null ? "<default>" : v);
  const parts: string[] = [];
  if (e.user !== undefined) parts.push(`user=${show(e.user)}`);
  if (e.clientId !== undefined) parts.push(`client-id=${show(e.clientId)}`);
  return parts.join(", ");
}

/** Why an entity is malformed (untrusted input: requests and log entries), or undefined. */
export function invalidEntity(e: unknown): string | undefined {
  const x = e as QuotaEntity | null;
  if (typeof x !== "object" || x === null) return "not an entity";
  if (x.user === undefined && x.clientId === undefined)
    return "an entity names a user, a client id, or both";
  for (const [what, v] of [
    ["user", x.user],
    ["client id", x.clientId],
  ] as const) {
    if (v === undefined || v === null) continue;
    if (typeof v !== "string") return `the ${what} must be a string`;
    if (v === "") return `the ${what} is empty (use <default> for the default entity)`;
    if (v.length > QUOTA_ENTITY_NAME_CHARS_MAX)
      return `the ${what} is longer than ${QUOTA_ENTITY_NAME_CHARS_MAX} characters`;
  }
  return undefined;
}

/** Why a value is not one the key may have (Kafka: byte rates are whole, every quota positive), or undefined. */
export function invalidQuotaValue(key: string, value: unknown): string | undefined {
  if (!isQuotaKey(key))
    return `unknown quota key "${key}": producer_byte_rate, consumer_byte_rate or request_percentage`;
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0 || value > QUOTA_VALUE_MAX)
    return `${key} must be a positive number, got ${String(value)}`;
  if (key !== "request_percentage" && !Number.isInteger(value))
    return `${key} is bytes per second, a whole number; got ${value}`;
  return undefined;
}

/** Whether an entity matches a DescribeClientQuotas filter (strict: no other entity types). */
export function entityMatches(
  e: QuotaEntity,
  components: readonly QuotaFilterComponent[],
  strict: boolean,
): boolean {
  for (const c of components) {
    const v = c.entityType === "user" ? e.user : e.clientId;
    if (v === undefined) return false;
    if (c.match === "default" && v !== null) return false;
    if (c.match === "exact" && v !== c.name) return false;
  }
  if (!strict) return true;
  const types = new Set(components.map((c) => c.entityType));
  return (
    (e.user === undefined || types.has("user")) &&
    (e.clientId === undefined || types.has("client-id"))
  );
}

/** The quota that applies to a request, and the entity its usage is counted under. */
export interface AppliedQuota {
  readonly limit: number;
  /**
   * The usage counter's identity (Kafka's quota metric tags): requests with the same sensor
   * share one rate. A `<default>` entity gives each user (client id) its own.
   */
  readonly sensor: string;
  /** Whose usage this is, for metrics and logs: the user, or the client id for client-only quotas. */
  readonly principal: string;
}

/**
 * The quota entries compiled for lookups: resolveQuota is a few Map probes, no allocation on a
 * hit that was seen before (callers cache the answer per connection).
 */
export class QuotaTable {
  private readonly byKey = new Map<string, Partial<Record<QuotaKey, number>>>();

  constructor(entries: readonly ClientQuotaEntry[]) {
    for (const e of entries) this.byKey.set(entityKey(e.entity), e.values);
  }

  /**
   * Kafka's precedence (docs: "Quotas"), first match wins, per key:
   * user+client-id, user+<default> client-id, user, <default> user+client-id,
   * <default> user+<default> client-id, <default> user, client-id, <default> client-id.
   */
  resolve(key: QuotaKey, user: string, clientId: string): AppliedQuota | undefined {
    if (this.byKey.size === 0) return undefined;
    const u = `=${user}`;
    const c = `=${clientId}`;
    const candidates: Array<[string, string, "user+client" | "user" | "client"]> = [
      [u, c, "user+client"],
      [u, "*", "user+client"],
      [u, "-", "user"],
      ["*", c, "user+client"],
      ["*", "*", "user+client"],
      ["*", "-", "user"],
      ["-", c, "client"],
      ["-", "*", "client"],
    ];
    for (const [up, cp, scope] of candidates) {
      const limit = this.byKey.get(`${up}\u0000${cp}`)?.[key];
      if (limit === undefined) continue;
      return scope === "user+client"
        ? { limit, sensor: `${user}\u0000${clientId}`, principal: user }
        : scope === "user"
          ? { limit, sensor: `${user}\u0000`, principal: user }
          : { limit, sensor: `\u0000${clientId}`, principal: `client-id:${clientId}` };
    }
    return undefined;
  }
}

/** Kafka's quota user: the principal's name without its type (User:alice -> alice). */
export function quotaUserOf(principal: string): string {
  const colon = principal.indexOf(":");
  return colon < 0 ? principal : principal.slice(colon + 1);
}
