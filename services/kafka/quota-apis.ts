// DescribeClientQuotas (48) and AlterClientQuotas (49), v0 and v1 (flexible), through the
// controller (libs/common/client-quota.ts has the model). Layouts from Kafka's message
// schemas. Listing quotas needs DESCRIBE_CONFIGS on the cluster, changing them ALTER_CONFIGS
// (Kafka's rule); a refusal is CLUSTER_AUTHORIZATION_FAILED and changes nothing.
import {
  invalidEntity,
  type ClientQuotaEntry,
  type QuotaEntity,
  type QuotaFilterComponent,
} from "../../libs/common/client-quota.js";
import { isTernError, TernError } from "../../libs/common/errors.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { clusterAllowed } from "./kafka-access.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { kafkaErrorCode } from "./kafka-errors.js";

export type { QuotaAdmin } from "./admin-ports.js";

const MATCH_EXACT = 0;
const MATCH_DEFAULT = 1;
const MATCH_ANY = 2;

function errorOf(e: unknown): TernError {
  return isTernError(e)
    ? e
    : new TernError("UNKNOWN_SERVER_ERROR", e instanceof Error ? e.message : String(e));
}

/** Reads and writes one version's strings and arrays (compact from v1) and its tagged fields. */
class Layout {
  constructor(readonly flexible: boolean) {}
  string(r: KafkaReader): string {
    return this.flexible ? r.compactString() : r.string();
  }
  nullableString(r: KafkaReader): string | null {
    return this.flexible ? r.compactNullableString() : r.nullableString();
  }
  array<T>(r: KafkaReader, item: (r: KafkaReader) => T): T[] {
    return this.flexible ? r.compactArray(item) : r.array(item);
  }
  tags(r: KafkaReader): void {
    if (this.flexible) r.taggedFields();
  }
  writeString(w: KafkaWriter, s: string | null): void {
    if (this.flexible) w.compactNullableString(s);
    else w.nullableString(s);
  }
  writeArray<T>(w: KafkaWriter, items: readonly T[], item: (w: KafkaWriter, t: T) => void): void {
    if (this.flexible) w.compactArray(items, item);
    else w.array(items, item);
  }
  writeTags(w: KafkaWriter): void {
    if (this.flexible) w.noTaggedFields();
  }
}

/** An entity from its components; a type that is unknown or named twice is a string (the reason). */
function entityOf(
  components: ReadonlyArray<{ type: string; name: string | null }>,
): QuotaEntity | string {
  let user: string | null | undefined;
  let clientId: string | null | undefined;
  for (const c of components) {
    if (c.type === "user" && user === undefined) user = c.name;
    else if (c.type === "client-id" && clientId === undefined) clientId = c.name;
    else return `entity type "${c.type}" is unknown or named twice: user or client-id`;
  }
  const e = {
    ...(user !== undefined ? { user } : {}),
    ...(clientId !== undefined ? { clientId } : {}),
  };
  return invalidEntity(e) ?? e;
}

function writeEntity(l: Layout, w: KafkaWriter, e: QuotaEntity): void {
  const parts: Array<[string, string | null]> = [];
  if (e.user !== undefined) parts.push(["user", e.user]);
  if (e.clientId !== undefined) parts.push(["client-id", e.clientId]);
  l.writeArray(w, parts, (x, [type, name]) => {
    l.writeString(x, type);
    l.writeString(x, name);
    l.writeTags(x);
  });
}

