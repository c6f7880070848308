// Consumer groups of one __consumer_offsets/N partition under Kafka 4's consumer rebalance
// protocol (KIP-848): members with member epochs, a group epoch bumped by every change of
// membership, subscriptions or subscribed-topic metadata, a target assignment computed by a
// server-side assignor for that epoch, and per member the partitions it may own now and those
// it must give up first. Reconciliation is incremental: a partition leaves its owner (who
// acknowledges by no longer reporting it) before it is given to anyone else, and members whose
// partitions do not move keep them. Pure and deterministic (part of the offsets state machine):
// time and metadata come inside the entries. Members carry a protocol tag so that the classic
// protocol (JoinGroup/SyncGroup) can later share these groups, as in Kafka.
import type { ErrorName } from "../../libs/common/errors.js";
import {
  assign,
  DEFAULT_ASSIGNOR,
  isAssignorName,
  type Assignment,
  type AssignorName,
} from "./assignors.js";
import type {
  DeleteGroupEntry,
  FenceEntry,
  HeartbeatEntry,
  TopicPartitionsRow,
} from "./group-codec.js";
import { GROUP_LIMITS } from "./offsets-limits.js";
import type { GenerationFields } from "./entry-fields.js";
import type { Refusal } from "./offsets-validation.js";
import { compileSubscriptionRegex, matchingTopics } from "./subscription-regex.js";

/** KIP-848 member states. */
export type MemberState = "STABLE" | "UNREVOKED_PARTITIONS" | "UNRELEASED_PARTITIONS";
/** What DescribeGroups reports (Kafka's ConsumerGroupState names). */
export type GroupState = "EMPTY" | "RECONCILING" | "STABLE";

export const JOIN_EPOCH = 0;
export const LEAVE_EPOCH = -1;
export const STATIC_LEAVE_EPOCH = -2;

export interface Member {
  memberId: string;
  instanceId: string;
  rackId: string;
  clientId: string;
  clientHost: string;
  /** "consumer" (KIP-848); "classic" is reserved for JoinGroup/SyncGroup members. */
  protocol: "consumer";
  subscribedTopicNames: string[];
  subscribedTopicRegex: string;
  /**
   * The existing topics the regex matched that the member may DESCRIBE, sorted: resolved by
   * the leader (HeartbeatEntry.regexTopics), so applying an entry never runs the regex.
   */
  regexTopics: string[];
  serverAssignor: string;
  rebalanceTimeoutMs: number;
  /** STATIC_LEAVE_EPOCH while a static member is away (its partitions wait for it). */
  memberEpoch: number;
  previousMemberEpoch: number;
  state: MemberState;
  /** Partitions the member may own now. */
  assigned: Assignment;
  /** Partitions it must give up before its epoch advances (nobody else gets them meanwhile). */
  pendingRevocation: Assignment;
  /** Leader time by which pendingRevocation must be acknowledged; -1 when none is pending. */
  revocationDeadlineMs: number;
}

export interface ConsumerGroup {
  readonly groupId: string;
  groupEpoch: number;
  /** The epoch the target assignment was computed for (always the group epoch here: assignors run synchronously). */
  assignmentEpoch: number;
  readonly members: Map<string, Member>;
  readonly target: Map<string, Assignment>;
  /** Partition counts of the existing subscribed topics the target was computed from. */
  metadata: Map<string, number>;
  rebalances: number;
}

export type HeartbeatResult = {
  readonly type: "heartbeat";
  readonly error: ErrorName;
  readonly message: string;
  readonly memberId: string;
  readonly memberEpoch: number;
  readonly assignment: readonly TopicPartitionsRow[];
};

export interface MemberView {
  readonly memberId: string;
  readonly instanceId: string;
  readonly rackId: string;
  readonly clientId: string;
  readonly clientHost: string;
  readonly memberEpoch: number;
  readonly state: MemberState;
  readonly subscribedTopicNames: readonly string[];
  readonly subscribedTopicRegex: string;
  readonly assigned: readonly TopicPartitionsRow[];
  readonly pendingRevocation: readonly TopicPartitionsRow[];
  readonly target: readonly TopicPartitionsRow[];
}

export interface GroupView {
  readonly groupId: string;
  readonly state: GroupState;
  readonly groupEpoch: number;
  readonly assignmentEpoch: number;
  readonly assignor: string;
  readonly rebalances: number;
  readonly members: readonly MemberView[];
}

