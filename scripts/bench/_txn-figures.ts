// Turns the txn benchmark's measurements into its JSON Lines (CONVENTIONS.md "Benchmark
// output"). Pure, so the arithmetic of the overhead figures is unit-tested.
import type { FetchResult, PacedResult, ProduceResult } from "./_txn-job.js";

export interface Figure {
  readonly bench: "txn";
  readonly case: string;
  readonly metric:
    | "records_per_s"
    | "mb_per_s"
    | "overhead_pct"
    | "commit_latency_p50"
    | "commit_latency_p99"
    | "cluster_cpu_ms_per_mb"
    | "cluster_cores_busy"
    | "cluster_cpu_ms_per_commit"
    | "cluster_cpu_ms_per_txn"
    | "txn_latency_p50";
  readonly value: number;
  readonly unit: string;
  readonly [extra: string]: unknown;
}

export type ClusterRole = "controller" | "broker" | "coordinator";

/** One produce run and the CPU each role's cluster processes used meanwhile (utime + stime). */
export interface ProducePhase extends ProduceResult {
  readonly cpuMsByRole: Readonly<Record<ClusterRole, number>>;
}

const ROLES: readonly ClusterRole[] = ["controller", "broker", "coordinator"];

function cpuMsOf(runs: readonly ProducePhase[], role?: ClusterRole): number {
  return runs.reduce(
    (n, p) =>
      n +
      (role === undefined ? ROLES.reduce((m, r) => m + p.cpuMsByRole[r], 0) : p.cpuMsByRole[role]),
    0,
  );
}

/**
 * The cluster CPU a commit costs beyond its records: the transactional runs' CPU less what the
 * idempotent runs spent on as many bytes, per commit. Stable where throughput is not: on a
 * CPU-bound machine this is what the overhead is made of.
 */
export function cpuMsPerCommit(
  idempotent: readonly ProducePhase[],
  transactional: readonly ProducePhase[],
  role?: ClusterRole,
): number {
  const idemBytes = idempotent.reduce((n, r) => n + r.bytes, 0);
  const txnBytes = transactional.reduce((n, r) => n + r.bytes, 0);
  const commits = transactional.reduce((n, r) => n + r.commits, 0);
  if (idemBytes <= 0 || commits <= 0) return 0;
  const perByte = cpuMsOf(idempotent, role) / idemBytes;
  return (cpuMsOf(transactional, role) - perByte * txnBytes) / commits;
}

export interface TxnMeasurements {
  /** Several runs each (alternating cases); their records and times add up. */
  readonly idempotent: readonly ProducePhase[];
  readonly transactional: readonly ProducePhase[];
  /** Several full reads each (alternating isolation levels); the fastest counts. */
  readonly readUncommitted: readonly FetchResult[];
  readonly readCommitted: readonly FetchResult[];
}

/**
 * The paced case: the cluster's CPU by role while idle (just before) and while small
 * transactions ran at a fixed rate.
 */
export interface PacedMeasurement {
  readonly idleS: number;
  readonly idleCpuMsByRole: Readonly<Record<ClusterRole, number>>;
  readonly run: PacedResult;
  readonly transactionsPerS: number;
  readonly cpuMsByRole: Readonly<Record<ClusterRole, number>>;
}

/** CPU per committed paced transaction beyond the idle cluster's (heartbeats, ticks), by role. */
export function cpuMsPerPacedTxn(p: PacedMeasurement, role: ClusterRole): number {
  if (p.run.commits <= 0 || p.idleS <= 0) return 0;
  const idleMs = (p.idleCpuMsByRole[role] / p.idleS) * p.run.elapsedS;
  return (p.cpuMsByRole[role] - idleMs) / p.run.commits;
}

/** What every figure says about the topic written. */
function topicExtra(s: TxnSettings) {
  return { partitions: s.partitions, record_bytes: s.recordBytes, rf: 3 };
}

