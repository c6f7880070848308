// Prometheus metrics of the Raft host, in the given registry (prom-client's default one unless
// the service passes its own). Registered once per registry: hosts in one process share them.
import { Counter, Gauge, Histogram, register as defaultRegistry, type Registry } from "prom-client";
import type { NodeId } from "../raft/types.js";

export interface HostMetrics {
  readonly applied: Counter;
  readonly messagesSent: Counter;
  readonly leaderChanges: Counter;
  /** propose() to applied on this leader, seconds. */
  readonly commitLatency: Histogram;
  /** Labelled kind="taken" (local, for compaction) or kind="installed" (sent by a leader). */
  readonly snapshots: Counter;
  observeWrite(ops: number, sync: boolean): void;
  /** One entry journal write (one writev, one fdatasync) of this many bytes. */
  observeJournalWrite(bytes: number): void;
}

const cache = new WeakMap<Registry, HostMetrics>();

export function hostMetrics(register: Registry = defaultRegistry): HostMetrics {
  const cached = cache.get(register);
  if (cached) return cached;
  const counter = (name: string, help: string): Counter =>
    (register.getSingleMetric(name) as Counter | undefined) ??
    new Counter({ name, help, registers: [register] });
  const writes = counter(
    "tern_raft_batch_writes_total",
    "level batches written by the Raft host (one per scheduler turn with work)",
  );
  const fsyncs = counter("tern_raft_fsyncs_total", "level batches written with sync (fsync)");
  const batchOps =
    (register.getSingleMetric("tern_raft_batch_ops") as Histogram | undefined) ??
    new Histogram({
      name: "tern_raft_batch_ops",
      help: "operations per level batch (group commit size)",
      buckets: [1, 4, 16, 64, 256, 1024, 4096, 16384],
      registers: [register],
    });
  const journalFsyncs = counter(
    "tern_raft_journal_fsyncs_total",
    "entry journal writes, each one fdatasync (the log entries of topic partitions)",
  );
  const journalBytes = counter(
    "tern_raft_journal_bytes_total",
    "bytes written to the entry journal",
  );
  const metrics: HostMetrics = {
    applied: counter(
      "tern_raft_applied_entries_total",
      "committed entries applied to state machines",
    ),
    messagesSent: counter("tern_raft_messages_sent_total", "Raft messages handed to the transport"),
    leaderChanges: counter(
      "tern_raft_leader_changes_total",
      "leader or term changes observed by groups on this node",
    ),
    commitLatency:
      (register.getSingleMetric("tern_raft_commit_latency_seconds") as Histogram | undefined) ??
      new Histogram({
        name: "tern_raft_commit_latency_seconds",
        help: "propose() to committed and applied on the leader, per proposal of any group on this node",
        buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
        registers: [register],
      }),
    snapshots:
      (register.getSingleMetric("tern_raft_snapshots_total") as Counter | undefined) ??
      new Counter({
        name: "tern_raft_snapshots_total",
        help: "snapshots taken locally (kind=taken) or installed from a leader (kind=installed)",
        labelNames: ["kind"],
        registers: [register],
      }),
    observeWrite(ops: number, sync: boolean): void {
      writes.inc();
      if (sync) fsyncs.inc();
      batchOps.observe(ops);
    },
    observeJournalWrite(bytes: number): void {
      journalFsyncs.inc();
      journalBytes.inc(bytes);
    },
  };
  cache.set(register, metrics);
  return metrics;
}

/** What the position gauges read from each open group at scrape time. */
export interface GroupPositionSource {
  readonly groupId: string;
  readonly node: { basicStatus(): GroupPosition };
}

interface GroupPosition {
  commit: number;
  applied: number;
  term: number;
  leader: NodeId;
}

const positionSources = new WeakMap<Registry, Set<() => Iterable<GroupPositionSource>>>();

/**
 * Per-group commit and applied index on this node (tern_raft_commit_index and
 * tern_raft_applied_index, label group), and the term and leader this replica knows
 * (tern_raft_term, tern_raft_leader: -1 for none; `bench failover` times kill→new leader with
 * them), read when scraped so the hot path pays nothing. A
 * follower has caught up on a group when its applied index reaches the leader's commit index:
 * how `npm run bench -- storage` times a restarted broker's catch-up (Kafka exposes LogEndOffset
 * per partition for the same purpose). Returns the function that unregisters the host.
 */
export function registerGroupPositions(
  groups: () => Iterable<GroupPositionSource>,
  register: Registry = defaultRegistry,
): () => void {
  let sources = positionSources.get(register);
  if (!sources) {
    const all = new Set<() => Iterable<GroupPositionSource>>();
    sources = all;
    positionSources.set(register, all);
    const gauge = (name: string, help: string, pick: (s: GroupPosition) => number): void => {
      if (register.getSingleMetric(name)) return;
      new Gauge({
        name,
        help,
        labelNames: ["group"],
        registers: [register],
        collect() {
          this.reset();
          for (const source of all)
            for (const g of source()) this.set({ group: g.groupId }, pick(g.node.basicStatus()));
        },
      });
    };
    gauge(
      "tern_raft_commit_index",
      "commit index of each Raft group open on this node",
      (s) => s.commit,
    );
    gauge(
      "tern_raft_applied_index",
      "applied index of each Raft group open on this node",
      (s) => s.applied,
    );
    gauge("tern_raft_term", "current term of each Raft group open on this node", (s) => s.term);
    gauge(
      "tern_raft_leader",
      "leader node id of each Raft group open on this node as this replica knows it (-1: none)",
      (s) => s.leader,
    );
  }
  sources.add(groups);
  return () => void sources.delete(groups);
}
