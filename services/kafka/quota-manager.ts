// Client quota enforcement on the Kafka listener, as Kafka's ClientQuotaManager does it: each
// quota's usage is a rate over `samples` windows of `sampleMs` (quota.window.num ×
// quota.window.size.seconds, 11 × 1 s by default); a request that takes its entity over the
// quota gets a throttle time, (rate − quota) / quota × window, reported in the answer's
// throttle_time_ms, and its connection is muted (nothing read from it) for that long after the
// answer (KIP-219). Produce counts the request's bytes, Fetch the answer's bytes, the request
// quota the listener's event-loop time on the request (request_percentage: percent of one
// second per second). Which quota applies is the cluster metadata's (libs/common/client-quota.ts).
//
// Cost: with no quota in the metadata a request costs one property read; with quotas it costs a
// cached lookup (per connection: table, principal and client id unchanged) and, per quota
// that applies, one update of a fixed-size sample ring. Sensors are bounded (SENSORS_MAX, the
// least recently used goes) and idle ones expire (Kafka's one hour).
import {
  QuotaTable,
  quotaUserOf,
  type AppliedQuota,
  type ClientQuotaEntry,
  type QuotaKey,
} from "../../libs/common/client-quota.js";
import type { QuotaMetrics } from "./quota-metrics.js";
import type { QuotaType } from "./quota-type.js";

export interface QuotaWindow {
  /** quota.window.num: samples the rate is measured over. */
  readonly samples: number;
  /** quota.window.size.seconds, in ms: one sample's length. */
  readonly sampleMs: number;
}

export const QUOTA_WINDOW_DEFAULT: QuotaWindow = { samples: 11, sampleMs: 1_000 };
/** Sensors (entities × quota types with usage) one process keeps. */
export const SENSORS_MAX = 10_000;
/** A sensor unused this long is forgotten (Kafka's inactive sensor expiry). */
export const SENSOR_IDLE_MS = 3_600_000;

/** One usage rate over a ring of samples (Kafka's SampledStat + Rate). */
export class RateSensor {
  private readonly totals: Float64Array;
  private readonly starts: Float64Array;
  private current = 0;
  lastUsedMs = 0;

  constructor(private readonly window: QuotaWindow) {
    this.totals = new Float64Array(window.samples);
    this.starts = new Float64Array(window.samples).fill(-Infinity);
  }

  /** Adds `value` at `nowMs`; answers how long to throttle for the limit (0 within it). */
  record(value: number, nowMs: number, limit: number): number {
    const { samples, sampleMs } = this.window;
    this.lastUsedMs = nowMs;
    if (nowMs - this.starts[this.current]! >= sampleMs) {
      this.current = (this.current + 1) % samples;
      this.starts[this.current] = nowMs;
      this.totals[this.current] = 0;
    }
    this.totals[this.current]! += value;
    // Rate over the live samples; the window counts at least samples − 1 full ones (Kafka's
    // Rate.windowSize), so a new entity cannot burst past the quota in its first sample.
    const horizon = nowMs - samples * sampleMs;
    let total = 0;
    let oldest = nowMs;
    for (let i = 0; i < samples; i++) {
      const start = this.starts[i]!;
      if (start <= horizon) continue;
      total += this.totals[i]!;
      if (start < oldest) oldest = start;
    }
    let elapsed = nowMs - oldest;
    const full = Math.floor(elapsed / sampleMs);
    if (full < samples - 1) elapsed += (samples - 1 - full) * sampleMs;
    const windowMs = Math.max(elapsed, 1);
    const rate = (total * 1000) / windowMs;
    if (rate <= limit) return 0;
    // Kafka's QuotaUtils.throttleTime, bounded by the whole window here (one huge request
    // cannot mute its connection for hours).
    return Math.min(Math.round(((rate - limit) / limit) * windowMs), samples * sampleMs);
  }
}

/** A quota with its sensor's key (made once per connection, not per request). */
interface KeyedQuota extends AppliedQuota {
  readonly key: string;
}

/** The quotas one connection's requests fall under, cached while nothing they depend on changes. */
interface Applied {
  readonly table: QuotaTable;
  readonly principal: string;
  readonly clientId: string;
  readonly produce: KeyedQuota | undefined;
  readonly fetch: KeyedQuota | undefined;
  readonly request: KeyedQuota | undefined;
}

const KEY_OF: Record<QuotaType, QuotaKey> = {
  produce: "producer_byte_rate",
  fetch: "consumer_byte_rate",
  request: "request_percentage",
};

