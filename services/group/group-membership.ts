// The leader side of consumer-group membership (KIP-848) on a group coordinator: turns
// ConsumerGroupHeartbeat calls into Raft entries (a steady member's heartbeat, which would
// change nothing, is answered from the applied state without a proposal), and watches
// sessions: a member not heard from within the session timeout, or holding a revoked partition
// past its rebalance timeout, is fenced by a proposed entry. Session clocks are the leader's
// own and are not replicated (as in Kafka): a new leader gives every member a full session.
import { TernError } from "../../libs/common/errors.js";
import type { SchedulingClock, TimerHandle } from "../../libs/runtime/scheduler.js";
import type { Logger } from "../../libs/common/logger.js";
import type { ClusterMetadata } from "../../libs/metadata/types.js";
import type { RaftGroup } from "../../libs/raft-host/api.js";
import { LEAVE_EPOCH, type HeartbeatResult } from "./consumer-groups.js";
import type { FenceEntry, HeartbeatEntry, TopicPartitionsRow } from "./group-codec.js";
import { encodeEntry } from "./offsets-codec.js";
import type { OffsetsApplyResult, OffsetsStateMachine } from "./offsets-state-machine.js";
import { checkGroupId } from "./offsets-validation.js";
import { matchingTopics } from "./subscription-regex.js";

/** Kafka's group.consumer.session.timeout.ms and group.consumer.heartbeat.interval.ms defaults. */
export const SESSION_TIMEOUT_MS_DEFAULT = 45_000;
export const HEARTBEAT_INTERVAL_MS_DEFAULT = 5_000;
const SWEEP_INTERVAL_MS_MAX = 1_000;
/** Fences proposed by one sweep; the next sweep carries on. */
const FENCES_PER_SWEEP_MAX = 100;
/** Patterns whose matches are kept for the current metadata view. */
const REGEX_CACHE_PATTERNS_MAX = 1_000;

export interface WireTopicPartitions {
  topic?: string;
  partitions?: number[];
}

export interface WireHeartbeatRequest {
  groupId?: string;
  memberId?: string;
  memberEpoch?: number;
  instanceId?: string;
  rackId?: string;
  rebalanceTimeoutMs?: number;
  subscribedTopicNames?: string[];
  subscribedTopicRegex?: string;
  serverAssignor?: string;
  topicPartitions?: WireTopicPartitions[];
  clientId?: string;
  /** Set by the gRPC authorizer: topics the caller may not DESCRIBE, left out of its regex matches. */
  regexHiddenTopics?: string[];
}

export interface WireHeartbeatResponse {
  memberId: string;
  memberEpoch: number;
  heartbeatIntervalMs: number;
  assignment: Array<{ topic: string; partitions: number[] }>;
}

/**
 * What a member last sent, as the group holds it: the fields a Kafka client's heartbeat leaves
 * null when they did not change (the Kafka listener fills them in from here). `owned` is what
 * the member is taken to own now: its assignment and the partitions it has yet to give up.
 */
export interface CurrentMember {
  readonly memberEpoch: number;
  readonly instanceId: string;
  readonly rackId: string;
  readonly rebalanceTimeoutMs: number;
  readonly subscribedTopicNames: readonly string[];
  readonly subscribedTopicRegex: string;
  readonly serverAssignor: string;
  readonly owned: ReadonlyArray<{ topic: string; partitions: number[] }>;
}