export class ConsumerGroups {
  private groups = new Map<string, ConsumerGroup>();

  get(groupId: string): ConsumerGroup | undefined {
    return this.groups.get(groupId);
  }

  ids(): string[] {
    return [...this.groups.keys()];
  }

  get size(): number {
    return this.groups.size;
  }

  /**
   * The heartbeat's answer without changing anything, when applying it would change nothing
   * (a steady member's heartbeat): undefined when it must go through the Raft log.
   */
  dryRun(e: HeartbeatEntry): HeartbeatResult | undefined {
    const group = this.groups.get(e.groupId);
    if (!group || checkHeartbeat(e)) return undefined;
    const before = JSON.stringify(groupToJson(group));
    const trial = groupFromJson(JSON.parse(before) as GroupJson);
    const result = heartbeat(trial, e);
    if (result.error !== "NONE") return undefined;
    return JSON.stringify(groupToJson(trial)) === before ? result : undefined;
  }

  heartbeat(e: HeartbeatEntry): HeartbeatResult {
    const refusal = checkHeartbeat(e);
    if (refusal) return refuseHeartbeat(e, refusal);
    let group = this.groups.get(e.groupId);
    if (!group) {
      if (e.memberEpoch < 0)
        return {
          type: "heartbeat",
          error: "NONE",
          message: "",
          memberId: e.memberId,
          memberEpoch: e.memberEpoch,
          assignment: [],
        };
      if (e.memberEpoch !== JOIN_EPOCH)
        return refuseHeartbeat(e, {
          error: "UNKNOWN_MEMBER_ID",
          message: `group ${JSON.stringify(e.groupId)} has no member ${e.memberId}`,
        });
      if (this.groups.size >= GROUP_LIMITS.groupsPerPartitionMax)
        return refuseHeartbeat(e, {
          error: "THROTTLING_QUOTA_EXCEEDED",
          message: `this partition already holds ${this.groups.size} consumer groups`,
        });
      group = newGroup(e.groupId);
    }
    const result = heartbeat(group, e);
    // A group is kept once created (its epoch must never go back); DeleteGroups removes it.
    if (result.error === "NONE" || this.groups.has(e.groupId)) this.groups.set(e.groupId, group);
    return result;
  }

  fence(e: FenceEntry): { type: "group"; error: ErrorName; message: string } {
    const group = this.groups.get(e.groupId);
    const member = group?.members.get(e.memberId);
    if (!group || !member || member.memberEpoch !== e.memberEpoch) {
      return {
        type: "group",
        error: "UNKNOWN_MEMBER_ID",
        message: `no member ${e.memberId} at epoch ${e.memberEpoch} in group ${JSON.stringify(e.groupId)}`,
      };
    }
    removeMember(group, member);
    return { type: "group", error: "NONE", message: "" };
  }

  /** Removes the group's membership state; the caller checks it is empty and drops its offsets. */
  delete(e: DeleteGroupEntry): Refusal | undefined {
    const group = this.groups.get(e.groupId);
    if (group && group.members.size > 0)
      return {
        error: "NON_EMPTY_GROUP",
        message: `group ${JSON.stringify(e.groupId)} has ${group.members.size} members`,
      };
    this.groups.delete(e.groupId);
    return undefined;
  }

  /** True when a member of the group is subscribed to the topic (its offsets must not be deleted). */
  isSubscribed(groupId: string, topic: string): boolean {
    const group = this.groups.get(groupId);
    if (!group) return false;
    return [...group.members.values()].some(
      (m) => memberTopics(m, group.metadata).has(topic) || m.subscribedTopicNames.includes(topic),
    );
  }