export function pacedFigures(p: PacedMeasurement, s: TxnSettings): Figure[] {
  if (p.run.commits <= 0) return [];
  const extra = {
    ...topicExtra(s),
    records_per_txn: s.partitions,
    txn_per_s_target: p.transactionsPerS,
    commits: p.run.commits,
    aborts: p.run.aborts,
    elapsed_s: round2(p.run.elapsedS),
    idle_s: round2(p.idleS),
  };
  const byRole = Object.fromEntries(ROLES.map((r) => [`${r}_ms`, round2(cpuMsPerPacedTxn(p, r))]));
  const latencies = [...p.run.transactionLatenciesMs].sort((a, b) => a - b);
  return [
    {
      bench: "txn",
      case: "paced-transactions",
      metric: "cluster_cpu_ms_per_txn",
      value: round2(ROLES.reduce((n, r) => n + cpuMsPerPacedTxn(p, r), 0)),
      unit: "ms",
      ...byRole,
      ...extra,
    },
    {
      bench: "txn",
      case: "paced-transactions",
      metric: "txn_latency_p50",
      value: round2(percentile(latencies, 50)),
      unit: "ms",
      ...extra,
    },
  ];
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
  const common = topicExtra(s);
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
  // CPU per MB tells a dearer record from a stalled pipeline: a stall leaves cores idle
  // (cluster_cores_busy falls) at the same CPU per MB.
  const cpu = (kase: string, runs: readonly ProducePhase[], r: ProduceResult): void => {
    const cpuMs = cpuMsOf(runs);
    if (cpuMs <= 0 || r.bytes <= 0 || r.elapsedS <= 0) return;
    figures.push({
      bench: "txn",
      case: kase,
      metric: "cluster_cpu_ms_per_mb",
      value: round2(cpuMs / (r.bytes / BYTES_PER_MB)),
      unit: "ms/MB",
      ...common,
    });
    figures.push({
      bench: "txn",
      case: kase,
      metric: "cluster_cores_busy",
      value: round2(cpuMs / 1000 / r.elapsedS),
      unit: "1",
      ...common,
    });
  };
  cpu("produce-idempotent", m.idempotent, i);
  cpu("produce-transactional", m.transactional, t);
  if (t.commits > 0 && cpuMsOf(m.idempotent) > 0)
    figures.push({
      bench: "txn",
      case: "produce-transactional",
      metric: "cluster_cpu_ms_per_commit",
      value: round2(cpuMsPerCommit(m.idempotent, m.transactional)),
      unit: "ms",
      ...Object.fromEntries(
        ROLES.map((r) => [`${r}_ms`, round2(cpuMsPerCommit(m.idempotent, m.transactional, r))]),
      ),
      commit_interval_ms: s.commitIntervalMs,
      ...common,
    });
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
      topic_data: "idempotent and transactional",
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
 * What a read of the measured topic must return: every acknowledged idempotent record and every
 * committed one (the warm-up records of each run included). Aborted records may appear under
 * read_uncommitted only; an idempotent send that failed may or may not have been written, so
 * each one widens the expected range by one. Empty when all is well.
 */
export function fetchAnomalies(m: TxnMeasurements): string[] {
  const t = combineProduce(m.transactional);
  const i = combineProduce(m.idempotent);
  const committed = t.records + t.warmupRecords + i.records + i.warmupRecords;
  const maybe = i.failedRecords;
  const expected = maybe === 0 ? `${committed}` : `${committed} to ${committed + maybe}`;
  const out: string[] = [];
  for (const r of m.readCommitted) {
    if (!r.complete) out.push("a read_committed read stopped before the last stable offset");
    if (r.records < committed || r.records > committed + maybe)
      out.push(`read_committed returned ${r.records} records, expected ${expected}`);
  }
  for (const r of m.readUncommitted) {
    if (!r.complete) out.push("a read_uncommitted read stopped before the high watermark");
    if (r.records < committed)
      out.push(
        `read_uncommitted returned ${r.records} records, fewer than the ${committed} acknowledged`,
      );
  }
  return out;
}
