// The broker's hosted Raft groups and the PartitionDirectory of its handlers. The shared
// reconciler (libs/raft-host/group-reconciler.ts) keeps the groups in line with cluster
// metadata (opens, drops, peer addresses, leader reports, replica moves: docs/reassignment.md);
// this file says what is broker-specific: every partition of a broker topic is a group, topic
// partitions get a PartitionStateMachine over <dir>/<topic>-<partition> (deleted with the
// replica), __consumer_offsets partitions the group coordinator's state machine, and led
// partitions get a time-only tick entry now and then.
import type { Clock } from "../../libs/runtime/clock.js";
import type { Logger } from "../../libs/common/logger.js";
import {
  findPartition,
  findTopic,
  nodeAddress,
  partitionGroupId,
} from "../../libs/metadata/lookup.js";
import { CONSUMER_OFFSETS_TOPIC, type ClusterMetadata } from "../../libs/metadata/types.js";
import type { RaftHostApi } from "../../libs/raft-host/api.js";
import {
  GroupReconciler,
  splitGroupId,
  type GroupPlacement,
  type LeaderReport,
} from "../../libs/raft-host/group-reconciler.js";
import type { StateMachine } from "../../libs/raft-host/state-machine.js";
import { LocalPartition, type PartitionDirectory } from "./local-partition.js";
import { encodeEntry } from "./partition-entry.js";
import { PartitionStateMachine, type PartitionStorageOptions } from "./partition-state-machine.js";
import { topicConfigNumber } from "./broker-limits.js";
import type { DamageReport } from "../../libs/storage/segmented-log.js";
import { SegmentRepairer, type SegmentRepairDeps } from "./segment-repair.js";
import { join } from "node:path";

export interface ReplicaManagerOptions {
  readonly host: RaftHostApi;
  readonly nodeId: number;
  readonly logger: Logger;
  readonly clock: Clock;
  /** State machine for __consumer_offsets/<partition> (the group coordinator's). */
  readonly offsetsStateMachine?: (partition: number) => StateMachine;
  readonly reportLeaders: (changes: LeaderReport[]) => Promise<void>;
  /**
   * The KIP-890 verifications (the TxnVerifier) that end with a transaction: forgotten when a
   * marker of producerId is applied to a local partition, or all of a partition's when its
   * state is replaced or dropped (producerId undefined).
   */
  readonly verifications?: {
    forget(topic: string, partition: number, producerId?: bigint): void;
  };
  /** How often leaderships are reconciled with metadata and idle partitions get a tick entry. */
  readonly housekeepingIntervalMs?: number;
  /** A led partition gets a time-only entry this often, so retention and expiry advance. */
  readonly tickEntryIntervalMs?: number;
  /** Where partition replicas keep their segment files, and the process's record cache. */
  readonly storage: PartitionStorageConfig;
  /**
   * How a damaged segment is read from another broker's replica (ReadReplicaRecords) to repair
   * it (segment-repair.ts); none: damaged segments stay refused.
   */
  readonly segmentRepair?: Pick<
    SegmentRepairDeps,
    "read" | "clock" | "random" | "attemptsMax" | "backoffMsFirst"
  >;
}

/** What every partition replica of this broker shares; each gets <dir>/<topic>-<partition>. */
export type PartitionStorageConfig = Pick<
  PartitionStorageOptions,
  "dir" | "cache" | "stats" | "indexIntervalBytes" | "readAheadBytes" | "failpoints"
>;

/** A partition group of a broker topic, with the topic's config. */
interface BrokerPlacement extends GroupPlacement {
  readonly config: Record<string, string>;
}

/** What this broker keeps per hosted group: the partition replica (none for __consumer_offsets). */
interface HostedReplica {
  readonly local?: LocalPartition;
}

const HOUSEKEEPING_INTERVAL_MS_DEFAULT = 2_000;
/**
 * A led partition whose replicated clock is this old gets a time-only entry (Kafka checks
 * retention every log.retention.check.interval.ms, 5 minutes): entries carry the time, so
 * only idle partitions need one, and a partition that never had a timed entry (nothing in it
 * can expire) none at all. Each one wakes a quiesced group: at thousands of idle partitions
 * this interval is most of their idle cost.
 */
