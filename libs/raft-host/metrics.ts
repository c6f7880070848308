// Prometheus metrics of the Raft host, in prom-client's default registry. Registered once per
// process (several hosts in one test process share them).
import { Counter, Histogram, register } from "prom-client";

export interface HostMetrics {
  readonly applied: Counter;
  readonly messagesSent: Counter;
  readonly leaderChanges: Counter;
  observeWrite(ops: number, sync: boolean): void;
}

let cached: HostMetrics | undefined;

function counter(name: string, help: string): Counter {
  return (register.getSingleMetric(name) as Counter | undefined) ?? new Counter({ name, help });
}

export function hostMetrics(): HostMetrics {
  if (cached) return cached;
  const writes = counter("tern_raft_batch_writes_total", "level batches written by the Raft host (one per scheduler turn with work)");
  const fsyncs = counter("tern_raft_fsyncs_total", "level batches written with sync (fsync)");
  const batchOps =
    (register.getSingleMetric("tern_raft_batch_ops") as Histogram | undefined) ??
    new Histogram({ name: "tern_raft_batch_ops", help: "operations per level batch (group commit size)", buckets: [1, 4, 16, 64, 256, 1024, 4096, 16384] });
  cached = {
    applied: counter("tern_raft_applied_entries_total", "committed entries applied to state machines"),
    messagesSent: counter("tern_raft_messages_sent_total", "Raft messages handed to the transport"),
    leaderChanges: counter("tern_raft_leader_changes_total", "leader or term changes observed by groups on this node"),
    observeWrite(ops: number, sync: boolean): void {
      writes.inc();
      if (sync) fsyncs.inc();
      batchOps.observe(ops);
    },
  };
  return cached;
}
