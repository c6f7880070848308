// The leader side of classic consumer groups on a group coordinator: per __consumer_offsets
// partition this broker leads, the in-memory ClassicGroup of each group (classic-group.ts),
// loaded from the partition's applied record when a leadership term starts (after a read
// barrier, so every entry of earlier terms is applied) and dropped when the term ends (waiting
// requests get NOT_COORDINATOR). A completed rebalance is persisted as a classic-group entry in
// the same Raft log as the offsets. A timer ticks every group (deadlines, sessions) and drops
// idle empty groups from memory (the log has them).
import { randomUUID } from "node:crypto";
import type { SchedulingClock, TimerHandle } from "../../libs/runtime/scheduler.js";
import { isTernError, TernError, type ErrorName } from "../../libs/common/errors.js";
import type { Logger } from "../../libs/common/logger.js";
import type { RaftGroup } from "../../libs/raft-host/api.js";
import {
  ClassicGroup,
  type ClassicGroupEnv,
  type ClassicGroupLimits,
  type ClassicGroupView,
  type GenerationRef,
  type JoinOutcome,
  type JoinRequest,
  type LeaveOutcome,
  type MemberRef,
  type SyncOutcome,
  type SyncRequest,
} from "./classic-group.js";
import {
  CLASSIC_LIMITS,
  type ClassicGroupEntry,
  type ClassicGroupRecord,
} from "./classic-groups-state.js";
import { encodeEntry } from "./offsets-codec.js";
import { GROUP_LIMITS } from "./offsets-limits.js";
import type { OffsetsApplyResult, OffsetsStateMachine } from "./offsets-state-machine.js";
import { checkGroupId } from "./offsets-validation.js";

/** Kafka's broker defaults, except the session minimum (Kafka: 6 s) lowered for tests and small setups. */
export const CLASSIC_GROUP_LIMITS_DEFAULT: ClassicGroupLimits = {
  sessionTimeoutMsMin: 1_000,
  sessionTimeoutMsMax: 30 * 60 * 1000,
  rebalanceTimeoutMsMax: GROUP_LIMITS.rebalanceTimeoutMsMax,
  membersMax: GROUP_LIMITS.membersMax,
  initialRebalanceDelayMs: 3_000,
  protocolsMax: 64,
  memberBytesMax: CLASSIC_LIMITS.memberBytesMax,
};
const TICK_INTERVAL_MS = 100;
/** In-memory classic groups per partition (the log's bound on groups is the same). */
const GROUPS_IN_MEMORY_MAX = GROUP_LIMITS.groupsPerPartitionMax;

export interface ClassicCoordinatorOptions {
  readonly logger: Logger;
  /** Group deadlines and the tick's timer (a ManualClock in tests). */
  readonly clock: SchedulingClock;
  readonly coordinatorFor: (groupId: string) => { group: RaftGroup; partition: number };
  readonly stateMachineFor: (partition: number) => OffsetsStateMachine;
  readonly ledPartitions: () => Iterable<{
    partition: number;
    group: RaftGroup;
    machine: OffsetsStateMachine;
  }>;
  readonly propose: (group: RaftGroup, data: Uint8Array) => Promise<OffsetsApplyResult>;
  readonly readBarrier: (group: RaftGroup) => Promise<void>;
  readonly limits?: Partial<ClassicGroupLimits>;
  /** Called after every rebalance persisted (metrics). */
  readonly onRebalance?: (groupId: string) => void;
}

interface PartitionGroups {
  readonly term: number;
  readonly loaded: Promise<void>;
  readonly groups: Map<string, ClassicGroup>;
}

export class ClassicCoordinator {
  private readonly partitions = new Map<number, PartitionGroups>();
  private readonly limits: ClassicGroupLimits;
  private readonly timer: TimerHandle;
  private readonly log: Logger;

  constructor(private readonly options: ClassicCoordinatorOptions) {
    this.limits = { ...CLASSIC_GROUP_LIMITS_DEFAULT, ...options.limits };
    this.log = options.logger.child({ component: "classic-groups" });
    this.timer = options.clock.setInterval(() => this.tick(), TICK_INTERVAL_MS);
  }

