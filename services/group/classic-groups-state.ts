// The replicated part of classic consumer groups (JoinGroup/SyncGroup) in a __consumer_offsets/N
// partition: per group the outcome of its last completed rebalance, written by the group's
// leader-side state machine (classic-group.ts) when the leader's SyncGroup assignment arrives
// (or when the group becomes empty): generation, protocol, leader, members with their
// subscription and assignment. As in Kafka, join progress itself is not replicated. Commit
// fencing of classic groups is checked against this while applying, so a commit of an older
// generation ordered after the new generation's record is refused on every replica; and a
// group id is either classic or a KIP-848 consumer group, never both. Pure and deterministic.
import type { ErrorName } from "../../libs/common/errors.js";
import type { ConsumerGroups, HeartbeatResult } from "./consumer-groups.js";
import { parseSubscription } from "./consumer-protocol.js";
import type { HeartbeatEntry } from "./group-codec.js";
import { int, object, str, type GenerationFields } from "./entry-fields.js";
import { GROUP_LIMITS } from "./offsets-limits.js";
import { checkGroupId, type Refusal } from "./offsets-validation.js";
import { DecodeError } from "../../libs/common/decode-error.js";

export const CLASSIC_LIMITS = {
  /** Kafka member ids are the client id (or instance id) plus "-" and a UUID. */
  memberIdCharsMax: 512,
  protocolCharsMax: 255,
  /** One member's subscription or assignment bytes. */
  memberBytesMax: 128 * 1024,
  /** A whole record (all members' bytes, base64, as JSON): one Raft entry. */
  recordBytesMax: 512 * 1024,
} as const;

export interface ClassicMemberRecord {
  readonly memberId: string;
  readonly instanceId: string;
  readonly clientId: string;
  readonly clientHost: string;
  readonly sessionTimeoutMs: number;
  readonly rebalanceTimeoutMs: number;
  /** The member's metadata for the selected protocol (its Subscription), base64. */
  readonly metadata: string;
  /** What the leader assigned it (an Assignment), base64. */
  readonly assignment: string;
}

export interface ClassicGroupRecord {
  readonly groupId: string;
  readonly generationId: number;
  readonly protocolType: string;
  /** "" while the group is empty. */
  readonly protocolName: string;
  readonly leader: string;
  /** Empty: the group has no members (state Empty). */
  readonly members: readonly ClassicMemberRecord[];
}

/** Proposed by the group's coordinator when a rebalance completes (or the group empties). */
export interface ClassicGroupEntry extends ClassicGroupRecord {
  readonly type: "classic-group";
  readonly timestampMs: number;
}

export type ClassicApplyResult = {
  readonly type: "group";
  readonly error: ErrorName;
  readonly message: string;
};

export class ClassicGroupsState {
  private groups = new Map<string, ClassicGroupRecord>();

  get(groupId: string): ClassicGroupRecord | undefined {
    return this.groups.get(groupId);
  }

  ids(): string[] {
    return [...this.groups.keys()];
  }

  get size(): number {
    return this.groups.size;
  }

  apply(e: ClassicGroupEntry, consumer: ConsumerGroups): ClassicApplyResult {
    const refusal = checkGroupId(e.groupId) ?? checkRecord(e) ?? this.checkAgainst(e, consumer);
    if (refusal) return { type: "group", ...refusal };
    // An empty KIP-848 group of the same id becomes this classic group (as Kafka converts).
    if (consumer.get(e.groupId)) consumer.delete({ type: "group-delete", groupId: e.groupId });
    const { type: _type, timestampMs: _ts, ...record } = e;
    this.groups.set(e.groupId, record);
    return { type: "group", error: "NONE", message: "" };
  }

  private checkAgainst(e: ClassicGroupEntry, consumer: ConsumerGroups): Refusal | undefined {
    const other = consumer.get(e.groupId);
    if (other && other.members.size > 0) {
      return {
        error: "INCONSISTENT_GROUP_PROTOCOL",
        message: `group ${JSON.stringify(e.groupId)} is a consumer group (KIP-848) with ${other.members.size} members`,
      };
    }
    const current = this.groups.get(e.groupId);
    if (current && e.generationId < current.generationId) {
      return {
        error: "ILLEGAL_GENERATION",
        message: `generation ${e.generationId} is older than the recorded ${current.generationId}`,
      };
    }
    if (
      !current &&
      !other &&
      this.groups.size + consumer.size >= GROUP_LIMITS.groupsPerPartitionMax
    ) {
      return {
        error: "THROTTLING_QUOTA_EXCEEDED",
        message: `this partition already holds ${this.groups.size + consumer.size} groups`,
      };
    }
    return undefined;
  }

  /**
   * A ConsumerGroupHeartbeat for a classic group with members is refused (GROUP_ID_NOT_FOUND,
   * as Kafka 4: "not a consumer group"); undefined lets it through.
   */
  refuseConsumerHeartbeat(e: HeartbeatEntry): HeartbeatResult | undefined {
    const g = this.groups.get(e.groupId);
    if (!g || g.members.length === 0) return undefined;
    return {
      type: "heartbeat",
      error: "GROUP_ID_NOT_FOUND",
      message: `group ${JSON.stringify(e.groupId)} is a classic group (JoinGroup/SyncGroup), not a consumer group`,
      memberId: e.memberId,
      memberEpoch: e.memberEpoch,
      assignment: [],
    };
  }

