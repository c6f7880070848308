// Keeps this broker's Raft groups in line with cluster metadata: opens the partition groups
// whose replica set includes this node (topic partitions with PartitionStateMachine,
// __consumer_offsets partitions with the group coordinator's state machine), drops groups of
// deleted topics, points the host at peer brokers, and reports the leaderships it holds to
// the controller until metadata shows them. Also the PartitionDirectory of the handlers.
// Replica moves (docs/reassignment.md): where this node leads a group, the reassignment driver
// moves its voters to the placed replica set; a replica left out of the set drops its copy
// only once its own log has applied a configuration without it.
import type { Clock } from "../../libs/common/clock.js";
import type { Logger } from "../../libs/common/logger.js";
import { findPartition, findTopic, nodeAddress, partitionGroupId } from "../../libs/metadata/lookup.js";
import { ReassignmentDriver, removalCommittedLocally } from "../../libs/metadata/reassignment.js";
import { CONSUMER_OFFSETS_TOPIC, type ClusterMetadata } from "../../libs/metadata/types.js";
import type { RaftHostApi } from "../../libs/raft-host/api.js";
import type { StateMachine } from "../../libs/raft-host/state-machine.js";
import { LocalPartition, type PartitionDirectory } from "./local-partition.js";
import { encodeEntry } from "./partition-entry.js";
import { PartitionStateMachine, type PartitionStorageOptions } from "./partition-state-machine.js";
import { topicConfigNumber } from "./broker-limits.js";
import { join } from "node:path";

export interface LeaderReport {
  topic: string;
  partition: number;
  leader: number;
  term: number;
}

export interface ReplicaManagerOptions {
  readonly host: RaftHostApi;
  readonly nodeId: number;
  readonly logger: Logger;
  readonly clock: Clock;
  /** State machine for __consumer_offsets/<partition> (the group coordinator's). */
  readonly offsetsStateMachine?: (partition: number) => StateMachine;
  readonly reportLeaders: (changes: LeaderReport[]) => Promise<void>;
  /** A marker of producerId was applied to a local partition (undefined: its state was replaced or dropped). */
  readonly onTransactionEnd?: (topic: string, partition: number, producerId: bigint | undefined) => void;
  /** How often leaderships are reconciled with metadata and idle partitions get a tick entry. */
  readonly housekeepingIntervalMs?: number;
  /** A led partition gets a time-only entry this often, so retention and expiry advance. */
  readonly tickEntryIntervalMs?: number;
  /** Where partition replicas keep their segment files, and the process's record cache. */
  readonly storage: PartitionStorageConfig;
}

/** What every partition replica of this broker shares; each gets <dir>/<topic>-<partition>. */
export type PartitionStorageConfig = Pick<PartitionStorageOptions, "dir" | "cache" | "stats" | "indexIntervalBytes" | "readAheadBytes">;

const HOUSEKEEPING_INTERVAL_MS_DEFAULT = 2_000;
const TICK_ENTRY_INTERVAL_MS_DEFAULT = 60_000;
/** Groups opened per metadata view before yielding (the rest follow on the next pass). */
const OPENS_PER_PASS_MAX = 1_000;
const REPORTS_PER_CALL_MAX = 500;

export class ReplicaManager implements PartitionDirectory {
  private metadata: ClusterMetadata | undefined;
  private pending: ClusterMetadata | undefined;
  private applying: Promise<void> | undefined;
  private readonly partitions = new Map<string, LocalPartition>();
  private readonly openGroups = new Set<string>();
  private readonly timer: NodeJS.Timeout;
  private readonly log: Logger;
  private lastTickEntryMs = 0;
  private reporting = false;
  private closed = false;
  private readonly unsubscribeLeader: () => void;
  private readonly reassignment: ReassignmentDriver;
  /** Last membership logged per group (a line on every change: operators and tests read it). */
  private readonly loggedMembership = new Map<string, string>();

  constructor(private readonly options: ReplicaManagerOptions) {
    this.log = options.logger.child({ component: "replica-manager" });
    this.reassignment = new ReassignmentDriver({ nodeId: options.nodeId, logger: options.logger, nowMs: () => options.clock.nowMs() });
    this.timer = setInterval(() => void this.housekeeping(), options.housekeepingIntervalMs ?? HOUSEKEEPING_INTERVAL_MS_DEFAULT);
    this.timer.unref();
    this.unsubscribeLeader = options.host.onLeaderChange((change) => {
      if (change.leader !== options.nodeId || !this.openGroups.has(change.groupId)) return;
      void this.reportOwnLeaderships();
      // A new leader picks up an unfinished move at once (it plans from the current ConfState).
      setImmediate(() => this.reconcileMemberships());
    });
  }

  current(): ClusterMetadata | undefined {
    return this.metadata;
  }