const TICK_ENTRY_INTERVAL_MS_DEFAULT = 300_000;
/** A time-only entry proposed and not yet applied is not proposed again before this. */
const TICK_ENTRY_RETRY_MS = 10_000;
/** Groups opened or dropped per metadata view before yielding (the rest follow on the next pass). */
const CHANGES_PER_PASS_MAX = 1_000;

export class ReplicaManager implements PartitionDirectory {
  private readonly reconciler: GroupReconciler<HostedReplica, BrokerPlacement>;
  private readonly log: Logger;
  private readonly repairer: SegmentRepairer | undefined;

  constructor(private readonly options: ReplicaManagerOptions) {
    this.log = options.logger.child({ component: "replica-manager" });
    const repair = options.segmentRepair;
    this.repairer =
      repair === undefined
        ? undefined
        : new SegmentRepairer({
            ...repair,
            nodeId: options.nodeId,
            logger: this.log,
            replicasOf: (local) => {
              const m = this.current();
              return m ? (findPartition(m, local.topic, local.partition)?.replicas ?? []) : [];
            },
            address: (nodeId) => {
              const e = this.endpoint(nodeId);
              return e.nodeId < 0 ? undefined : e.address;
            },
          });
    this.reconciler = new GroupReconciler({
      host: options.host,
      nodeId: options.nodeId,
      role: "broker",
      logger: this.log,
      nowMs: () => options.clock.nowMs(),
      reportLeaders: options.reportLeaders,
      passIntervalMs: options.housekeepingIntervalMs ?? HOUSEKEEPING_INTERVAL_MS_DEFAULT,
      changesPerPassMax: CHANGES_PER_PASS_MAX,
      hooks: {
        placements: brokerPlacements,
        open: (p) => this.open(p),
        refresh: (hosted, p) => hosted.local?.setConfig(p.config),
        deleted: (m, groupId) => findTopic(m, splitGroupId(groupId)[0]) === undefined,
        release: (_hosted, groupId) => {
          const [topic, partition] = splitGroupId(groupId);
          if (topic !== CONSUMER_OFFSETS_TOPIC)
            this.options.verifications?.forget(topic, partition, undefined);
        },
        discard: (hosted) => hosted.local?.stateMachine.destroy(),
        housekeeping: () => this.proposeTicks(),
      },
    });
  }

  current(): ClusterMetadata | undefined {
    return this.reconciler.current();
  }

  /** Applies a metadata view; views arriving while one is applied collapse into the newest. */
  update(m: ClusterMetadata): Promise<void> {
    return this.reconciler.update(m);
  }

  private async open(p: BrokerPlacement): Promise<HostedReplica | undefined> {
    const { topic, partition, groupId, config } = p;
    const replicas = [...p.replicas];
    if (topic === CONSUMER_OFFSETS_TOPIC) {
      if (this.options.offsetsStateMachine === undefined) return undefined;
      await this.options.host.openGroup({
        groupId,
        initialVoters: replicas,
        stateMachine: this.options.offsetsStateMachine(partition),
      });
      return {};
    }
    const storage = this.options.storage;
    const dir = join(storage.dir, `${topic}-${partition}`);
    await PartitionStateMachine.prepare(dir, replicas);
    const stateMachine = new PartitionStateMachine(topic, partition, {
      dir,
      cache: storage.cache,
      stats: storage.stats,
      indexIntervalBytes: storage.indexIntervalBytes,
      readAheadBytes: storage.readAheadBytes,
      failpoints: storage.failpoints,
      segmentBytes: topicConfigNumber(config, "segment.bytes"),
      segmentMs: topicConfigNumber(config, "segment.ms"),
      initialVoters: replicas,
    });
    const report = stateMachine.openReport();
    if (report.repairs.length > 0 || report.indexesRebuilt > 0 || report.droppedAfterGap > 0)
      this.log.warn({ groupId, ...report }, "partition segments repaired on open");
    const verifications = this.options.verifications;
    if (verifications !== undefined)
      stateMachine.onTransactionEnd((producerId) =>
        verifications.forget(topic, partition, producerId),
      );
    let group;
    try {
      group = await this.options.host.openGroup({ groupId, initialVoters: replicas, stateMachine });
    } catch (e) {
      void stateMachine.close();
      throw e;
    }
    const local = new LocalPartition(topic, partition, group, stateMachine);
    local.setConfig(config);
    stateMachine.onStorageDamage((d) => this.onDamage(local, groupId, d));
    void stateMachine
      .scrub()
      .catch((e: Error) =>
        this.log.warn({ groupId, err: e.message }, "partition segment scrub failed"),
      );
    return { local };
  }