  close(): void {
    this.options.clock.clearInterval(this.timer);
    for (const p of this.partitions.values())
      for (const g of p.groups.values())
        g.close("NOT_COORDINATOR", "the group coordinator is shutting down");
    this.partitions.clear();
  }

  async join(groupId: string, r: JoinRequest): Promise<JoinOutcome> {
    const { group, machine } = await this.groupFor(groupId, true);
    const other = machine.groups.get(groupId);
    if (other && other.members.size > 0) {
      throw new TernError(
        "INCONSISTENT_GROUP_PROTOCOL",
        `group ${JSON.stringify(groupId)} is a consumer group (KIP-848) with ${other.members.size} members`,
      );
    }
    return group!.join(r);
  }

  async sync(groupId: string, r: SyncRequest): Promise<SyncOutcome> {
    const { group } = await this.groupFor(groupId, false);
    if (!group)
      return {
        error: "UNKNOWN_MEMBER_ID",
        message: `group ${JSON.stringify(groupId)} has no members`,
        protocolType: "",
        protocolName: "",
        assignment: Buffer.alloc(0),
      };
    return group.sync(r);
  }

  async heartbeat(
    groupId: string,
    memberId: string,
    instanceId: string,
    generationId: number,
  ): Promise<{ error: ErrorName; message: string }> {
    const { group } = await this.groupFor(groupId, false);
    if (!group)
      return {
        error: "UNKNOWN_MEMBER_ID",
        message: `group ${JSON.stringify(groupId)} has no members`,
      };
    return group.heartbeat(memberId, instanceId, generationId);
  }

  async leave(groupId: string, refs: readonly MemberRef[]): Promise<LeaveOutcome[]> {
    const { group } = await this.groupFor(groupId, false);
    if (!group) return refs.map((r) => ({ ...r, error: "UNKNOWN_MEMBER_ID" }));
    return group.leave(refs);
  }

  /** Leader-side commit check for a classic group (undefined: not classic here, or accepted). */
  async checkCommit(
    groupId: string,
    f: GenerationRef,
    transactional: boolean,
  ): Promise<{ error: ErrorName; message: string } | undefined> {
    const { group } = await this.groupFor(groupId, false);
    return group?.checkCommit(f, transactional);
  }

  /** The group as the leader sees it now (undefined: no classic group of that id). */
  async describe(groupId: string): Promise<ClassicGroupView | undefined> {
    const { group } = await this.groupFor(groupId, false);
    return group?.view();
  }

  /** Classic groups in memory on the partitions this broker leads (the log's records fill in the rest). */
  views(): ClassicGroupView[] {
    const out: ClassicGroupView[] = [];
    for (const { partition, group } of this.options.ledPartitions()) {
      const p = this.partitions.get(partition);
      if (p && p.term === group.term()) for (const g of p.groups.values()) out.push(g.view());
    }
    return out;
  }

  /** DeleteGroups: refused while the group has members or a rebalance in flight. */
  async checkDeletable(groupId: string): Promise<void> {
    const { group } = await this.groupFor(groupId, false);
    if (group && group.state !== "Empty" && group.state !== "Dead") {
      throw new TernError(
        "NON_EMPTY_GROUP",
        `group ${JSON.stringify(groupId)} is ${group.state} with ${group.size} members`,
      );
    }
  }

  /** After DeleteGroups: the in-memory group is gone too. */
  forget(groupId: string): void {
    for (const p of this.partitions.values()) {
      const g = p.groups.get(groupId);
      if (!g) continue;
      g.close("COORDINATOR_NOT_AVAILABLE", `group ${JSON.stringify(groupId)} was deleted`, true);
      p.groups.delete(groupId);
    }
  }