  /** Applies a metadata view; views arriving while one is applied collapse into the newest. */
  update(m: ClusterMetadata): Promise<void> {
    this.pending = m;
    if (this.applying === undefined) {
      this.applying = (async () => {
        for (let pass = 0; pass < 100 && this.pending !== undefined && !this.closed; pass++) {
          const view = this.pending;
          this.pending = undefined;
          try {
            await this.apply(view);
          } catch (e) {
            this.log.error({ err: e }, "applying metadata failed");
          }
        }
      })().finally(() => {
        this.applying = undefined;
      });
    }
    return this.applying;
  }

  private async apply(m: ClusterMetadata): Promise<void> {
    this.metadata = m;
    const { host, nodeId } = this.options;
    for (const n of m.nodes) if (n.role === "broker" && n.nodeId !== nodeId) host.setPeerAddress(n.nodeId, n.address);
    const wanted = new Set<string>();
    let opened = 0;
    for (const t of m.topics) {
      if (t.role !== "broker") continue;
      for (const p of t.partitions) {
        if (!p.replicas.includes(nodeId)) continue;
        const groupId = partitionGroupId(t.name, p.partition);
        wanted.add(groupId);
        const local = this.partitions.get(groupId);
        if (local) local.setConfig(t.config);
        if (this.openGroups.has(groupId) || opened >= OPENS_PER_PASS_MAX) continue;
        opened++;
        // One replica that fails to open must not keep the ones after it closed: log it and go
        // on (housekeeping runs the pass again every couple of seconds, retrying it).
        try {
          await this.open(t.name, p.partition, p.replicas, t.config);
        } catch (e) {
          if (this.closed) throw e;
          this.log.error({ err: e, groupId }, "opening a partition replica failed; retrying with the next pass");
        }
      }
    }
    for (const groupId of [...this.openGroups]) {
      if (wanted.has(groupId)) continue;
      const [topic] = splitGroupId(groupId);
      if (findTopic(m, topic) !== undefined) {
        // Moved away: keep serving as a member until this replica's log shows its removal.
        const group = host.group(groupId);
        if (group === undefined || !removalCommittedLocally(group.status().confState, nodeId)) continue;
        this.log.info({ groupId, voters: group.status().confState.voters }, "dropping a replica removed from the group");
      } else {
        this.log.info({ groupId }, "dropping the replica of a deleted topic");
      }
      await this.drop(groupId);
    }
    if (opened >= OPENS_PER_PASS_MAX && this.pending === undefined) this.pending = m;
    void this.reportOwnLeaderships();
    this.reconcileMemberships();
  }

  private async drop(groupId: string): Promise<void> {
    const [topic, partition] = splitGroupId(groupId);
    if (topic !== CONSUMER_OFFSETS_TOPIC) this.options.onTransactionEnd?.(topic, partition, undefined);
    const local = this.partitions.get(groupId);
    this.partitions.delete(groupId);
    this.openGroups.delete(groupId);
    this.loggedMembership.delete(groupId);
    await this.options.host.dropGroup(groupId).catch((e) => this.log.warn({ err: e, groupId }, "dropGroup failed"));
    local?.stateMachine.destroy();
  }

  /** Where this node leads a group whose voters differ from the placed replicas, move them. */
  private reconcileMemberships(): void {
    const m = this.metadata;
    if (m === undefined || this.closed) return;
    const live = new Set(m.nodes.filter((n) => n.role === "broker" && n.alive).map((n) => n.nodeId));
    const isLive = (id: number): boolean => live.has(id);
    for (const groupId of this.openGroups) {
      const group = this.options.host.group(groupId);
      if (group === undefined) continue;
      this.logMembership(groupId, group.status().confState.voters, group.status().confState.learners, group.appliedIndex());
      if (!group.isLeader()) continue;
      const [topic, partition] = splitGroupId(groupId);
      const p = findPartition(m, topic, partition);
      if (p === undefined || p.replicas.length === 0) continue;
      this.reassignment.reconcile(group, { replicas: p.replicas, isLive });
    }
  }

  private logMembership(groupId: string, voters: readonly number[], learners: readonly number[], applied: number): void {
    const key = `${voters.join(",")}|${learners.join(",")}`;
    if (this.loggedMembership.get(groupId) === key) return;
    this.loggedMembership.set(groupId, key);
    this.log.info({ groupId, voters, learners, applied }, "replica membership");
  }