export interface GroupMembershipOptions {
  readonly logger: Logger;
  /** Session clocks and the sweep's timer (a ManualClock in tests). */
  readonly clock: SchedulingClock;
  readonly metadata: () => ClusterMetadata | undefined;
  /** The Raft group of the group id's partition, which this broker must lead (throws NOT_COORDINATOR). */
  readonly coordinatorFor: (groupId: string) => { group: RaftGroup; partition: number };
  readonly stateMachineFor: (partition: number) => OffsetsStateMachine;
  /** Partitions with a state machine here, and their Raft group when open. */
  readonly ledPartitions: () => Iterable<{
    partition: number;
    group: RaftGroup;
    machine: OffsetsStateMachine;
  }>;
  readonly propose: (group: RaftGroup, data: Uint8Array) => Promise<OffsetsApplyResult>;
  readonly sessionTimeoutMs?: number;
  readonly heartbeatIntervalMs?: number;
  /** Called after every applied membership change (metrics). */
  readonly onRebalance?: (groupId: string) => void;
}

interface PartitionSessions {
  term: number;
  /** Monotonic ms when this leadership began (a member not seen since counts from it). */
  sinceMs: number;
  /** "group\0member" → monotonic ms of the member's last accepted heartbeat on this leader. */
  readonly lastSeen: Map<string, number>;
}

export class GroupMembership {
  readonly sessionTimeoutMs: number;
  readonly heartbeatIntervalMs: number;
  private readonly sessions = new Map<number, PartitionSessions>();
  private readonly timer: TimerHandle;
  private sweeping = false;
  private readonly log: Logger;
  /** Regex matches of the newest metadata view seen, per pattern. */
  private regexCache = new WeakMap<ClusterMetadata, Map<string, string[]>>();

  constructor(private readonly options: GroupMembershipOptions) {
    this.sessionTimeoutMs = options.sessionTimeoutMs ?? SESSION_TIMEOUT_MS_DEFAULT;
    this.heartbeatIntervalMs = options.heartbeatIntervalMs ?? HEARTBEAT_INTERVAL_MS_DEFAULT;
    if (!(this.heartbeatIntervalMs > 0 && this.heartbeatIntervalMs < this.sessionTimeoutMs)) {
      throw new RangeError(
        `group heartbeat interval ${this.heartbeatIntervalMs} ms must be positive and below the session timeout ${this.sessionTimeoutMs} ms`,
      );
    }
    this.log = options.logger.child({ component: "group-membership" });
    this.timer = options.clock.setInterval(
      () => void this.sweep(),
      Math.min(SWEEP_INTERVAL_MS_MAX, Math.floor(this.sessionTimeoutMs / 4)),
    );
  }

  close(): void {
    this.options.clock.clearInterval(this.timer);
  }

  /** The member's current fields on this coordinator (NOT_COORDINATOR elsewhere); undefined when it is no member. */
  currentMember(groupId: string, memberId: string): CurrentMember | undefined {
    const { partition } = this.options.coordinatorFor(groupId);
    const m = this.options.stateMachineFor(partition).groups.get(groupId)?.members.get(memberId);
    if (!m) return undefined;
    const owned = new Map<string, Set<number>>();
    for (const a of [m.assigned, m.pendingRevocation])
      for (const [topic, ps] of a) {
        const set = owned.get(topic) ?? new Set<number>();
        for (const p of ps) set.add(p);
        owned.set(topic, set);
      }
    return {
      memberEpoch: m.memberEpoch,
      instanceId: m.instanceId,
      rackId: m.rackId,
      rebalanceTimeoutMs: m.rebalanceTimeoutMs,
      subscribedTopicNames: [...m.subscribedTopicNames],
      subscribedTopicRegex: m.subscribedTopicRegex,
      serverAssignor: m.serverAssignor,
      owned: [...owned].map(([topic, ps]) => ({
        topic,
        partitions: [...ps].sort((a, b) => a - b),
      })),
    };
  }

