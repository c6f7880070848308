// Prometheus metrics of the transaction coordinator: transactions by state on the partitions
// this node leads (read when scraped), open transactions past their timeout, commit/abort
// counts and durations, and how long a __transaction_state partition takes to load.
import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { CoordinatorObserver } from "./transaction-coordinator.js";
import { isPrepare, type TxnRecord, type TxnState } from "./transaction-metadata.js";

const STATES: readonly TxnState[] = [
  "Empty",
  "Ongoing",
  "PrepareCommit",
  "PrepareAbort",
  "CompleteCommit",
  "CompleteAbort",
];

export interface CoordinatorMetricsSource {
  ledRecords(): Iterable<TxnRecord>;
  loadedPartitions(): number;
}

/** An open transaction (Ongoing or decided but not completed) older than its timeout at nowMs. */
export function isPastTimeout(record: TxnRecord, nowMs: number): boolean {
  const open = record.state === "Ongoing" || isPrepare(record.state);
  return open && record.txnStartTimeMs > 0 && nowMs - record.txnStartTimeMs > record.timeoutMs;
}

/** Registers the gauges (reading source when scraped) and returns the observer for the coordinator. */
export function registerCoordinatorMetrics(
  registry: Registry,
  source: () => CoordinatorMetricsSource | undefined,
  nowMs: () => number,
): CoordinatorObserver {
  const registers = [registry];
  new Gauge({
    name: "tern_coordinator_transactions",
    help: "Transactional ids by state, on the __transaction_state partitions this node leads.",
    labelNames: ["state"],
    registers,
    collect() {
      const counts = new Map<TxnState, number>(STATES.map((s) => [s, 0]));
      for (const r of source()?.ledRecords() ?? [])
        counts.set(r.state, (counts.get(r.state) ?? 0) + 1);
      for (const [state, n] of counts) this.set({ state }, n);
    },
  });
  new Gauge({
    name: "tern_coordinator_transactions_past_timeout",
    help: "Open transactions (Ongoing, PrepareCommit, PrepareAbort) older than their transaction timeout: the coordinator should have aborted or completed them.",
    registers,
    collect() {
      const now = nowMs();
      let n = 0;
      for (const r of source()?.ledRecords() ?? []) if (isPastTimeout(r, now)) n += 1;
      this.set(n);
    },
  });
  new Gauge({
    name: "tern_coordinator_oldest_open_transaction_seconds",
    help: "Age of the oldest open transaction on the partitions this node leads (0 when none).",
    registers,
    collect() {
      const now = nowMs();
      let oldest = 0;
      for (const r of source()?.ledRecords() ?? [])
        if ((r.state === "Ongoing" || isPrepare(r.state)) && r.txnStartTimeMs > 0)
          oldest = Math.max(oldest, now - r.txnStartTimeMs);
      this.set(oldest / 1000);
    },
  });
  new Gauge({
    name: "tern_coordinator_loaded_partitions",
    help: "__transaction_state partitions this node leads and serves.",
    registers,
    collect() {
      this.set(source()?.loadedPartitions() ?? 0);
    },
  });
  const ended = new Counter({
    name: "tern_coordinator_transactions_ended_total",
    help: "Transactions completed (Complete* written), by result.",
    labelNames: ["result"],
    registers,
  });
  const duration = new Histogram({
    name: "tern_coordinator_transaction_duration_seconds",
    help: "First partition added to Complete* written, by result.",
    labelNames: ["result"],
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900],
    registers,
  });
  const load = new Histogram({
    name: "tern_coordinator_txn_log_load_seconds",
    help: "Leadership of a __transaction_state partition won to the partition serving.",
    buckets: [0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers,
  });
  for (const result of ["commit", "abort"]) {
    ended.inc({ result }, 0);
    duration.zero({ result });
  }
  return {
    transactionEnded(commit, durationMs) {
      const result = commit ? "commit" : "abort";
      ended.inc({ result });
      duration.observe({ result }, durationMs / 1000);
    },
    partitionLoaded(loadMs) {
      load.observe(loadMs / 1000);
    },
  };
}