  private async open(topic: string, partition: number, replicas: number[], config: Record<string, string>): Promise<void> {
    const groupId = partitionGroupId(topic, partition);
    if (topic === CONSUMER_OFFSETS_TOPIC) {
      if (this.options.offsetsStateMachine === undefined) return;
      await this.options.host.openGroup({ groupId, initialVoters: replicas, stateMachine: this.options.offsetsStateMachine(partition) });
      this.openGroups.add(groupId);
      return;
    }
    const storage = this.options.storage;
    const stateMachine = new PartitionStateMachine(topic, partition, {
      dir: join(storage.dir, `${topic}-${partition}`),
      cache: storage.cache,
      stats: storage.stats,
      indexIntervalBytes: storage.indexIntervalBytes,
      readAheadBytes: storage.readAheadBytes,
      segmentBytes: topicConfigNumber(config, "segment.bytes"),
      segmentMs: topicConfigNumber(config, "segment.ms"),
      initialVoters: replicas,
    });
    const report = stateMachine.openReport();
    if (report.repairs.length > 0 || report.indexesRebuilt > 0 || report.droppedAfterGap > 0) this.log.warn({ groupId, ...report }, "partition segments repaired on open");
    const onTransactionEnd = this.options.onTransactionEnd;
    if (onTransactionEnd !== undefined) stateMachine.onTransactionEnd((producerId) => onTransactionEnd(topic, partition, producerId));
    let group;
    try {
      group = await this.options.host.openGroup({ groupId, initialVoters: replicas, stateMachine });
    } catch (e) {
      void stateMachine.close();
      throw e;
    }
    const local = new LocalPartition(topic, partition, group, stateMachine);
    local.setConfig(config);
    this.partitions.set(groupId, local);
    this.openGroups.add(groupId);
    this.log.debug({ groupId, replicas }, "opened partition replica");
  }

  /** Tells the controller about every leadership held here that metadata does not show yet. */
  private async reportOwnLeaderships(): Promise<void> {
    const m = this.metadata;
    if (this.reporting || m === undefined || this.closed) return;
    this.reporting = true;
    try {
      const changes: LeaderReport[] = [];
      for (const groupId of this.openGroups) {
        const group = this.options.host.group(groupId);
        if (group === undefined || !group.isLeader()) continue;
        const [topic, partition] = splitGroupId(groupId);
        const known = findPartition(m, topic, partition);
        if (known && known.leader === this.options.nodeId && known.leaderTerm >= group.term()) continue;
        changes.push({ topic, partition, leader: this.options.nodeId, term: group.term() });
        if (changes.length >= REPORTS_PER_CALL_MAX) break;
      }
      if (changes.length > 0) await this.options.reportLeaders(changes);
    } catch (e) {
      this.log.warn({ err: e }, "reporting leaders failed; will retry");
    } finally {
      this.reporting = false;
    }
  }

  private async housekeeping(): Promise<void> {
    if (this.closed) return;
    await this.reportOwnLeaderships();
    // Re-run the (serialized) metadata pass: drops wait on commits, moves retry after backoff.
    if (this.metadata !== undefined && this.pending === undefined && this.applying === undefined) void this.update(this.metadata);
    const nowMs = this.options.clock.nowMs();
    if (nowMs - this.lastTickEntryMs < (this.options.tickEntryIntervalMs ?? TICK_ENTRY_INTERVAL_MS_DEFAULT)) return;
    this.lastTickEntryMs = nowMs;
    for (const local of this.partitions.values()) {
      if (!local.group.isLeader()) continue;
      const data = encodeEntry({ kind: "tick", header: local.entryHeader(nowMs) });
      local.group.propose(data, { timeoutMs: 10_000 }).catch(() => undefined);
    }
  }

  // ---- PartitionDirectory ---------------------------------------------------------------

  local(topic: string, partition: number): LocalPartition | undefined {
    return this.partitions.get(partitionGroupId(topic, partition));
  }

  lookup(topic: string, partition: number): "ok" | "unknown" | "internal" {
    const m = this.metadata;
    if (m === undefined) return this.local(topic, partition) ? "ok" : "unknown";
    const t = findTopic(m, topic);
    if (t === undefined || t.role !== "broker" || !t.partitions.some((p) => p.partition === partition)) return "unknown";
    return t.internal ? "internal" : "ok";
  }

  endpoint(nodeId: number): { nodeId: number; address: string } {
    if (nodeId < 0 || this.metadata === undefined) return { nodeId: -1, address: "" };
    const address = nodeAddress(this.metadata, "broker", nodeId);
    return address === undefined ? { nodeId: -1, address: "" } : { nodeId, address };
  }

  metadataLeader(topic: string, partition: number): number {
    return this.metadata ? findPartition(this.metadata, topic, partition)?.leader ?? -1 : -1;
  }

  locals(): Iterable<LocalPartition> {
    return this.partitions.values();
  }

  close(): void {
    this.closed = true;
    clearInterval(this.timer);
    this.unsubscribeLeader();
  }
}

function splitGroupId(groupId: string): [string, number] {
  const slash = groupId.lastIndexOf("/");
  return [groupId.slice(0, slash), Number(groupId.slice(slash + 1))];
}