export async function describeClientQuotasResponse(
  deps: KafkaDeps,
  version: number,
  r: KafkaReader,
): Promise<Buffer> {
  const l = new Layout(version >= 1);
  let bad: string | undefined;
  const components = l.array(r, (x) => {
    const entityType = l.string(x);
    const matchType = x.int8();
    const match = l.nullableString(x);
    l.tags(x);
    if (entityType !== "user" && entityType !== "client-id") {
      bad ??= `unknown entity type "${entityType}"`;
      return undefined;
    }
    if (matchType === MATCH_EXACT) {
      if (match === null) bad ??= "an exact match names the entity";
      return { entityType, match: "exact" as const, name: match ?? "" };
    }
    if (matchType === MATCH_DEFAULT) return { entityType, match: "default" as const };
    if (matchType === MATCH_ANY) return { entityType, match: "any" as const };
    bad ??= `unknown match type ${matchType}`;
    return undefined;
  });
  const strict = r.bool();
  l.tags(r);
  let error: TernError | undefined = bad ? new TernError("INVALID_REQUEST", bad) : undefined;
  if (error === undefined && !clusterAllowed(deps.access, "describe-configs"))
    error = new TernError(
      "CLUSTER_AUTHORIZATION_FAILED",
      "DescribeClientQuotas needs DESCRIBE_CONFIGS on the cluster",
    );
  let entries: ClientQuotaEntry[] = [];
  if (error === undefined) {
    try {
      if (deps.quotaAdmin === undefined)
        throw new TernError("UNKNOWN_SERVER_ERROR", "this listener cannot list client quotas");
      entries = await deps.quotaAdmin.describeClientQuotas(
        components as QuotaFilterComponent[],
        strict,
      );
    } catch (e) {
      error = errorOf(e);
    }
  }
  const w = new KafkaWriter(128 + entries.length * 64);
  w.int32(0) // throttle_time_ms
    .int16(kafkaErrorCode(error?.errorName));
  l.writeString(w, error?.message ?? null);
  if (error !== undefined) {
    // Entries: null on error.
    if (l.flexible) w.uvarint(0);
    else w.int32(-1);
  } else
    l.writeArray(w, entries, (x, e) => {
      writeEntity(l, x, e.entity);
      l.writeArray(x, Object.entries(e.values), (y, [key, value]) => {
        l.writeString(y, key);
        y.float64(value);
        l.writeTags(y);
      });
      l.writeTags(x);
    });
  l.writeTags(w);
  return w.finish();
}

export async function alterClientQuotasResponse(
  deps: KafkaDeps,
  version: number,
  r: KafkaReader,
): Promise<Buffer> {
  const l = new Layout(version >= 1);
  const entries = l.array(r, (x) => {
    const raw = l.array(x, (y) => {
      const type = l.string(y);
      const name = l.nullableString(y);
      l.tags(y);
      return { type, name };
    });
    const ops = l.array(x, (y) => {
      const key = l.string(y);
      const value = y.float64();
      const remove = y.bool();
      l.tags(y);
      return remove ? { key, remove: true } : { key, value };
    });
    l.tags(x);
    return { raw, entity: entityOf(raw), ops };
  });
  const validateOnly = r.bool();
  l.tags(r);
  let results: Array<TernError | undefined>;
  if (!clusterAllowed(deps.access, "alter-configs"))
    results = entries.map(
      () =>
        new TernError(
          "CLUSTER_AUTHORIZATION_FAILED",
          "AlterClientQuotas needs ALTER_CONFIGS on the cluster",
        ),
    );
  else {
    const valid = entries.filter(
      (e): e is typeof e & { entity: QuotaEntity } => typeof e.entity !== "string",
    );
    let answers: Array<TernError | undefined> = [];
    try {
      if (deps.quotaAdmin === undefined)
        throw new TernError("UNKNOWN_SERVER_ERROR", "this listener cannot change client quotas");
      answers =
        valid.length === 0
          ? []
          : await deps.quotaAdmin.alterClientQuotas(
              valid.map((e) => ({ entity: e.entity, ops: e.ops })),
              validateOnly,
            );
    } catch (e) {
      answers = valid.map(() => errorOf(e));
    }
    let next = 0;
    results = entries.map((e) =>
      typeof e.entity === "string" ? new TernError("INVALID_REQUEST", e.entity) : answers[next++],
    );
  }
  const w = new KafkaWriter(64 + entries.length * 32);
  w.int32(0); // throttle_time_ms
  const answered = entries.map((e, i) => ({ ...e, err: results[i] }));
  l.writeArray(w, answered, (x, e) => {
    const err = e.err;
    x.int16(kafkaErrorCode(err?.errorName));
    l.writeString(x, err?.message ?? null);
    l.writeArray(x, e.raw, (y, c) => {
      l.writeString(y, c.type);
      l.writeString(y, c.name);
      l.writeTags(y);
    });
    l.writeTags(x);
  });
  l.writeTags(w);
  return w.finish();
}
