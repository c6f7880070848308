// Prometheus metrics of the consumer groups this broker coordinates: members and epoch per
// group, rebalances (membership changes applied through the log), and consumer lag (log end
// offset minus committed offset) per group and per partition. Lag needs the log end offsets of
// partitions led anywhere in the cluster: each scrape asks their leaders (ListOffsets, bounded
// by a timeout); series are bounded (groups and partitions), the rest is counted as dropped.
import { Counter, Gauge, type Registry } from "prom-client";
import type { Clock } from "../../libs/runtime/clock.js";
import type { Logger } from "../../libs/common/logger.js";
import type { OffsetsStateMachine } from "./offsets-state-machine.js";
import type { ClusterMetadataView, EndOffsetsLister } from "./ports.js";

export const GROUP_SERIES_MAX = 100;
export const PARTITION_LAG_SERIES_MAX = 1_000;
const LIST_OFFSETS_TIMEOUT_MS = 2_000;
const LAG_REUSE_MS = 1_000;

export interface GroupMetricsSource {
  readonly ledMachines: () => Iterable<OffsetsStateMachine>;
  readonly metadata: ClusterMetadataView;
  readonly listEndOffsets: EndOffsetsLister;
  readonly logger: Logger;
  /** When a lag figure was computed (monotonic: a wall-clock step must not pin or drop it). */
  readonly clock: Clock;
}

export interface GroupMetrics {
  readonly rebalances: Counter;
}

export function groupMetrics(registry: Registry, source: GroupMetricsSource): GroupMetrics {
  const registers = [registry];
  const dropped = new Counter({
    name: "tern_group_metric_series_dropped_total",
    help: "Group or partition series left out of a scrape by the series bounds.",
    registers,
  });
  const views = (): Array<{
    groupId: string;
    members: number;
    epoch: number;
    machine: OffsetsStateMachine;
  }> => {
    const out: Array<{
      groupId: string;
      members: number;
      epoch: number;
      machine: OffsetsStateMachine;
    }> = [];
    for (const machine of source.ledMachines()) {
      for (const g of machine.listGroups()) {
        const view = machine.describeGroup(g.groupId);
        out.push({ groupId: g.groupId, members: g.members, epoch: view?.groupEpoch ?? 0, machine });
      }
    }
    out.sort((a, b) => a.groupId.localeCompare(b.groupId));
    if (out.length > GROUP_SERIES_MAX) dropped.inc(out.length - GROUP_SERIES_MAX);
    return out.slice(0, GROUP_SERIES_MAX);
  };
  new Gauge({
    name: "tern_group_members",
    help: "Members of each consumer group this broker coordinates.",
    labelNames: ["group"],
    registers,
    collect() {
      this.reset();
      for (const v of views()) this.set({ group: v.groupId }, v.members);
    },
  });
  new Gauge({
    name: "tern_group_epoch",
    help: "Group epoch (bumped by every membership, subscription or metadata change).",
    labelNames: ["group"],
    registers,
    collect() {
      this.reset();
      for (const v of views()) this.set({ group: v.groupId }, v.epoch);
    },
  });
  // Both lag gauges come from one computation per scrape (prom-client collects them
  // concurrently): shared for LAG_REUSE_MS.
  let last: { atMs: number; lag: Promise<LagRows> } | undefined;
  const lagRows = (): Promise<LagRows> => {
    const nowMs = source.clock.monotonicMs();
    if (!last || nowMs - last.atMs > LAG_REUSE_MS)
      last = { atMs: nowMs, lag: computeLag(source, views()) };
    return last.lag;
  };
  new Gauge({
    name: "tern_group_partition_lag",
    help: "Log end offset minus the group's committed offset, per partition.",
    labelNames: ["group", "topic", "partition"],
    registers,
    async collect() {
      this.reset();
      const rows = await lagRows();
      rows.partitions
        .slice(0, PARTITION_LAG_SERIES_MAX)
        .forEach((r) =>
          this.set(
            { group: r.groupId, topic: r.topic, partition: String(r.partition) },
            Number(r.lag),
          ),
        );
      if (rows.partitions.length > PARTITION_LAG_SERIES_MAX)
        dropped.inc(rows.partitions.length - PARTITION_LAG_SERIES_MAX);
    },
  });
  new Gauge({
    name: "tern_group_lag",
    help: "Total lag of each consumer group over its committed partitions.",
    labelNames: ["group"],
    registers,
    async collect() {
      this.reset();
      for (const [group, lag] of (await lagRows()).totals) this.set({ group }, Number(lag));
    },
  });
  return {
    rebalances: new Counter({
      name: "tern_group_rebalances_total",
      help: "Membership changes (joins, leaves, fences, subscription and metadata changes) applied by groups this broker coordinates.",
      registers,
    }),
  };
}

interface LagRows {
  readonly partitions: Array<{ groupId: string; topic: string; partition: number; lag: bigint }>;
  readonly totals: Map<string, bigint>;
}

/** Committed offsets of the groups against their partitions' log end offsets (asked of the leaders). */
async function computeLag(
  source: GroupMetricsSource,
  groups: ReadonlyArray<{ groupId: string; machine: OffsetsStateMachine }>,
): Promise<LagRows> {
  const out: LagRows = { partitions: [], totals: new Map() };
  const metadata = source.metadata();
  if (!metadata) return out;
  const rows: Array<{ groupId: string; topic: string; partition: number; committed: bigint }> = [];
  for (const v of groups) {
    for (const o of v.machine.fetchOffsets(v.groupId, undefined, false))
      if (o.offset >= 0n)
        rows.push({
          groupId: v.groupId,
          topic: o.topic,
          partition: o.partition,
          committed: o.offset,
        });
  }
  const byLeader = new Map<string, Map<string, { topic: string; partition: number }>>();
  for (const r of rows) {
    const p = metadata.topics
      .find((t) => t.name === r.topic)
      ?.partitions.find((x) => x.partition === r.partition);
    const address = metadata.nodes.find(
      (n) => n.role === "broker" && n.nodeId === p?.leader && n.alive,
    )?.address;
    if (!address) continue;
    const m = byLeader.get(address) ?? new Map<string, { topic: string; partition: number }>();
    m.set(`${r.topic}\u0000${r.partition}`, { topic: r.topic, partition: r.partition });
    byLeader.set(address, m);
  }
  const ends = new Map<string, bigint>();
  await Promise.all(
    [...byLeader].map(async ([address, tps]) => {
      try {
        for (const e of await source.listEndOffsets(
          address,
          [...tps.values()],
          LIST_OFFSETS_TIMEOUT_MS,
        ))
          if (e.offset !== null) ends.set(`${e.topic}\u0000${e.partition}`, e.offset);
      } catch (e) {
        source.logger.debug({ address, err: String(e) }, "lag metric: ListOffsets failed");
      }
    }),
  );
  for (const r of rows) {
    const end = ends.get(`${r.topic}\u0000${r.partition}`);
    if (end === undefined) continue;
    const lag = end > r.committed ? end - r.committed : 0n;
    out.totals.set(r.groupId, (out.totals.get(r.groupId) ?? 0n) + lag);
    out.partitions.push({ groupId: r.groupId, topic: r.topic, partition: r.partition, lag });
  }
  return out;
}