  /**
   * KIP-848 fencing of OffsetCommit / TxnOffsetCommit: a group with members accepts commits only
   * from a member at its current epoch (or an older epoch of it, for partitions it owns now);
   * an empty (or unknown) group accepts simple commits.
   */
  validateCommit(
    groupId: string,
    fields: GenerationFields,
    partitions?: ReadonlyArray<{ topic: string; partition: number }>,
  ): Refusal | undefined {
    const group = this.groups.get(groupId);
    const simple =
      fields.generationId === -1 || (fields.generationId === 0 && fields.memberId === "");
    if (!group || group.members.size === 0) {
      if (simple) return undefined;
      if (!group)
        return {
          error: "ILLEGAL_GENERATION",
          message: `group ${JSON.stringify(groupId)} has no active generation ${fields.generationId}`,
        };
      return {
        error: "UNKNOWN_MEMBER_ID",
        message: `group ${JSON.stringify(groupId)} has no member ${JSON.stringify(fields.memberId)}`,
      };
    }
    const member = group.members.get(fields.memberId);
    if (!member) {
      return {
        error: "UNKNOWN_MEMBER_ID",
        message: `group ${JSON.stringify(groupId)} has members; ${fields.memberId === "" ? "a commit without a member id" : `member ${fields.memberId}`} is not one of them`,
      };
    }
    if (fields.generationId > member.memberEpoch) {
      return {
        error: "FENCED_MEMBER_EPOCH",
        message: `member ${member.memberId} epoch ${fields.generationId} is newer than its epoch ${member.memberEpoch}`,
      };
    }
    if (fields.generationId < member.memberEpoch) {
      // An older epoch of the same member is still safe for partitions it owns now (assigned or
      // being revoked: nobody else can own them). Its answer may still be on the way while the
      // epoch moved on; a transaction open across that moment must not abort (as KIP-1251).
      const ownsAll =
        partitions !== undefined &&
        partitions.length > 0 &&
        partitions.every(
          (p) =>
            has(member.assigned, p.topic, p.partition) ||
            has(member.pendingRevocation, p.topic, p.partition),
        );
      if (fields.generationId >= 0 && ownsAll) return undefined;
      return {
        error: "STALE_MEMBER_EPOCH",
        message: `member ${member.memberId} epoch ${fields.generationId} is older than its epoch ${member.memberEpoch}`,
      };
    }
    return undefined;
  }

  describe(groupId: string): GroupView | undefined {
    const group = this.groups.get(groupId);
    return group ? viewOf(group) : undefined;
  }

  snapshotRows(): GroupJson[] {
    return [...this.groups.values()].map(groupToJson);
  }

  restoreRows(rows: readonly GroupJson[]): void {
    this.groups = new Map(rows.map((r) => [r.groupId, groupFromJson(r)]));
  }
}

function newGroup(groupId: string): ConsumerGroup {
  return {
    groupId,
    groupEpoch: 0,
    assignmentEpoch: 0,
    members: new Map(),
    target: new Map(),
    metadata: new Map(),
    rebalances: 0,
  };
}

function refuseHeartbeat(e: HeartbeatEntry, r: Refusal): HeartbeatResult {
  return {
    type: "heartbeat",
    error: r.error,
    message: r.message,
    memberId: e.memberId,
    memberEpoch: e.memberEpoch,
    assignment: [],
  };
}

function checkHeartbeat(e: HeartbeatEntry): Refusal | undefined {
  const bad = (message: string): Refusal => ({ error: "INVALID_REQUEST", message });
  if (e.memberId.length === 0 || e.memberId.length > GROUP_LIMITS.memberIdCharsMax)
    return bad(
      `member id must have 1..${GROUP_LIMITS.memberIdCharsMax} characters (the client generates it)`,
    );
  if (!Number.isSafeInteger(e.memberEpoch) || e.memberEpoch < STATIC_LEAVE_EPOCH)
    return bad(`member epoch ${e.memberEpoch} is invalid`);
  if (e.memberEpoch === STATIC_LEAVE_EPOCH && e.instanceId === "")
    return bad("member epoch -2 (static leave) needs an instance id");
  if (e.instanceId.length > GROUP_LIMITS.instanceIdCharsMax)
    return bad(`instance id longer than ${GROUP_LIMITS.instanceIdCharsMax}`);
  if (
    e.clientId.length > GROUP_LIMITS.clientIdCharsMax ||
    e.clientHost.length > GROUP_LIMITS.clientHostCharsMax ||
    e.rackId.length > GROUP_LIMITS.rackIdCharsMax
  )
    return bad("client id, client host or rack id too long");
  if (e.memberEpoch < 0) return undefined;
  if (e.subscribedTopicNames.length > GROUP_LIMITS.subscribedTopicsMax)
    return bad(`more than ${GROUP_LIMITS.subscribedTopicsMax} subscribed topics`);
  if ((e.regexTopics?.length ?? 0) > GROUP_LIMITS.metadataTopicsMax)
    return bad(`more than ${GROUP_LIMITS.metadataTopicsMax} topics matched by the regex`);
  if (
    e.memberEpoch === JOIN_EPOCH &&
    e.subscribedTopicNames.length === 0 &&
    e.subscribedTopicRegex === ""
  )
    return bad("a joining member must subscribe to topic names or a regular expression");
  if (e.subscribedTopicRegex !== "") {
    const compiled = compileSubscriptionRegex(e.subscribedTopicRegex);
    if (!compiled.ok) return { error: "INVALID_REGULAR_EXPRESSION", message: compiled.message };
  }
  if (e.serverAssignor !== "" && !isAssignorName(e.serverAssignor))
    return {
      error: "UNSUPPORTED_ASSIGNOR",
      message: `assignor ${JSON.stringify(e.serverAssignor)} is not one of uniform, range`,
    };
  if (e.rebalanceTimeoutMs <= 0 || e.rebalanceTimeoutMs > GROUP_LIMITS.rebalanceTimeoutMsMax)
    return bad(`rebalance timeout must be in 1..${GROUP_LIMITS.rebalanceTimeoutMsMax} ms`);
  const owned = e.ownedPartitions.reduce((n, [, ps]) => n + ps.length, 0);
  if (owned > GROUP_LIMITS.ownedPartitionsMax)
    return bad(`more than ${GROUP_LIMITS.ownedPartitionsMax} owned partitions`);
  if (e.topics.length > GROUP_LIMITS.metadataTopicsMax)
    return bad(`more than ${GROUP_LIMITS.metadataTopicsMax} topics of metadata`);
  return undefined;
}