  async heartbeat(
    request: WireHeartbeatRequest,
    clientHost: string,
  ): Promise<WireHeartbeatResponse> {
    const groupId = request.groupId ?? "";
    const refusal = checkGroupId(groupId);
    if (refusal) throw new TernError(refusal.error, refusal.message);
    const { group, partition } = this.options.coordinatorFor(groupId);
    const machine = this.options.stateMachineFor(partition);
    const metadata = this.options.metadata();
    if (!metadata)
      throw new TernError("COORDINATOR_LOAD_IN_PROGRESS", "the broker has no cluster metadata yet");
    const names = (request.subscribedTopicNames ?? []).filter((t) => t !== "");
    const entry: HeartbeatEntry = {
      type: "group-heartbeat",
      groupId,
      memberId: request.memberId ?? "",
      memberEpoch: request.memberEpoch ?? 0,
      instanceId: request.instanceId ?? "",
      rackId: request.rackId ?? "",
      clientId: request.clientId ?? "",
      clientHost,
      rebalanceTimeoutMs: request.rebalanceTimeoutMs ?? 0,
      subscribedTopicNames: names,
      subscribedTopicRegex: request.subscribedTopicRegex ?? "",
      serverAssignor: request.serverAssignor ?? "",
      ownedPartitions: (request.topicPartitions ?? []).map((tp): TopicPartitionsRow => [
        tp.topic ?? "",
        [...(tp.partitions ?? [])],
      ]),
      timestampMs: this.options.clock.nowMs(),
      topics: [],
    };
    const regexTopics =
      entry.subscribedTopicRegex === ""
        ? undefined
        : this.regexMatches(metadata, entry.subscribedTopicRegex, request.regexHiddenTopics ?? []);
    const resolved: HeartbeatEntry = regexTopics ? { ...entry, regexTopics } : entry;
    const withTopics: HeartbeatEntry = {
      ...resolved,
      topics: this.subscribedTopics(metadata, machine, resolved),
    };
    let result: OffsetsApplyResult | undefined = machine.groups.dryRun(withTopics);
    if (!result) {
      result = await this.options.propose(group, encodeEntry(withTopics));
      if (result.type === "heartbeat" && result.error === "NONE")
        this.options.onRebalance?.(groupId);
    }
    if (result.type !== "heartbeat")
      throw new TernError("UNKNOWN_SERVER_ERROR", `unexpected apply result ${result.type}`);
    if (result.error !== "NONE") throw new TernError(result.error, result.message);
    // A static leave (-2) keeps the member: its session clock runs from the leave, so the
    // instance has a full session timeout to come back (dropping the clock made the next sweep
    // count from the leadership's start and fence it at once: the static restart rebalanced).
    this.touch(partition, group, groupId, entry.memberId, entry.memberEpoch === LEAVE_EPOCH);
    return heartbeatResponse(result, this.heartbeatIntervalMs);
  }

  /** Partition counts of the topics the group (with this request's subscription) subscribes to. */
  private subscribedTopics(
    metadata: ClusterMetadata,
    machine: OffsetsStateMachine,
    e: HeartbeatEntry,
  ): Array<[string, number]> {
    const names = new Set([...e.subscribedTopicNames, ...(e.regexTopics ?? [])]);
    for (const m of machine.groups.get(e.groupId)?.members.values() ?? []) {
      if (m.memberId === e.memberId) continue;
      for (const t of m.subscribedTopicNames) names.add(t);
      for (const t of m.regexTopics) names.add(t);
    }
    return metadata.topics
      .filter((t) => !t.internal && names.has(t.name))
      .map((t): [string, number] => [t.name, t.partitions.length]);
  }

  /**
   * The data topics a member's regex matches, less those it may not DESCRIBE, sorted. Matching
   * is linear-time (subscription-regex.ts) and runs once per metadata view and pattern: a
   * steady member's heartbeats reuse the answer.
   */
  private regexMatches(
    metadata: ClusterMetadata,
    source: string,
    hidden: readonly string[],
  ): string[] {
    let byPattern = this.regexCache.get(metadata);
    if (!byPattern) {
      byPattern = new Map();
      this.regexCache = new WeakMap([[metadata, byPattern]]);
    }
    let matched = byPattern.get(source);
    if (!matched) {
      if (byPattern.size >= REGEX_CACHE_PATTERNS_MAX) byPattern.clear();
      matched = matchingTopics(
        source,
        metadata.topics.filter((t) => !t.internal).map((t) => t.name),
      ).sort();
      byPattern.set(source, matched);
    }
    if (hidden.length === 0) return matched;
    const hide = new Set(hidden);
    return matched.filter((t) => !hide.has(t));
  }

