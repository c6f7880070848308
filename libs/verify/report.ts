// The verdict of a `tern verify` run: the checker's result plus what the run itself could not
// do (an id no new instance could fence leaves unknown outcomes unsettled), as a JSON document
// and as a short text for people.
import type { CheckResult } from "./history.js";
import type { WorkloadResult } from "./workload.js";

/** Examples per anomaly type in the text report (--json has every example the checker kept). */
const TEXT_EXAMPLES_PER_TYPE = 2;

export interface VerifyReport {
  readonly pass: boolean;
  readonly protocol: "grpc" | "kafka";
  readonly runId: string;
  readonly durationS: number;
  readonly topics: string[];
  readonly counts: CheckResult["counts"] & {
    /** Unknown outcomes the final read showed committed. */
    readonly unknownCommitted: number;
    readonly polls: number;
    readonly recordsPolled: number;
    readonly finalRecords: number;
  };
  /** Anomaly type -> count; empty when the run passed. */
  readonly anomalies: Record<string, number>;
  readonly examples: ReadonlyArray<{ type: string; message: string }>;
  /** Copier partitions not drained and keys the final read did not complete (context for anomalies). */
  readonly undrained: string[];
  readonly incompleteReads: string[];
  /** Client errors seen during the run, by name: expected under faults, not anomalies. */
  readonly errors: Record<string, number>;
}

export function buildReport(args: {
  protocol: "grpc" | "kafka";
  runId: string;
  durationS: number;
  workload: WorkloadResult;
  check: CheckResult;
}): VerifyReport {
  const { workload: w, check } = args;
  const anomalies: Record<string, number> = { ...check.anomalies };
  if (w.unfenced.length > 0) anomalies["unfenced-transactional-id"] = w.unfenced.length;
  const visible = new Set<string>();
  for (const pairs of Object.values(w.history.finalReads))
    for (const [, value] of pairs) visible.add(value);
  const unknownCommitted = w.history.txns.filter(
    (t) => t.outcome === "unknown" && t.ops.some((o) => o.f === "send" && visible.has(o.value)),
  ).length;
  let polls = 0;
  let recordsPolled = 0;
  for (const t of w.history.txns)
    for (const o of t.ops)
      if (o.f === "poll") {
        polls++;
        for (const pairs of Object.values(o.reads)) recordsPolled += pairs.length;
      }
  return {
    pass: Object.keys(anomalies).length === 0,
    protocol: args.protocol,
    runId: args.runId,
    durationS: args.durationS,
    topics: w.topics,
    counts: { ...check.counts, unknownCommitted, polls, recordsPolled, finalRecords: visible.size },
    anomalies,
    examples: [
      ...check.examples.map((e) => ({ type: e.type, message: e.message })),
      ...w.unfenced.map((id) => ({
        type: "unfenced-transactional-id",
        message: `no new instance of ${id} could be initialised: its unknown outcomes stay unsettled`,
      })),
    ],
    undrained: w.undrained,
    incompleteReads: w.incompleteReads,
    errors: w.errors,
  };
}

export function formatReport(r: VerifyReport): string {
  const c = r.counts;
  const lines = [
    `tern verify: ${r.pass ? "PASS" : "FAIL"} (${r.protocol}, ${r.durationS} s, run ${r.runId})`,
    `transactions: ${c.committed} committed, ${c.aborted} aborted, ${c.unknown} unknown (${c.unknownCommitted} of them committed)`,
    `reads: ${c.recordsPolled} records in ${c.polls} polls; final read ${c.finalRecords} records`,
  ];
  const types = Object.entries(r.anomalies);
  if (types.length === 0) lines.push("anomalies: none");
  else {
    lines.push(`anomalies: ${types.map(([t, n]) => `${t} ${n}`).join(", ")}`);
    const shown = new Map<string, number>();
    for (const e of r.examples) {
      const n = (shown.get(e.type) ?? 0) + 1;
      shown.set(e.type, n);
      if (n <= TEXT_EXAMPLES_PER_TYPE) lines.push(`  ${e.type}: ${e.message}`);
    }
  }
  if (r.undrained.length > 0) lines.push(`copiers not drained: ${r.undrained.join(", ")}`);
  if (r.incompleteReads.length > 0)
    lines.push(`final read incomplete: ${r.incompleteReads.join(", ")}`);
  const errors = Object.entries(r.errors);
  if (errors.length > 0)
    lines.push(`client errors (retried): ${errors.map(([e, n]) => `${e} ${n}`).join(", ")}`);
  return lines.join("\n");
}