/** Applies one heartbeat to the group (mutating it). */
function heartbeat(group: ConsumerGroup, e: HeartbeatEntry): HeartbeatResult {
  const ok = (m: Member): HeartbeatResult => ({
    type: "heartbeat",
    error: "NONE",
    message: "",
    memberId: m.memberId,
    memberEpoch: m.memberEpoch,
    assignment: rowsOf(m.assigned),
  });
  let member = group.members.get(e.memberId);
  if (e.memberEpoch === LEAVE_EPOCH || e.memberEpoch === STATIC_LEAVE_EPOCH) {
    // A repeated leave (its answer lost) finds no member: answered as done, not as an error.
    if (!member)
      return {
        type: "heartbeat",
        error: "NONE",
        message: "",
        memberId: e.memberId,
        memberEpoch: e.memberEpoch,
        assignment: [],
      };
    if (e.memberEpoch === STATIC_LEAVE_EPOCH && member.instanceId !== "") {
      // A static member away: its partitions wait for the same instance id (or its session timeout).
      member.memberEpoch = STATIC_LEAVE_EPOCH;
    } else {
      removeMember(group, member);
    }
    return {
      type: "heartbeat",
      error: "NONE",
      message: "",
      memberId: e.memberId,
      memberEpoch: e.memberEpoch,
      assignment: [],
    };
  }
  let changed = false;
  if (e.memberEpoch === JOIN_EPOCH) {
    if (!member && e.instanceId !== "") {
      const previous = [...group.members.values()].find((m) => m.instanceId === e.instanceId);
      if (previous && previous.memberEpoch !== STATIC_LEAVE_EPOCH) {
        return refuseHeartbeat(e, {
          error: "UNRELEASED_INSTANCE_ID",
          message: `instance id ${JSON.stringify(e.instanceId)} is still held by member ${previous.memberId}`,
        });
      }
      if (previous) member = replaceStatic(group, previous, e.memberId);
    }
    if (!member) {
      if (group.members.size >= GROUP_LIMITS.membersMax)
        return refuseHeartbeat(e, {
          error: "GROUP_MAX_SIZE_REACHED",
          message: `group ${JSON.stringify(group.groupId)} already has ${group.members.size} members`,
        });
      member = newMember(e);
      group.members.set(member.memberId, member);
      changed = true;
    } else if (member.memberEpoch !== 0) {
      // A rejoin (after a fence, or a lost answer): it owns nothing it is not given again.
      member.previousMemberEpoch = member.memberEpoch;
      member.memberEpoch = 0;
      member.assigned = new Map();
      member.pendingRevocation = new Map();
      member.revocationDeadlineMs = -1;
      member.state = "STABLE";
    }
  } else {
    if (!member)
      return refuseHeartbeat(e, {
        error: "UNKNOWN_MEMBER_ID",
        message: `group ${JSON.stringify(group.groupId)} has no member ${e.memberId}`,
      });
    if (e.memberEpoch !== member.memberEpoch) {
      // Kafka's tolerance for a lost answer: the previous epoch, owning nothing beyond the assignment.
      const lostAnswer =
        e.memberEpoch === member.previousMemberEpoch &&
        isSubset(e.ownedPartitions, member.assigned);
      if (!lostAnswer)
        return refuseHeartbeat(e, {
          error: "FENCED_MEMBER_EPOCH",
          message: `member ${member.memberId} epoch ${e.memberEpoch} is not its epoch ${member.memberEpoch}`,
        });
    }
  }
  changed = updateMember(member, e) || changed;
  const metadata = subscribedMetadata(group, e.topics);
  if (changed || !sameCounts(metadata, group.metadata)) {
    group.metadata = metadata;
    bumpAndAssign(group);
  }
  // Acknowledged revocations: the member no longer reports any partition pending revocation.
  if (member.pendingRevocation.size > 0 && !overlaps(e.ownedPartitions, member.pendingRevocation)) {
    member.pendingRevocation = new Map();
    member.revocationDeadlineMs = -1;
  }
  reconcile(group, member, e.timestampMs);
  return ok(member);
}