  private sessionsOf(partition: number, group: RaftGroup): PartitionSessions {
    let s = this.sessions.get(partition);
    // A new term here means a new leadership: every member starts a full session now.
    if (!s || s.term !== group.term()) {
      s = { term: group.term(), sinceMs: this.options.clock.monotonicMs(), lastSeen: new Map() };
      this.sessions.set(partition, s);
    }
    return s;
  }

  private touch(
    partition: number,
    group: RaftGroup,
    groupId: string,
    memberId: string,
    left: boolean,
  ): void {
    const s = this.sessionsOf(partition, group);
    const key = `${groupId}\u0000${memberId}`;
    if (left) s.lastSeen.delete(key);
    else s.lastSeen.set(key, this.options.clock.monotonicMs());
  }

  /** Fences members whose session or rebalance timeout passed, on the partitions this broker leads. */
  private async sweep(): Promise<void> {
    if (this.sweeping) return;
    this.sweeping = true;
    try {
      let fences = 0;
      for (const { partition, group, machine } of this.options.ledPartitions()) {
        if (!group.isLeader()) {
          this.sessions.delete(partition);
          continue;
        }
        const s = this.sessionsOf(partition, group);
        // Sessions live in this leader's memory: timed on the monotonic clock, so a step of the
        // wall clock neither fences live members nor keeps silent ones. The revocation deadline
        // is in the replicated state, stamped by wall clock.
        const monotonicNow = this.options.clock.monotonicMs();
        const now = this.options.clock.nowMs();
        for (const groupId of machine.groups.ids()) {
          const g = machine.groups.get(groupId);
          for (const m of [...(g?.members.values() ?? [])]) {
            if (fences >= FENCES_PER_SWEEP_MAX) return;
            const key = `${groupId}\u0000${m.memberId}`;
            const last = s.lastSeen.get(key) ?? s.sinceMs;
            let reason: FenceEntry["reason"] | undefined;
            if (monotonicNow - last > this.sessionTimeoutMs) reason = "session-timeout";
            else if (m.revocationDeadlineMs >= 0 && now > m.revocationDeadlineMs)
              reason = "rebalance-timeout";
            if (!reason) continue;
            fences++;
            const entry: FenceEntry = {
              type: "group-fence",
              groupId,
              memberId: m.memberId,
              memberEpoch: m.memberEpoch,
              reason,
              timestampMs: now,
            };
            const result = await this.options.propose(group, encodeEntry(entry));
            if (result.type === "group" && result.error === "NONE") {
              s.lastSeen.delete(key);
              this.log.info(
                { groupId, memberId: m.memberId, memberEpoch: m.memberEpoch, reason },
                "member fenced",
              );
              this.options.onRebalance?.(groupId);
            }
          }
        }
        for (const key of s.lastSeen.keys()) {
          const cut = key.indexOf("\u0000");
          if (!machine.groups.get(key.slice(0, cut))?.members.has(key.slice(cut + 1)))
            s.lastSeen.delete(key);
        }
      }
    } catch (e) {
      this.log.warn({ err: e }, "group session sweep stopped; the next sweep retries");
    } finally {
      this.sweeping = false;
    }
  }
}

function heartbeatResponse(r: HeartbeatResult, heartbeatIntervalMs: number): WireHeartbeatResponse {
  return {
    memberId: r.memberId,
    memberEpoch: r.memberEpoch,
    heartbeatIntervalMs,
    assignment: r.assignment.map(([topic, partitions]) => ({ topic, partitions })),
  };
}
