// The run's report: the full JSON (seed, schedule, what each fault did, counts, anomalies with
// examples, recovery times), a short readable summary, and the one-line JSON the conventions
// fix (docs: /work/shared/CONVENTIONS.md "Chaos report").
import type { AnomalyType, CheckResult, History, TxnOp } from "../../libs/verify/history.js";
import type { FaultEvent, FaultStep } from "./faults/fault-types.js";
import type { LateRequestStats } from "./faults/late-requests.js";
import type { SettleResult } from "./workloads/settle.js";
import type { TxnLoopStats } from "./workloads/txn-loop.js";
import type { SlowInit } from "./workloads/txn-session.js";
import type {
  CleanerTotals,
  CompactionAnomaly,
  CompactionCheck,
} from "./checker/compaction-checker.js";

/** Anomalies of the run itself (not of the history): settling could not finish. */
export type RunAnomaly =
  | "unsettled-key"
  | "unfenced-transactional-id"
  | "fault-error"
  | "zombie-not-fenced"
  | "txn-ended-by-clock-step"
  | "fault-violation"
  | "partitions-not-taken-over";

export interface Recovery {
  kill_to_leader_s: number | null;
  kill_to_commit_s: number | null;
  heal_to_lso_s: number | null;
}

export interface ChaosReport {
  scenario: string;
  seed: number;
  pass: boolean;
  durationMs: number;
  workload: string;
  topic: string;
  counts: CheckResult["counts"];
  anomalies: Partial<Record<AnomalyType | RunAnomaly | CompactionAnomaly, number>>;
  examples: ReadonlyArray<{ type: string; message: string; details: Record<string, unknown> }>;
  /** The compacted workload: what its checker counted and what the cleaners did. */
  compaction?: CompactionCheck["stats"] & { cleaner: CleanerTotals };
  /** Worst (max) recovery over the run's faults. */
  recovery: Recovery;
  schedule: readonly FaultStep[];
  events: readonly FaultEvent[];
  settle: { fenced: number; notFenced: string[]; unreadable: string[] };
  errors: Record<string, number>;
  lateRequests: LateRequestStats;
  finalRecords: number;
  /** InitProducerId calls of this run that took 2 s or more. */
  slowInits: readonly SlowInit[];
  reportPath?: string;
}

function max(values: ReadonlyArray<number | undefined>): number | null {
  const xs = values.filter((v): v is number => v !== undefined);
  return xs.length === 0 ? null : Math.round(Math.max(...xs) * 1000) / 1000;
}

/** Seconds from each kill to the first commit after it (of the process the fault aimed at, or polling the keys it aimed at, when it aimed). */
export function killToCommit(events: readonly FaultEvent[], txns: readonly TxnOp[]): void {
  const commits = txns
    .filter((t) => t.outcome === "ok")
    .sort((a, b) => a.completedMs - b.completedMs);
  for (const e of events) {
    if (e.killMs === undefined) continue;
    const polls = (t: TxnOp): boolean =>
      t.ops.some(
        (op) => op.f === "poll" && e.aimsAtKeys!.some((k) => (op.reads[k]?.length ?? 0) > 0),
      );
    const first = commits.find(
      (t) =>
        t.completedMs > e.killMs! &&
        (e.aimsAtProcess === undefined || t.process === e.aimsAtProcess) &&
        (e.aimsAtKeys === undefined || polls(t)),
    );
    if (first) e.killToCommitS = Math.round(first.completedMs - e.killMs) / 1000;
  }
}

/** The run anomaly a fault step's violations count as. */
const VIOLATION_ANOMALY: Readonly<Record<string, RunAnomaly>> = {
  zombie: "zombie-not-fenced",
  "clock-skew": "txn-ended-by-clock-step",
};