function newMember(e: HeartbeatEntry): Member {
  return {
    memberId: e.memberId,
    instanceId: e.instanceId,
    rackId: e.rackId,
    clientId: e.clientId,
    clientHost: e.clientHost,
    protocol: "consumer",
    subscribedTopicNames: [],
    subscribedTopicRegex: "",
    regexTopics: [],
    serverAssignor: "",
    rebalanceTimeoutMs: e.rebalanceTimeoutMs,
    memberEpoch: 0,
    previousMemberEpoch: -1,
    state: "STABLE",
    assigned: new Map(),
    pendingRevocation: new Map(),
    revocationDeadlineMs: -1,
  };
}

/** A static member's instance id rejoins under a new member id: it takes the old member's place and partitions. */
function replaceStatic(group: ConsumerGroup, previous: Member, memberId: string): Member {
  group.members.delete(previous.memberId);
  const target = group.target.get(previous.memberId);
  group.target.delete(previous.memberId);
  const member: Member = { ...previous, memberId, memberEpoch: 0, previousMemberEpoch: -1 };
  group.members.set(memberId, member);
  if (target) group.target.set(memberId, target);
  return member;
}

/** Copies the request's subscription and client fields; true when the subscription changed. */
function updateMember(m: Member, e: HeartbeatEntry): boolean {
  const names = [...new Set(e.subscribedTopicNames)].sort();
  // Entries written before the leader resolved regexes carry none: match the entry's topics.
  const regexTopics =
    e.subscribedTopicRegex === ""
      ? []
      : [
          ...new Set(
            e.regexTopics ??
              matchingTopics(
                e.subscribedTopicRegex,
                e.topics.map(([t]) => t),
              ),
          ),
        ].sort();
  const assignor = e.serverAssignor;
  const changed =
    names.join("\u0000") !== m.subscribedTopicNames.join("\u0000") ||
    e.subscribedTopicRegex !== m.subscribedTopicRegex ||
    regexTopics.join("\u0000") !== m.regexTopics.join("\u0000") ||
    assignor !== m.serverAssignor;
  m.subscribedTopicNames = names;
  m.subscribedTopicRegex = e.subscribedTopicRegex;
  m.regexTopics = regexTopics;
  m.serverAssignor = assignor;
  m.rebalanceTimeoutMs = e.rebalanceTimeoutMs;
  m.clientId = e.clientId;
  m.clientHost = e.clientHost;
  m.rackId = e.rackId;
  return changed;
}

function removeMember(group: ConsumerGroup, member: Member): void {
  // Its partitions are free at once: a removed member can no longer commit (fencing).
  group.members.delete(member.memberId);
  group.target.delete(member.memberId);
  // Topics only the removed member subscribed to leave the group's metadata now; else the
  // next heartbeat (whose metadata lacks them) would see changed counts and rebalance again.
  group.metadata = subscribedMetadata(group, [...group.metadata]);
  bumpAndAssign(group);
}

/** The topics a member subscribes to that exist (names, plus its resolved regex matches), given the group's metadata. */
function memberTopics(m: Member, metadata: ReadonlyMap<string, number>): Set<string> {
  const out = new Set<string>();
  for (const t of m.subscribedTopicNames) if (metadata.has(t)) out.add(t);
  for (const t of m.regexTopics) if (metadata.has(t)) out.add(t);
  return out;
}

