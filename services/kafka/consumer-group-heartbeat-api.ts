// ConsumerGroupHeartbeat v0-v1 (KIP-848's consumer protocol, `group.protocol=consumer`;
// flexible only): an adapter over the group service's heartbeat, which takes the member's whole
// subscription and owned partitions, by topic name, every time. A Kafka client leaves a field
// null (rebalance timeout -1) when it did not change since its last heartbeat, and names topics
// by id: the nulls are filled from the member's current state in the group service (nothing is
// cached here), ids are turned into names and back through the cluster view. v0's member id
// may be empty at the join, and the coordinator then makes one (Kafka 4.0's rule); from v1
// (KIP-1082) the client makes it and an empty one is INVALID_REQUEST. v1 adds the subscribed
// regex. ACLs as Kafka's: READ on the group; subscribed topic names the principal may not
// DESCRIBE refuse the heartbeat (TOPIC_AUTHORIZATION_FAILED); a regex never matches them.
import { randomBytes } from "node:crypto";
import { TernError } from "../../libs/common/errors.js";
import type { CurrentMember, WireHeartbeatRequest } from "../group/index.js";
import { topicIdBytes, topicIdText } from "../../libs/metadata/topic-id.js";
import type { TopicInfo } from "../../libs/metadata/types.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { errorCodeOf, groupCoordinatorOf, type KafkaClientInfo } from "./group-api-common.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { kafkaErrorMessage } from "./kafka-errors.js";

const JOIN_EPOCH = 0;
/** RebalanceTimeoutMs when it did not change. */
const UNCHANGED_TIMEOUT = -1;

export interface KafkaHeartbeatRequest {
  readonly groupId: string;
  readonly memberId: string;
  readonly memberEpoch: number;
  readonly instanceId: string | null;
  readonly rackId: string | null;
  readonly rebalanceTimeoutMs: number;
  readonly subscribedTopicNames: string[] | null;
  readonly subscribedTopicRegex: string | null;
  readonly serverAssignor: string | null;
  readonly topicPartitions: Array<{ topicId: Buffer; partitions: number[] }> | null;
}

export function decodeConsumerGroupHeartbeat(
  version: number,
  r: KafkaReader,
): KafkaHeartbeatRequest {
  const groupId = r.compactString();
  const memberId = r.compactString();
  const memberEpoch = r.int32();
  const instanceId = r.compactNullableString();
  const rackId = r.compactNullableString();
  const rebalanceTimeoutMs = r.int32();
  const subscribedTopicNames = r.compactNullableArray((x) => x.compactString());
  const subscribedTopicRegex = version >= 1 ? r.compactNullableString() : null;
  const serverAssignor = r.compactNullableString();
  const topicPartitions = r.compactNullableArray((x) => {
    const topicId = Buffer.from(x.bytesOf(16));
    const partitions = x.compactArray((y) => y.int32());
    x.taggedFields();
    return { topicId, partitions };
  });
  r.taggedFields();
  return {
    groupId,
    memberId,
    memberEpoch,
    instanceId,
    rackId,
    rebalanceTimeoutMs,
    subscribedTopicNames,
    subscribedTopicRegex,
    serverAssignor,
    topicPartitions,
  };
}

interface HeartbeatAnswer {
  readonly error: number;
  readonly message: string | null;
  readonly memberId: string | null;
  readonly memberEpoch: number;
  readonly heartbeatIntervalMs: number;
  /** null: no assignment in the answer. */
  readonly assignment: Array<{ topicId: Buffer; partitions: number[] }> | null;
}

export async function consumerGroupHeartbeatResponse(
  deps: KafkaDeps,
  version: number,
  r: KafkaReader,
  client: KafkaClientInfo,
): Promise<Buffer> {
  const request = decodeConsumerGroupHeartbeat(version, r);
  let answer: HeartbeatAnswer;
  try {
    answer = await heartbeat(deps, version, request, client);
  } catch (e) {
    const code = errorCodeOf(deps, e, "ConsumerGroupHeartbeat");
    answer = {
      error: code,
      message: e instanceof TernError ? kafkaErrorMessage(e.errorName, e.message) : null,
      memberId: null,
      memberEpoch: 0,
      heartbeatIntervalMs: 0,
      assignment: null,
    };
  }
  return encodeConsumerGroupHeartbeatResponse(answer);
}

