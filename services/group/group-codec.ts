// The consumer-group entries of a __consumer_offsets/N Raft log (KIP-848 membership). A
// heartbeat entry carries the request plus everything apply() needs that is not in the log:
// the leader's time and the partition counts of the topics the group may subscribe to, so
// every replica computes the same member epochs and assignments.
import { int, str } from "./entry-fields.js";
import { DecodeError } from "../../libs/common/decode-error.js";

/** topic → partition numbers, as a JSON-friendly list. */
export type TopicPartitionsRow = [string, number[]];

/** ConsumerGroupHeartbeat: join (epoch 0), heartbeat (epoch > 0), leave (-1) or static leave (-2). */
export interface HeartbeatEntry {
  readonly type: "group-heartbeat";
  readonly groupId: string;
  readonly memberId: string;
  readonly memberEpoch: number;
  readonly instanceId: string;
  readonly rackId: string;
  readonly clientId: string;
  readonly clientHost: string;
  readonly rebalanceTimeoutMs: number;
  readonly subscribedTopicNames: readonly string[];
  readonly subscribedTopicRegex: string;
  /**
   * The existing topics the regex matches that the member may DESCRIBE (the leader resolves
   * it, so applying never runs a regex); absent in entries written before.
   */
  readonly regexTopics?: readonly string[];
  readonly serverAssignor: string;
  /** The partitions the member owns now (its acknowledgement of revocations). */
  readonly ownedPartitions: readonly TopicPartitionsRow[];
  readonly timestampMs: number;
  /** Partition counts of the existing topics matching any subscription of the group (leader's metadata). */
  readonly topics: ReadonlyArray<[string, number]>;
}

/** The leader removes a member: its session expired, or it held a revoked partition too long. */
export interface FenceEntry {
  readonly type: "group-fence";
  readonly groupId: string;
  readonly memberId: string;
  /** Only the member at this epoch is fenced (a member that rejoined meanwhile is not). */
  readonly memberEpoch: number;
  readonly reason: "session-timeout" | "rebalance-timeout";
  readonly timestampMs: number;
}

/** DeleteGroups: removes an empty group with its committed offsets. */
export interface DeleteGroupEntry {
  readonly type: "group-delete";
  readonly groupId: string;
}

/** OffsetDelete: drops committed offsets of partitions no member of the group is subscribed to. */
export interface OffsetDeleteEntry {
  readonly type: "offset-delete";
  readonly groupId: string;
  readonly partitions: readonly TopicPartitionsRow[];
}

export type GroupEntry = HeartbeatEntry | FenceEntry | DeleteGroupEntry | OffsetDeleteEntry;

export function decodeGroupEntry(o: Record<string, unknown>): GroupEntry {
  switch (o.type) {
    case "group-heartbeat":
      return {
        type: "group-heartbeat",
        groupId: str(o.groupId, "groupId"),
        memberId: str(o.memberId, "memberId"),
        memberEpoch: int(o.memberEpoch, "memberEpoch"),
        instanceId: str(o.instanceId, "instanceId"),
        rackId: str(o.rackId, "rackId"),
        clientId: str(o.clientId, "clientId"),
        clientHost: str(o.clientHost, "clientHost"),
        rebalanceTimeoutMs: int(o.rebalanceTimeoutMs, "rebalanceTimeoutMs"),
        subscribedTopicNames: strings(o.subscribedTopicNames, "subscribedTopicNames"),
        subscribedTopicRegex: str(o.subscribedTopicRegex, "subscribedTopicRegex"),
        ...(o.regexTopics === undefined
          ? {}
          : { regexTopics: strings(o.regexTopics, "regexTopics") }),
        serverAssignor: str(o.serverAssignor, "serverAssignor"),
        ownedPartitions: rows(o.ownedPartitions, "ownedPartitions"),
        timestampMs: int(o.timestampMs, "timestampMs"),
        topics: counts(o.topics),
      };
    case "group-fence": {
      const reason = str(o.reason, "reason");
      if (reason !== "session-timeout" && reason !== "rebalance-timeout")
        throw new DecodeError("offsets", `unknown fence reason ${reason}`);
      return {
        type: "group-fence",
        groupId: str(o.groupId, "groupId"),
        memberId: str(o.memberId, "memberId"),
        memberEpoch: int(o.memberEpoch, "memberEpoch"),
        reason,
        timestampMs: int(o.timestampMs, "timestampMs"),
      };
    }
    case "group-delete":
      return { type: "group-delete", groupId: str(o.groupId, "groupId") };
    case "offset-delete":
      return {
        type: "offset-delete",
        groupId: str(o.groupId, "groupId"),
        partitions: rows(o.partitions, "partitions"),
      };
    default:
      throw new DecodeError("offsets", `unknown group entry type ${JSON.stringify(o.type)}`);
  }
}

function array(v: unknown, what: string): unknown[] {
  if (!Array.isArray(v)) throw new DecodeError("offsets", `${what} must be an array`);
  return v;
}

function strings(v: unknown, what: string): string[] {
  return array(v, what).map((x) => str(x, what));
}

function rows(v: unknown, what: string): TopicPartitionsRow[] {
  return array(v, what).map((row) => {
    const r = array(row, what);
    return [
      str(r[0], `${what} topic`),
      array(r[1], `${what} partitions`).map((p) => int(p, `${what} partition`)),
    ];
  });
}

function counts(v: unknown): Array<[string, number]> {
  return array(v, "topics").map((row) => {
    const r = array(row, "topics");
    return [str(r[0], "topic"), int(r[1], "partition count")];
  });
}
