// Turns the txn benchmark's measurements into its JSON Lines (CONVENTIONS.md "Benchmark
// output"). Pure, so the arithmetic of the overhead figures is unit-tested.
import type { FetchResult, ProduceResult } from "./_txn-job.js";

export interface Figure {
  readonly bench: "txn";
  readonly case: string;
  readonly metric:
    "records_per_s" | "mb_per_s" | "overhead_pct" | "commit_latency_p50" | "commit_latency_p99";
  readonly value: number;
  readonly unit: string;
  readonly [extra: string]: unknown;
}

export interface TxnMeasurements {
  /** Several runs each (alternating cases); their records and times add up. */
  readonly idempotent: readonly ProduceResult[];
  readonly transactional: readonly ProduceResult[];
  /** Several full reads each (alternating isolation levels); the fastest counts. */
  readonly readUncommitted: readonly FetchResult[];
  readonly readCommitted: readonly FetchResult[];
}

export interface TxnSettings {
  readonly durationS: number;
  readonly partitions: number;
  readonly recordBytes: number;
  readonly batchBytes: number;
  readonly commitIntervalMs: number;
  readonly maxInFlight: number;
}

const BYTES_PER_MB = 1e6;

/** Rounded to 2 decimals; JSON has no Infinity/NaN, so a rate over no time is 0. */
function round2(x: number): number {
  return Number.isFinite(x) ? Math.round(x * 100) / 100 : 0;
}

export function ratePerS(count: number, elapsedS: number): number {
  return elapsedS > 0 ? count / elapsedS : 0;
}

/**
 * How much slower `measured` is than `baseline`, in percent of the baseline: 25 means a quarter
 * fewer records per second; negative means faster. 0 when the baseline is 0 (nothing to compare).
 */
export function overheadPct(baselinePerS: number, measuredPerS: number): number {
  return baselinePerS > 0 ? ((baselinePerS - measuredPerS) / baselinePerS) * 100 : 0;
}

/** The read with the highest records/s (the least disturbed by the machine's other load). */
export function fastest(reads: readonly FetchResult[]): FetchResult {
  if (reads.length === 0) throw new Error("no reads to pick from");
  return reads.reduce((best, r) =>
    ratePerS(r.records, r.elapsedS) > ratePerS(best.records, best.elapsedS) ? r : best,
  );
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** The runs of one produce case as one: counts and times add up, latency samples are pooled. */
export function combineProduce(runs: readonly ProduceResult[]): ProduceResult {
  if (runs.length === 0) throw new Error("no produce runs to combine");
  const sum = (f: (r: ProduceResult) => number): number => runs.reduce((acc, r) => acc + f(r), 0);
  return {
    kind: "produce",
    records: sum((r) => r.records),
    bytes: sum((r) => r.bytes),
    warmupRecords: sum((r) => r.warmupRecords),
    elapsedS: sum((r) => r.elapsedS),
    failedRecords: sum((r) => r.failedRecords),
    commits: sum((r) => r.commits),
    aborts: sum((r) => r.aborts),
    commitLatenciesMs: runs.flatMap((r) => r.commitLatenciesMs),
  };
}

export function txnFigures(m: TxnMeasurements, s: TxnSettings): Figure[] {
  const common = { partitions: s.partitions, record_bytes: s.recordBytes, rf: 3 };
  const produceExtra = {
    ...common,
    duration_s: s.durationS,
    batch_bytes: s.batchBytes,
    max_in_flight_per_partition: s.maxInFlight,
    acks: "all",
  };
  const figures: Figure[] = [];
  const rates = (
    kase: string,
    records: number,
    bytes: number,
    elapsedS: number,
    extra: Record<string, unknown>,
  ): number => {
    const recordsPerS = ratePerS(records, elapsedS);
    figures.push({
      bench: "txn",
      case: kase,
      metric: "records_per_s",
      value: round2(recordsPerS),
      unit: "1/s",
      records,
      elapsed_s: round2(elapsedS),
      ...extra,
    });
    figures.push({
      bench: "txn",
      case: kase,
      metric: "mb_per_s",
      value: round2(ratePerS(bytes, elapsedS) / BYTES_PER_MB),
      unit: "MB/s",
      ...extra,
    });
    return recordsPerS;
  };
  const i = combineProduce(m.idempotent);
  const t = combineProduce(m.transactional);
  const idem = rates("produce-idempotent", i.records, i.bytes, i.elapsedS, {
    ...produceExtra,
    runs: m.idempotent.length,
    failed_records: i.failedRecords,
  });
  const txnExtra = {
    ...produceExtra,
    runs: m.transactional.length,
    commit_interval_ms: s.commitIntervalMs,
    commits: t.commits,
    aborts: t.aborts,
    failed_records: t.failedRecords,
  };
  const txn = rates("produce-transactional", t.records, t.bytes, t.elapsedS, txnExtra);
  const latencies = [...t.commitLatenciesMs].sort((a, b) => a - b);
  figures.push({
    bench: "txn",
    case: "produce-transactional",
    metric: "commit_latency_p50",
    value: round2(percentile(latencies, 50)),
    unit: "ms",
    ...txnExtra,
  });
  figures.push({
    bench: "txn",
    case: "produce-transactional",
    metric: "commit_latency_p99",
    value: round2(percentile(latencies, 99)),
    unit: "ms",
    ...txnExtra,
  });
  figures.push({
    bench: "txn",
    case: "produce-transactional-vs-idempotent",
    metric: "overhead_pct",
    value: round2(overheadPct(idem, txn)),
    unit: "%",
    commit_interval_ms: s.commitIntervalMs,
    ...common,
  });
  const fetchRates = (reads: readonly FetchResult[], kase: string): number => {
    const best = fastest(reads);
    const extra = {
      ...common,
      topic_data: "transactional",
      reads: reads.length,
      records_per_s_samples: reads.map((r) => round2(ratePerS(r.records, r.elapsedS))),
      complete: reads.every((r) => r.complete),
      end_offset_sum: best.endOffsetSum,
    };
    return rates(kase, best.records, best.bytes, best.elapsedS, extra);
  };
  const uncommitted = fetchRates(m.readUncommitted, "fetch-read_uncommitted");
  const committed = fetchRates(m.readCommitted, "fetch-read_committed");
  figures.push({
    bench: "txn",
    case: "fetch-read_committed-vs-read_uncommitted",
    metric: "overhead_pct",
    value: round2(overheadPct(uncommitted, committed)),
    unit: "%",
    ...common,
  });
  return figures;
}

/**
 * What a read of the transactional topic must return: every committed record (the warm-up's
 * included). Aborted records may appear under read_uncommitted only. Empty when all is well.
 */
export function fetchAnomalies(m: TxnMeasurements): string[] {
  const t = combineProduce(m.transactional);
  const committed = t.records + t.warmupRecords;
  const out: string[] = [];
  for (const r of m.readCommitted) {
    if (!r.complete) out.push("a read_committed read stopped before the last stable offset");
    if (r.records !== committed)
      out.push(`read_committed returned ${r.records} records, ${committed} were committed`);
  }
  for (const r of m.readUncommitted) {
    if (!r.complete) out.push("a read_uncommitted read stopped before the high watermark");
    if (r.records < committed)
      out.push(
        `read_uncommitted returned ${r.records} records, fewer than the ${committed} committed`,
      );
  }
  return out;
}