async function heartbeat(
  deps: KafkaDeps,
  version: number,
  q: KafkaHeartbeatRequest,
  client: KafkaClientInfo,
): Promise<HeartbeatAnswer> {
  const groups = groupCoordinatorOf(deps, q.groupId, "read");
  const access = deps.access;
  const unauthorized = (q.subscribedTopicNames ?? []).filter(
    (t) => access !== undefined && !access.allowed("describe", "topic", t),
  );
  if (unauthorized.length > 0)
    throw new TernError(
      "TOPIC_AUTHORIZATION_FAILED",
      `not authorized to describe topics ${unauthorized.join(", ")}`,
    );
  let memberId = q.memberId;
  if (memberId === "") {
    if (version >= 1 || q.memberEpoch !== JOIN_EPOCH)
      throw new TernError("INVALID_REQUEST", "member id must be set (the client generates it)");
    memberId = randomBytes(16).toString("base64url"); // v0: the coordinator makes it (as Kafka's Uuid)
  }
  const topics = (deps.metadata()?.topics ?? []).filter((t) => !t.internal);
  const byId = new Map<string, TopicInfo>();
  for (const t of topics) if (t.id !== undefined) byId.set(t.id, t);
  const idOf = new Map(topics.map((t) => [t.name, t.id]));
  // A join sends every field; a heartbeat sends only what changed since the last one.
  const current: CurrentMember | undefined =
    q.memberEpoch > JOIN_EPOCH ? groups.consumerGroupMember(q.groupId, memberId) : undefined;
  if (q.memberEpoch > JOIN_EPOCH && current === undefined)
    throw new TernError(
      "UNKNOWN_MEMBER_ID",
      `group ${JSON.stringify(q.groupId)} has no member ${memberId}`,
    );
  const regex = q.subscribedTopicRegex ?? current?.subscribedTopicRegex ?? "";
  const owned =
    q.topicPartitions === null
      ? [...(current?.owned ?? [])]
      : q.topicPartitions.flatMap(({ topicId, partitions }) => {
          const t = byId.get(topicIdText(topicId));
          // An id the cluster does not know (a deleted topic) is owned no more.
          return t === undefined ? [] : [{ topic: t.name, partitions }];
        });
  const wire: WireHeartbeatRequest = {
    groupId: q.groupId,
    memberId,
    memberEpoch: q.memberEpoch,
    instanceId: q.instanceId ?? current?.instanceId ?? "",
    rackId: q.rackId ?? current?.rackId ?? "",
    rebalanceTimeoutMs:
      q.rebalanceTimeoutMs === UNCHANGED_TIMEOUT
        ? (current?.rebalanceTimeoutMs ?? 0)
        : q.rebalanceTimeoutMs,
    subscribedTopicNames: [...(q.subscribedTopicNames ?? current?.subscribedTopicNames ?? [])],
    subscribedTopicRegex: regex,
    serverAssignor: q.serverAssignor ?? current?.serverAssignor ?? "",
    topicPartitions: owned,
    clientId: client.clientId,
    regexHiddenTopics:
      regex === "" || access === undefined
        ? []
        : topics.map((t) => t.name).filter((t) => !access.allowed("describe", "topic", t)),
  };
  const answer = await groups.consumerGroupHeartbeat(wire, client.clientHost);
  return {
    error: 0,
    message: null,
    memberId: answer.memberId,
    memberEpoch: answer.memberEpoch,
    heartbeatIntervalMs: answer.heartbeatIntervalMs,
    // A topic without an id yet (created before ids, until the controller gives it one) cannot
    // be named to a Kafka client: it is left out until it has one.
    assignment: answer.assignment.flatMap(({ topic, partitions }) => {
      const id = idOf.get(topic);
      return id === undefined ? [] : [{ topicId: topicIdBytes(id), partitions }];
    }),
  };
}

export function encodeConsumerGroupHeartbeatResponse(a: HeartbeatAnswer): Buffer {
  const w = new KafkaWriter(128);
  w.int32(0); // throttle_time_ms
  w.int16(a.error);
  w.compactNullableString(a.error === 0 ? null : a.message);
  w.compactNullableString(a.memberId);
  w.int32(a.memberEpoch);
  w.int32(a.heartbeatIntervalMs);
  if (a.assignment === null) w.int8(-1);
  else {
    w.int8(1);
    w.compactArray(a.assignment, (x, tp) => {
      x.raw(tp.topicId);
      x.compactArray(tp.partitions, (y, p) => y.int32(p));
      x.noTaggedFields();
    });
    w.noTaggedFields();
  }
  w.noTaggedFields();
  return w.finish();
}
