// Metadata v1-v13 (layouts: metadata-codec.ts): the Kafka endpoints of the brokers and of the
// transaction coordinators (under their Kafka node ids, kafka-node-ids.ts: kafkajs only talks
// to a node FindCoordinator named when Metadata lists it), and the broker-role topics (coordinator-role topics such as
// __transaction_state are led by coordinators, not Kafka brokers, and are not listed). Partition
// leaders and replicas are always brokers. tern has no ISR: a replica on a live broker is
// reported in sync. v10+ answers each topic's id (Kafka's zero id while a topic created before
// ids has none yet, docs/decisions.md, "Kafka topic ids"); a topic asked for by id (v12+) is
// found by it, else UNKNOWN_TOPIC_ID. Answered alike by brokers' and coordinators' listeners. A
// missing topic may be created first (auto-create-topics.ts, Kafka's auto.create.topics.enable).
import { kafkaErrorCode } from "./kafka-errors.js";
import type { PartitionInfo, TopicInfo } from "../../libs/metadata/types.js";
import type { KafkaDeps } from "./kafka-deps.js";
import type { KafkaReader } from "../../libs/records/kafka-codec.js";
import {
  decodeMetadataRequest,
  encodeMetadataResponse,
  type MetadataRequest,
  ZERO_UUID,
  type MetadataPartition,
  type MetadataTopic,
} from "./metadata-codec.js";
import { kafkaNodeId, nodeKafkaEndpoint } from "./kafka-node-ids.js";
import { topicIdBytes, topicIdText } from "../../libs/metadata/topic-id.js";

const UNKNOWN_TOPIC_OR_PARTITION = 3;
const LEADER_NOT_AVAILABLE = 5;
/** Kafka's code for a topic id it does not know. */
export const UNKNOWN_TOPIC_ID = 100;

export function metadataResponse(deps: KafkaDeps, version: number, r: KafkaReader): Buffer {
  return metadataAnswer(deps, version, decodeMetadataRequest(version, r));
}

/**
 * The answer to a decoded request; `refused` holds the code of each missing topic that
 * auto-creation (auto-create-topics.ts) could not create, answered instead of
 * UNKNOWN_TOPIC_OR_PARTITION.
 */
export function metadataAnswer(
  deps: KafkaDeps,
  version: number,
  request: MetadataRequest,
  refused: ReadonlyMap<string, number> = new Map(),
): Buffer {
  const wanted = request.topics;
  const m = deps.metadata();
  const { brokers, coordinators } = kafkaNodes(deps);
  const alive = new Set(brokers.map((b) => b.nodeId));
  const topics = (m?.topics ?? []).filter((t) => t.role === "broker");
  const byName = new Map(topics.map((t) => [t.name, t]));
  const byId = topicsById(topics);
  // Under ACLs a listing shows only the topics the principal may DESCRIBE; one asked for by name
  // is TOPIC_AUTHORIZATION_FAILED whether it exists or not (Kafka does not reveal it).
  const access = deps.access;
  const describable = (name: string): boolean =>
    access === undefined || access.allowed("describe", "topic", name);
  const answered: MetadataTopic[] =
    wanted === null
      ? topics.filter((t) => describable(t.name)).map((t) => topicAnswer(t, alive))
      : wanted.map(({ name: asked, topicId }) => {
          // A topic asked for by id (v12+) whose id is unknown or not describable is
          // UNKNOWN_TOPIC_ID (Kafka does not reveal which).
          const name = asked ?? byId.get(topicIdText(topicId))?.name ?? null;
          return name === null || (asked === null && !describable(name))
            ? { ...NO_TOPIC, errorCode: UNKNOWN_TOPIC_ID, name: null, topicId }
            : !describable(name)
              ? { ...NO_TOPIC, errorCode: kafkaErrorCode("TOPIC_AUTHORIZATION_FAILED"), name }
              : byName.has(name)
                ? topicAnswer(byName.get(name)!, alive)
                : {
                    ...NO_TOPIC,
                    errorCode: refused.get(name) ?? UNKNOWN_TOPIC_OR_PARTITION,
                    name,
                  };
        });
  return encodeMetadataResponse(version, {
    brokers: [...brokers, ...coordinators],
    clusterId: deps.clusterId,
    controllerId: kafkaControllerId(deps, brokers),
    topics: answered,
  });
}

const NO_TOPIC: MetadataTopic = {
  errorCode: 0,
  name: null,
  topicId: ZERO_UUID,
  internal: false,
  partitions: [],
};

/** The topics that have an id, by its text form (topic-id.ts). */
export function topicsById(topics: readonly TopicInfo[]): Map<string, TopicInfo> {
  const byId = new Map<string, TopicInfo>();
  for (const t of topics) if (t.id !== undefined) byId.set(t.id, t);
  return byId;
}

function topicAnswer(t: TopicInfo, alive: ReadonlySet<number>): MetadataTopic {
  return {
    errorCode: 0,
    name: t.name,
    topicId: topicIdBytes(t.id),
    internal: t.internal,
    partitions: t.partitions.map((p) => partitionAnswer(p, alive)),
  };
}

export interface KafkaNode {
  readonly nodeId: number;
  readonly host: string;
  readonly port: number;
  readonly rack: string | null;
}

/** The live brokers and coordinators with a Kafka listener, under their Kafka node ids. */
export function kafkaNodes(deps: KafkaDeps): { brokers: KafkaNode[]; coordinators: KafkaNode[] } {
  const m = deps.metadata();
  const brokers = (m?.nodes ?? [])
    .filter((n) => n.role === "broker" && n.alive)
    .flatMap((n) => {
      const e = deps.kafkaEndpoint(n.nodeId);
      return e === undefined ? [] : [{ nodeId: n.nodeId, rack: n.rack ?? null, ...e }];
    });
  const coordinators = (m?.nodes ?? [])
    .filter((n) => n.role === "coordinator" && n.alive)
    .flatMap((n) => {
      const e = nodeKafkaEndpoint(m, "coordinator", n.nodeId);
      return e === undefined
        ? []
        : [{ nodeId: kafkaNodeId("coordinator", n.nodeId), rack: n.rack ?? null, ...e }];
    });
  return { brokers, coordinators };
}

/**
 * Kafka clients send admin requests to the controller id; tern's controllers are not Kafka
 * brokers, so a broker answers itself as the "controller", a coordinator the lowest live broker.
 */
export function kafkaControllerId(deps: KafkaDeps, brokers: readonly KafkaNode[]): number {
  return deps.role === "coordinator"
    ? (brokers.map((b) => b.nodeId).sort((a, b) => a - b)[0] ?? -1)
    : deps.nodeId;
}

/** tern has no ISR: a replica on a live broker is reported in sync, one on a dead broker offline. */
function partitionAnswer(p: PartitionInfo, alive: ReadonlySet<number>): MetadataPartition {
  const leader = p.leader >= 0 && alive.has(p.leader) ? p.leader : -1;
  return {
    errorCode: leader === -1 ? LEADER_NOT_AVAILABLE : 0,
    partition: p.partition,
    leader,
    leaderEpoch: Math.max(-1, p.leaderTerm),
    replicas: p.replicas,
    isr: p.replicas.filter((id) => alive.has(id)),
    offline: p.replicas.filter((id) => !alive.has(id)),
  };
}