  /**
   * The in-memory group (loaded from the log's record, or new when create is set); this broker
   * must lead the group's partition (NOT_COORDINATOR otherwise).
   */
  private async groupFor(
    groupId: string,
    create: boolean,
  ): Promise<{ group: ClassicGroup | undefined; machine: OffsetsStateMachine }> {
    const refusal = checkGroupId(groupId);
    if (refusal) throw new TernError(refusal.error, refusal.message);
    const { group: raft, partition } = this.options.coordinatorFor(groupId);
    const p = this.partitionGroups(partition, raft);
    try {
      await p.loaded;
    } catch (e) {
      if (this.partitions.get(partition) === p) this.partitions.delete(partition);
      throw new TernError(
        "COORDINATOR_LOAD_IN_PROGRESS",
        `loading ${partition}: ${String(e)}`,
        {},
        { cause: e },
      );
    }
    if (this.partitions.get(partition) !== p || !raft.isLeader())
      throw new TernError("NOT_COORDINATOR", `leadership of the group's partition moved`);
    const machine = this.options.stateMachineFor(partition);
    let group = p.groups.get(groupId);
    if (group) return { group, machine };
    const record = machine.classic.get(groupId);
    if (!record && !create) return { group: undefined, machine };
    if (p.groups.size >= GROUPS_IN_MEMORY_MAX)
      throw new TernError(
        "THROTTLING_QUOTA_EXCEEDED",
        `${p.groups.size} classic groups are active on this partition`,
      );
    group = new ClassicGroup(groupId, this.envFor(raft, groupId), record);
    p.groups.set(groupId, group);
    return { group, machine };
  }

  private partitionGroups(partition: number, raft: RaftGroup): PartitionGroups {
    const term = raft.term();
    const current = this.partitions.get(partition);
    if (current && current.term === term) return current;
    if (current)
      for (const g of current.groups.values())
        g.close("NOT_COORDINATOR", "the group coordinator changed");
    // Every entry of earlier terms must be applied before the records are read.
    const loaded = this.options.readBarrier(raft);
    // Handled where it is made: requests await it later, and none may (a term without requests).
    loaded.catch(() => undefined);
    const next: PartitionGroups = { term, loaded, groups: new Map() };
    this.partitions.set(partition, next);
    return next;
  }

  private envFor(raft: RaftGroup, groupId: string): ClassicGroupEnv {
    return {
      // Deadlines live in this leader's memory: monotonic, so a wall-clock step moves none.
      nowMs: () => this.options.clock.monotonicMs(),
      newMemberId: (prefix) => `${prefix.slice(0, 200)}-${randomUUID()}`,
      limits: this.limits,
      persist: (record) => this.persist(raft, groupId, record),
    };
  }

  private async persist(
    raft: RaftGroup,
    groupId: string,
    record: ClassicGroupRecord,
  ): Promise<{ error: ErrorName; message: string }> {
    const entry: ClassicGroupEntry = {
      type: "classic-group",
      ...record,
      timestampMs: this.options.clock.nowMs(),
    };
    const data = encodeEntry(entry);
    if (data.byteLength > CLASSIC_LIMITS.recordBytesMax) {
      return {
        error: "UNKNOWN_SERVER_ERROR",
        message: `group record of ${data.byteLength} bytes exceeds ${CLASSIC_LIMITS.recordBytesMax}`,
      };
    }
    try {
      const result = await this.options.propose(raft, data);
      if (result.type !== "group")
        return { error: "UNKNOWN_SERVER_ERROR", message: `unexpected apply result ${result.type}` };
      if (result.error === "NONE") {
        this.log.info(
          {
            groupId,
            generationId: record.generationId,
            members: record.members.length,
            protocol: record.protocolName,
          },
          "classic group generation recorded",
        );
        this.options.onRebalance?.(groupId);
      } else
        this.log.warn(
          { groupId, error: result.error, message: result.message },
          "classic group record refused",
        );
      return { error: result.error, message: result.message };
    } catch (e) {
      this.log.warn({ err: e, groupId }, "classic group record not written");
      return isTernError(e)
        ? { error: e.errorName, message: e.message }
        : { error: "UNKNOWN_SERVER_ERROR", message: String(e) };
    }
  }

  private tick(): void {
    const led = new Map<number, RaftGroup>();
    for (const { partition, group } of this.options.ledPartitions())
      if (group.isLeader()) led.set(partition, group);
    for (const [partition, p] of this.partitions) {
      if (led.get(partition)?.term() !== p.term) {
        for (const g of p.groups.values())
          g.close("NOT_COORDINATOR", "this broker no longer leads the group's partition");
        this.partitions.delete(partition);
        continue;
      }
      for (const [id, g] of p.groups) {
        try {
          g.tick();
        } catch (e) {
          this.log.error({ err: e, groupId: id }, "classic group tick failed");
        }
        if (g.isIdle()) p.groups.delete(id);
      }
    }
  }
}
