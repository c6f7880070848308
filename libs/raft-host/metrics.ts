// Prometheus metrics of the Raft host, in the given registry (prom-client's default one unless
// the service passes its own). Registered once per registry: hosts in one process share them.
import { Counter, Histogram, register as defaultRegistry, type Registry } from "prom-client";

export interface HostMetrics {
  readonly applied: Counter;
  readonly messagesSent: Counter;
  readonly leaderChanges: Counter;
  /** Labelled kind="taken" (local, for compaction) or kind="installed" (sent by a leader). */
  readonly snapshots: Counter;
  observeWrite(ops: number, sync: boolean): void;
}

const cache = new WeakMap<Registry, HostMetrics>();

export function hostMetrics(register: Registry = defaultRegistry): HostMetrics {
  const cached = cache.get(register);
  if (cached) return cached;
  const counter = (name: string, help: string): Counter =>
    (register.getSingleMetric(name) as Counter | undefined) ?? new Counter({ name, help, registers: [register] });
  const writes = counter("tern_raft_batch_writes_total", "level batches written by the Raft host (one per scheduler turn with work)");
  const fsyncs = counter("tern_raft_fsyncs_total", "level batches written with sync (fsync)");
  const batchOps =
    (register.getSingleMetric("tern_raft_batch_ops") as Histogram | undefined) ??
    new Histogram({ name: "tern_raft_batch_ops", help: "operations per level batch (group commit size)", buckets: [1, 4, 16, 64, 256, 1024, 4096, 16384], registers: [register] });
  const metrics: HostMetrics = {
    applied: counter("tern_raft_applied_entries_total", "committed entries applied to state machines"),
    messagesSent: counter("tern_raft_messages_sent_total", "Raft messages handed to the transport"),
    leaderChanges: counter("tern_raft_leader_changes_total", "leader or term changes observed by groups on this node"),
    snapshots:
      (register.getSingleMetric("tern_raft_snapshots_total") as Counter | undefined) ??
      new Counter({ name: "tern_raft_snapshots_total", help: "snapshots taken locally (kind=taken) or installed from a leader (kind=installed)", labelNames: ["kind"], registers: [register] }),
    observeWrite(ops: number, sync: boolean): void {
      writes.inc();
      if (sync) fsyncs.inc();
      batchOps.observe(ops);
    },
  };
  cache.set(register, metrics);
  return metrics;
}