  /**
   * A damaged segment (docs/storage.md, "Corruption and repair"): its records are never served
   * (the read that found it failed); a leader hands its leadership to a sound follower; the
   * segment is rewritten from another replica's records. One cut at open is whole again already:
   * the replica opened, so its Raft log applies the entries after the cut again.
   */
  private onDamage(local: LocalPartition, groupId: string, d: DamageReport): void {
    const steppedDown = local.stepDown();
    this.log.error(
      { groupId, ...d, steppedDown },
      "partition segment damaged: its records are refused, never served",
    );
    if (d.foundBy === "open") {
      this.log.info(
        { groupId, file: d.file, firstIndex: d.firstIndex, by: "raft-log" },
        "partition segment cut at open repaired: the entries after the cut are applied again from the Raft log",
      );
      return;
    }
    this.repairer?.repair(local, d);
  }

  /**
   * A led partition idle for the tick interval (or whose topic config changed) gets a
   * time-only entry, so retention and expiry advance and every replica applies the config.
   */
  private proposeTicks(): void {
    const nowMs = this.options.clock.nowMs();
    const sinceMs = this.options.clock.monotonicMs();
    const intervalMs = this.options.tickEntryIntervalMs ?? TICK_ENTRY_INTERVAL_MS_DEFAULT;
    for (const local of this.locals()) {
      if (!local.group.isLeader()) continue;
      const clockMs = local.stateMachine.replicatedClockMs();
      if (!local.tickDue && (clockMs === 0 || nowMs - clockMs < intervalMs)) continue;
      if (sinceMs - local.tickProposedAtMs < TICK_ENTRY_RETRY_MS) continue;
      local.tickProposedAtMs = sinceMs;
      local.tickDue = false;
      const data = encodeEntry({ kind: "tick", header: local.entryHeader(nowMs) });
      local.group.propose(data, { timeoutMs: TICK_ENTRY_RETRY_MS }).catch(() => undefined);
    }
  }

  // ---- PartitionDirectory ---------------------------------------------------------------

  local(topic: string, partition: number): LocalPartition | undefined {
    return this.reconciler.get(partitionGroupId(topic, partition))?.local;
  }

  lookup(topic: string, partition: number): "ok" | "unknown" | "internal" {
    const m = this.current();
    if (m === undefined) return this.local(topic, partition) ? "ok" : "unknown";
    const t = findTopic(m, topic);
    if (
      t === undefined ||
      t.role !== "broker" ||
      !t.partitions.some((p) => p.partition === partition)
    )
      return "unknown";
    return t.internal ? "internal" : "ok";
  }

  endpoint(nodeId: number): { nodeId: number; address: string } {
    const m = this.current();
    if (nodeId < 0 || m === undefined) return { nodeId: -1, address: "" };
    const address = nodeAddress(m, "broker", nodeId);
    return address === undefined ? { nodeId: -1, address: "" } : { nodeId, address };
  }

  metadataLeader(topic: string, partition: number): number {
    const m = this.current();
    return m ? (findPartition(m, topic, partition)?.leader ?? -1) : -1;
  }

  *locals(): IterableIterator<LocalPartition> {
    for (const hosted of this.reconciler.entries())
      if (hosted.local !== undefined) yield hosted.local;
  }

  close(): void {
    this.repairer?.close();
    this.reconciler.close();
  }
}

/** Every partition group of the broker topics in the view (the offsets topic among them). */
function* brokerPlacements(m: ClusterMetadata): Iterable<BrokerPlacement> {
  for (const t of m.topics) {
    if (t.role !== "broker") continue;
    for (const p of t.partitions) {
      yield {
        groupId: partitionGroupId(t.name, p.partition),
        topic: t.name,
        partition: p.partition,
        replicas: p.replicas,
        leader: p.leader,
        leaderTerm: p.leaderTerm,
        config: t.config,
      };
    }
  }
}