/** The entry's topics that some member of the group subscribes to, in name order. */
function subscribedMetadata(
  group: ConsumerGroup,
  topics: ReadonlyArray<[string, number]>,
): Map<string, number> {
  const names = new Set<string>();
  for (const m of group.members.values()) {
    for (const t of m.subscribedTopicNames) names.add(t);
    for (const t of m.regexTopics) names.add(t);
  }
  const out = new Map<string, number>();
  for (const [t, n] of [...topics].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (n > 0 && names.has(t)) out.set(t, n);
  }
  return out;
}

/** The assignor the group uses: the one most members ask for (ties: name order), else uniform. */
function groupAssignor(group: ConsumerGroup): AssignorName {
  const votes = new Map<AssignorName, number>();
  for (const m of group.members.values())
    if (isAssignorName(m.serverAssignor))
      votes.set(m.serverAssignor, (votes.get(m.serverAssignor) ?? 0) + 1);
  let best: AssignorName = DEFAULT_ASSIGNOR;
  let bestVotes = 0;
  for (const [name, n] of [...votes].sort(([a], [b]) => (a < b ? -1 : 1)))
    if (n > bestVotes) [best, bestVotes] = [name, n];
  return best;
}

function bumpAndAssign(group: ConsumerGroup): void {
  group.groupEpoch += 1;
  group.rebalances += 1;
  const members = [...group.members.values()].map((m) => ({
    memberId: m.memberId,
    topics: memberTopics(m, group.metadata),
  }));
  const target = assign(groupAssignor(group), {
    members,
    topics: group.metadata,
    previous: group.target,
  });
  group.target.clear();
  for (const [id, a] of target) group.target.set(id, a);
  group.assignmentEpoch = group.groupEpoch;
}

/**
 * Moves the member one step toward its target: first give up what the target no longer has
 * (epoch unchanged until acknowledged), then take the epoch of the target and every target
 * partition that no other member still owns or is giving up.
 */
function reconcile(group: ConsumerGroup, m: Member, nowMs: number): void {
  if (m.memberEpoch === STATIC_LEAVE_EPOCH || m.pendingRevocation.size > 0) return;
  if (m.memberEpoch === group.assignmentEpoch && m.state === "STABLE") return;
  const target = group.target.get(m.memberId) ?? new Map<string, number[]>();
  const revoke = minus(m.assigned, target);
  if (revoke.size > 0) {
    m.assigned = intersect(m.assigned, target);
    m.pendingRevocation = revoke;
    m.revocationDeadlineMs = nowMs + m.rebalanceTimeoutMs;
    m.state = "UNREVOKED_PARTITIONS";
    return;
  }
  const taken = new Set<string>();
  for (const other of group.members.values()) {
    if (other.memberId === m.memberId) continue;
    for (const a of [other.assigned, other.pendingRevocation])
      for (const [t, ps] of a) for (const p of ps) taken.add(`${t}\u0000${p}`);
  }
  const next: Assignment = new Map();
  let unreleased = false;
  for (const [t, ps] of target) {
    const free = ps.filter((p) => !taken.has(`${t}\u0000${p}`));
    if (free.length < ps.length) unreleased = true;
    if (free.length > 0) next.set(t, free);
  }
  if (m.memberEpoch !== group.assignmentEpoch) {
    m.previousMemberEpoch = m.memberEpoch;
    m.memberEpoch = group.assignmentEpoch;
  }
  m.assigned = next;
  m.state = unreleased ? "UNRELEASED_PARTITIONS" : "STABLE";
}

// ---- assignment sets ----

function rowsOf(a: Assignment): TopicPartitionsRow[] {
  return [...a]
    .filter(([, ps]) => ps.length > 0)
    .sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0))
    .map(([t, ps]) => [t, [...ps].sort((p, q) => p - q)]);
}

function has(a: Assignment, topic: string, p: number): boolean {
  return a.get(topic)?.includes(p) ?? false;
}

function minus(a: Assignment, b: Assignment): Assignment {
  const out: Assignment = new Map();
  for (const [t, ps] of a) {
    const rest = ps.filter((p) => !has(b, t, p));
    if (rest.length > 0) out.set(t, rest);
  }
  return out;
}