  /** An empty classic group gives way to a consumer group that was just created under its id. */
  dropEmpty(groupId: string): void {
    if (this.groups.get(groupId)?.members.length === 0) this.groups.delete(groupId);
  }

  /** Removes an empty group (DeleteGroups); a group with members is NON_EMPTY_GROUP. */
  delete(groupId: string): Refusal | undefined {
    const g = this.groups.get(groupId);
    if (g && g.members.length > 0)
      return {
        error: "NON_EMPTY_GROUP",
        message: `group ${JSON.stringify(groupId)} has ${g.members.length} members`,
      };
    this.groups.delete(groupId);
    return undefined;
  }

  /** Whether a member's subscription (protocol type "consumer") names the topic. */
  isSubscribed(groupId: string, topic: string): boolean {
    const g = this.groups.get(groupId);
    if (!g || g.protocolType !== "consumer") return false;
    return g.members.some((m) =>
      parseSubscription(Buffer.from(m.metadata, "base64")).topics.includes(topic),
    );
  }

  /**
   * Kafka's classic commit fencing: generation -1 on an empty group is a simple commit; else the
   * member must be in the recorded generation (static members: the instance id's current
   * member). A transactional commit without generation and member (pre-KIP-447 clients) passes.
   * undefined when the group is not classic (the caller asks the consumer groups).
   */
  validateCommit(
    groupId: string,
    f: GenerationFields,
    transactional: boolean,
  ): Refusal | "not-classic" | undefined {
    const g = this.groups.get(groupId);
    if (!g) return "not-classic";
    const simple = f.generationId < 0;
    if (g.members.length === 0) {
      if (simple) return undefined;
      return {
        error: "UNKNOWN_MEMBER_ID",
        message: `group ${JSON.stringify(groupId)} is empty; member ${JSON.stringify(f.memberId)} is not in it`,
      };
    }
    if (transactional && simple && f.memberId === "" && f.groupInstanceId === "") return undefined;
    if (f.groupInstanceId !== "") {
      const holder = g.members.find((m) => m.instanceId === f.groupInstanceId);
      if (holder && holder.memberId !== f.memberId) {
        return {
          error: "FENCED_INSTANCE_ID",
          message: `instance id ${JSON.stringify(f.groupInstanceId)} now belongs to member ${holder.memberId}`,
        };
      }
    }
    if (!g.members.some((m) => m.memberId === f.memberId)) {
      return {
        error: "UNKNOWN_MEMBER_ID",
        message: `member ${JSON.stringify(f.memberId)} is not in generation ${g.generationId} of group ${JSON.stringify(groupId)}`,
      };
    }
    if (f.generationId !== g.generationId) {
      return {
        error: "ILLEGAL_GENERATION",
        message: `generation ${f.generationId} is not the group's generation ${g.generationId}`,
      };
    }
    return undefined;
  }

  snapshotRows(): ClassicGroupRecord[] {
    return [...this.groups.values()];
  }

  restoreRows(rows: readonly ClassicGroupRecord[]): void {
    this.groups = new Map(rows.map((r) => [r.groupId, r]));
  }
}

function checkRecord(e: ClassicGroupRecord): Refusal | undefined {
  const bad = (message: string): Refusal => ({ error: "INVALID_REQUEST", message });
  if (e.generationId < 0) return bad(`generation ${e.generationId} is negative`);
  if (e.members.length > GROUP_LIMITS.membersMax)
    return {
      error: "GROUP_MAX_SIZE_REACHED",
      message: `${e.members.length} members, limit ${GROUP_LIMITS.membersMax}`,
    };
  if (
    e.protocolType.length > CLASSIC_LIMITS.protocolCharsMax ||
    e.protocolName.length > CLASSIC_LIMITS.protocolCharsMax
  )
    return bad("protocol type or name too long");
  for (const m of e.members) {
    if (m.memberId === "" || m.memberId.length > CLASSIC_LIMITS.memberIdCharsMax)
      return bad(`member id must have 1..${CLASSIC_LIMITS.memberIdCharsMax} characters`);
    if (
      m.instanceId.length > GROUP_LIMITS.instanceIdCharsMax ||
      m.clientId.length > GROUP_LIMITS.clientIdCharsMax ||
      m.clientHost.length > GROUP_LIMITS.clientHostCharsMax
    )
      return bad("instance id, client id or client host too long");
  }
  return undefined;
}

export function decodeClassicGroupEntry(o: Record<string, unknown>): ClassicGroupEntry {
  if (!Array.isArray(o.members)) throw new DecodeError("offsets", "members must be an array");
  return {
    type: "classic-group",
    groupId: str(o.groupId, "groupId"),
    generationId: int(o.generationId, "generationId"),
    protocolType: str(o.protocolType, "protocolType"),
    protocolName: str(o.protocolName, "protocolName"),
    leader: str(o.leader, "leader"),
    timestampMs: int(o.timestampMs, "timestampMs"),
    members: o.members.map((raw): ClassicMemberRecord => {
      const m = object(raw, "member");
      return {
        memberId: str(m.memberId, "memberId"),
        instanceId: str(m.instanceId, "instanceId"),
        clientId: str(m.clientId, "clientId"),
        clientHost: str(m.clientHost, "clientHost"),
        sessionTimeoutMs: int(m.sessionTimeoutMs, "sessionTimeoutMs"),
        rebalanceTimeoutMs: int(m.rebalanceTimeoutMs, "rebalanceTimeoutMs"),
        metadata: str(m.metadata, "metadata"),
        assignment: str(m.assignment, "assignment"),
      };
    }),
  };
}