export function buildReport(r: {
  scenario: string;
  seed: number;
  durationMs: number;
  workload: string;
  topic: string;
  schedule: readonly FaultStep[];
  events: FaultEvent[];
  check: CheckResult;
  history: History;
  settled: SettleResult;
  stats: TxnLoopStats;
  late: LateRequestStats;
  slowInits?: readonly SlowInit[];
  /** The compacted workload's own check (its history is not the queue checker's). */
  compaction?: { check: CompactionCheck; cleaner: CleanerTotals };
}): ChaosReport {
  killToCommit(r.events, r.history.txns);
  const anomalies: ChaosReport["anomalies"] = {
    ...r.check.anomalies,
    ...r.compaction?.check.anomalies,
  };
  if (r.settled.unreadable.length > 0) anomalies["unsettled-key"] = r.settled.unreadable.length;
  if (r.settled.notFenced.length > 0)
    anomalies["unfenced-transactional-id"] = r.settled.notFenced.length;
  const faultErrors = r.events.filter((e) => e.error !== undefined).length;
  if (faultErrors > 0) anomalies["fault-error"] = faultErrors;
  // Guarantees a fault step saw broken: a fenced zombie's request accepted, a transaction a clock step ended early.
  for (const e of r.events) {
    const n = e.violations?.length ?? 0;
    if (n === 0) continue;
    const type = VIOLATION_ANOMALY[e.action] ?? "fault-violation";
    anomalies[type] = (anomalies[type] ?? 0) + n;
  }
  // A killed group member's partitions must be copied again by someone (after its session timeout).
  const stranded = r.events.filter(
    (e) =>
      (e.action === "kill-member" || e.action === "pause-member") &&
      (e.aimsAtKeys?.length ?? 0) > 0 &&
      e.killToCommitS === undefined,
  ).length;
  if (stranded > 0) anomalies["partitions-not-taken-over"] = stranded;
  return {
    scenario: r.scenario,
    seed: r.seed,
    pass: Object.keys(anomalies).length === 0,
    durationMs: r.durationMs,
    workload: r.workload,
    topic: r.topic,
    counts: r.check.counts,
    anomalies,
    examples: [...r.check.examples, ...(r.compaction?.check.examples ?? [])],
    ...(r.compaction
      ? { compaction: { ...r.compaction.check.stats, cleaner: r.compaction.cleaner } }
      : {}),
    recovery: {
      kill_to_leader_s: max(r.events.map((e) => e.killToLeaderS)),
      kill_to_commit_s: max(r.events.map((e) => e.killToCommitS)),
      heal_to_lso_s: max(r.events.map((e) => e.healToLsoS)),
    },
    schedule: r.schedule,
    events: r.events,
    settle: {
      fenced: r.settled.fenced.length,
      notFenced: r.settled.notFenced,
      unreadable: r.settled.unreadable,
    },
    errors: r.stats.errors,
    lateRequests: r.late,
    finalRecords: Object.values(r.history.finalReads).reduce((n, pairs) => n + pairs.length, 0),
    slowInits: r.slowInits ?? [],
  };
}

/** The last stdout line, exactly the fields CONVENTIONS.md names. */
export function oneLine(report: ChaosReport): string {
  return JSON.stringify({
    scenario: report.scenario,
    seed: report.seed,
    pass: report.pass,
    committed: report.counts.committed,
    aborted: report.counts.aborted,
    unknown: report.counts.unknown,
    anomalies: report.anomalies,
    recovery: {
      kill_to_leader_s: report.recovery.kill_to_leader_s,
      kill_to_commit_s: report.recovery.kill_to_commit_s,
      heal_to_lso_s: report.recovery.heal_to_lso_s,
    },
    report: report.reportPath ?? "",
  });
}

/** A failed run that produced no history (cluster did not start, partitions impossible...). */
export function failedLine(scenario: string, seed: number, error: string, reportPath = ""): string {
  return JSON.stringify({
    scenario,
    seed,
    pass: false,
    committed: 0,
    aborted: 0,
    unknown: 0,
    anomalies: { "run-error": 1 },
    recovery: { kill_to_leader_s: null, kill_to_commit_s: null },
    report: reportPath,
    error,
  });
}

export function summary(report: ChaosReport): string {
  const lines = [
    `${report.pass ? "PASS" : "FAIL"} ${report.scenario} seed=${report.seed} workload=${report.workload} duration=${report.durationMs / 1000}s`,
    `  txns: ${report.counts.committed} committed, ${report.counts.aborted} aborted, ${report.counts.unknown} unknown; ${report.finalRecords} records read back`,
    `  faults: ${report.events.map((e) => `${e.action}@${(e.startedMs / 1000).toFixed(1)}s[${e.nodes.join(" ")}${e.error ? ` ERROR ${e.error}` : ""}${e.note ? ` (${e.note})` : ""}]`).join(", ") || "none"}`,
    `  recovery (max): kill->leader ${report.recovery.kill_to_leader_s ?? "-"} s, kill->commit ${report.recovery.kill_to_commit_s ?? "-"} s, heal->LSO ${report.recovery.heal_to_lso_s ?? "-"} s`,
    ...(report.slowInits.length > 0
      ? [
          `  slow InitProducerId: ${report.slowInits.length}, max ${Math.max(...report.slowInits.map((x) => x.tookMs))} ms`,
        ]
      : []),
    ...(report.compaction
      ? [
          `  compaction: ${report.compaction.keys} keys, ${report.compaction.writes} writes, ${report.compaction.recordsRead} records read back (${report.compaction.tombstonesRead} tombstones; ${report.compaction.deletedKeysGone} deleted keys gone), ${report.compaction.committedRemoved} committed writes cleaned away, ${report.compaction.runReads} records read during the run; cleaners: ${report.compaction.cleaner.cleans} cleans, ${report.compaction.cleaner.bytesRead} bytes read, ${report.compaction.cleaner.bytesWritten} written`,
        ]
      : []),
    `  anomalies: ${Object.keys(report.anomalies).length === 0 ? "none" : JSON.stringify(report.anomalies)}`,
  ];
  for (const ex of report.examples.slice(0, 5)) lines.push(`    ${ex.type}: ${ex.message}`);
  if (report.reportPath) lines.push(`  report: ${report.reportPath}`);
  return lines.join("\n");
}