function intersect(a: Assignment, b: Assignment): Assignment {
  const out: Assignment = new Map();
  for (const [t, ps] of a) {
    const both = ps.filter((p) => has(b, t, p));
    if (both.length > 0) out.set(t, both);
  }
  return out;
}

function isSubset(rows: readonly TopicPartitionsRow[], a: Assignment): boolean {
  return rows.every(([t, ps]) => ps.every((p) => has(a, t, p)));
}

function overlaps(rows: readonly TopicPartitionsRow[], a: Assignment): boolean {
  return rows.some(([t, ps]) => ps.some((p) => has(a, t, p)));
}

function sameCounts(a: ReadonlyMap<string, number>, b: ReadonlyMap<string, number>): boolean {
  if (a.size !== b.size) return false;
  for (const [t, n] of a) if (b.get(t) !== n) return false;
  return true;
}

function groupState(group: ConsumerGroup): GroupState {
  if (group.members.size === 0) return "EMPTY";
  for (const m of group.members.values()) {
    if (m.memberEpoch !== group.assignmentEpoch || m.state !== "STABLE") return "RECONCILING";
  }
  return "STABLE";
}

function viewOf(group: ConsumerGroup): GroupView {
  return {
    groupId: group.groupId,
    state: groupState(group),
    groupEpoch: group.groupEpoch,
    assignmentEpoch: group.assignmentEpoch,
    assignor: groupAssignor(group),
    rebalances: group.rebalances,
    members: [...group.members.values()].map((m) => ({
      memberId: m.memberId,
      instanceId: m.instanceId,
      rackId: m.rackId,
      clientId: m.clientId,
      clientHost: m.clientHost,
      memberEpoch: m.memberEpoch,
      state: m.state,
      subscribedTopicNames: m.subscribedTopicNames,
      subscribedTopicRegex: m.subscribedTopicRegex,
      assigned: rowsOf(m.assigned),
      pendingRevocation: rowsOf(m.pendingRevocation),
      target: rowsOf(group.target.get(m.memberId) ?? new Map()),
    })),
  };
}

// ---- snapshot form (also the dry run's copy) ----

export interface GroupJson {
  groupId: string;
  groupEpoch: number;
  assignmentEpoch: number;
  rebalances: number;
  metadata: Array<[string, number]>;
  members: Array<
    Omit<Member, "assigned" | "pendingRevocation" | "regexTopics"> & {
      /** Absent in snapshots written before the leader resolved regexes. */
      regexTopics?: string[];
      assigned: TopicPartitionsRow[];
      pendingRevocation: TopicPartitionsRow[];
    }
  >;
  target: Array<[string, TopicPartitionsRow[]]>;
}

function groupToJson(g: ConsumerGroup): GroupJson {
  return {
    groupId: g.groupId,
    groupEpoch: g.groupEpoch,
    assignmentEpoch: g.assignmentEpoch,
    rebalances: g.rebalances,
    metadata: [...g.metadata],
    members: [...g.members.values()].map((m) => ({
      ...m,
      subscribedTopicNames: [...m.subscribedTopicNames],
      regexTopics: [...m.regexTopics],
      assigned: rowsOf(m.assigned),
      pendingRevocation: rowsOf(m.pendingRevocation),
    })),
    target: [...g.target].map(([id, a]) => [id, rowsOf(a)]),
  };
}

function groupFromJson(j: GroupJson): ConsumerGroup {
  const toMap = (rows: readonly TopicPartitionsRow[]): Assignment =>
    new Map(rows.map(([t, ps]) => [t, [...ps]]));
  return {
    groupId: j.groupId,
    groupEpoch: j.groupEpoch,
    assignmentEpoch: j.assignmentEpoch,
    rebalances: j.rebalances,
    metadata: new Map(j.metadata),
    members: new Map(
      j.members.map((m) => [
        m.memberId,
        {
          ...m,
          subscribedTopicNames: [...m.subscribedTopicNames],
          // Snapshots written before regexes were resolved by the leader: match the group's topics.
          regexTopics:
            m.regexTopics !== undefined
              ? [...m.regexTopics]
              : m.subscribedTopicRegex === ""
                ? []
                : matchingTopics(
                    m.subscribedTopicRegex,
                    j.metadata.map(([t]) => t),
                  ),
          assigned: toMap(m.assigned),
          pendingRevocation: toMap(m.pendingRevocation),
        },
      ]),
    ),
    target: new Map(j.target.map(([id, rows]) => [id, toMap(rows)])),
  };
}