export class ClientQuotaManager {
  private readonly window: QuotaWindow;
  private readonly sensors = new Map<string, RateSensor>();
  private tableOf: { entries: readonly ClientQuotaEntry[]; table: QuotaTable } | undefined;
  private lastSweepMs = 0;

  constructor(
    private readonly options: {
      window?: QuotaWindow;
      metrics?: QuotaMetrics;
      /** Monotonic milliseconds: the rate windows measure durations. */
      now: () => number;
    },
  ) {
    this.window = options.window ?? QUOTA_WINDOW_DEFAULT;
  }

  /** The compiled table of these entries (compiled again only when the metadata's array changes). */
  private table(entries: readonly ClientQuotaEntry[]): QuotaTable {
    if (this.tableOf?.entries !== entries)
      this.tableOf = { entries, table: new QuotaTable(entries) };
    return this.tableOf.table;
  }

  /** One connection's view: caches which quotas apply to it. */
  forConnection(): ConnectionQuotas {
    return new ConnectionQuotas(this);
  }

  /** @internal ConnectionQuotas' lookup. */
  applied(
    entries: readonly ClientQuotaEntry[],
    principal: string,
    clientId: string,
    cached: Applied | undefined,
  ): Applied {
    const table = this.table(entries);
    if (cached?.table === table && cached.principal === principal && cached.clientId === clientId)
      return cached;
    const user = quotaUserOf(principal);
    const keyed = (type: QuotaType): KeyedQuota | undefined => {
      const q = table.resolve(KEY_OF[type], user, clientId);
      return q === undefined ? undefined : { ...q, key: `${type}\u0000${q.sensor}` };
    };
    return {
      table,
      principal,
      clientId,
      produce: keyed("produce"),
      fetch: keyed("fetch"),
      request: keyed("request"),
    };
  }

  /** Records usage under a quota; answers the throttle time (ms, 0 within the quota). */
  record(type: QuotaType, q: KeyedQuota, value: number): number {
    const now = this.options.now();
    const key = q.key;
    let sensor = this.sensors.get(key);
    if (sensor === undefined) {
      this.sweep(now);
      sensor = new RateSensor(this.window);
      this.sensors.set(key, sensor);
    } else {
      // Least recently used last: the bound evicts from the front.
      this.sensors.delete(key);
      this.sensors.set(key, sensor);
    }
    const throttleMs = sensor.record(value, now, q.limit);
    if (throttleMs > 0) this.options.metrics?.throttled(type, q.principal, throttleMs);
    return throttleMs;
  }

  private sweep(now: number): void {
    if (this.sensors.size >= SENSORS_MAX) {
      const oldest = this.sensors.keys().next().value;
      if (oldest !== undefined) this.sensors.delete(oldest);
    }
    if (now - this.lastSweepMs < 60_000) return;
    this.lastSweepMs = now;
    for (const [key, s] of this.sensors) {
      if (now - s.lastUsedMs < SENSOR_IDLE_MS) break; // in use order: the rest are newer
      this.sensors.delete(key);
    }
  }

  sensorCount(): number {
    return this.sensors.size;
  }
}

/** Per connection: which quotas apply, and the throttle of one answered request. */
export class ConnectionQuotas {
  private cached: Applied | undefined;

  constructor(private readonly manager: ClientQuotaManager) {}

  /** The quotas for this request's principal and client id; undefined when none applies. */
  lookup(
    entries: readonly ClientQuotaEntry[] | undefined,
    principal: string,
    clientId: string,
  ): Applied | undefined {
    if (entries === undefined || entries.length === 0) return undefined;
    this.cached = this.manager.applied(entries, principal, clientId, this.cached);
    const a = this.cached;
    return a.produce || a.fetch || a.request ? a : undefined;
  }

  /**
   * Records one answered request's usage; answers the throttle time: the largest of its
   * byte-rate quota's and its request quota's (Kafka throttles by the larger).
   */
  throttle(
    a: Applied,
    kind: "produce" | "fetch" | "other",
    bytes: number,
    requestMs: number,
  ): number {
    let ms = 0;
    if (kind === "produce" && a.produce) ms = this.manager.record("produce", a.produce, bytes);
    else if (kind === "fetch" && a.fetch) ms = this.manager.record("fetch", a.fetch, bytes);
    // request_percentage: percent of one second per second, so usage is ms / 10.
    if (a.request) ms = Math.max(ms, this.manager.record("request", a.request, requestMs / 10));
    return ms;
  }
}
