// Metadata v1-v8: the Kafka endpoints of the brokers and of the transaction coordinators (under
// their Kafka node ids, kafka-node-ids.ts: kafkajs only talks to a node FindCoordinator named
// when Metadata lists it), and the broker-role topics (coordinator-role topics such as
// __transaction_state are led by coordinators, not Kafka brokers, and are not listed). Partition
// leaders and replicas are always brokers. tern has no ISR: a replica on a live broker is
// reported in sync. Answered alike by brokers' and coordinators' listeners.
import { kafkaErrorCode } from "./kafka-errors.js";
import type { PartitionInfo, TopicInfo } from "../../libs/metadata/types.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { kafkaNodeId, nodeKafkaEndpoint } from "./kafka-node-ids.js";

const UNKNOWN_TOPIC_OR_PARTITION = 3;
const LEADER_NOT_AVAILABLE = 5;

export function metadataResponse(deps: KafkaDeps, version: number, r: KafkaReader): Buffer {
  const wanted = r.nullableArray((x) => x.string());
  if (version >= 4) r.bool(); // allow_auto_topic_creation: topics are created explicitly in tern
  if (version >= 8) {
    r.bool();
    r.bool();
  }
  const m = deps.metadata();
  const { brokers, coordinators } = kafkaNodes(deps);
  const alive = new Set(brokers.map((b) => b.nodeId));
  const topics = (m?.topics ?? []).filter((t) => t.role === "broker");
  const byName = new Map(topics.map((t) => [t.name, t]));
  // Under ACLs a listing shows only the topics the principal may DESCRIBE; one asked for by name
  // is TOPIC_AUTHORIZATION_FAILED whether it exists or not (Kafka does not reveal it).
  const access = deps.access;
  const describable = (name: string): boolean =>
    access === undefined || access.allowed("describe", "topic", name);
  const listed: Array<{ name: string; topic: TopicInfo | undefined; refused?: boolean }> =
    wanted === null || (version === 0 && wanted.length === 0)
      ? topics.filter((t) => describable(t.name)).map((t) => ({ name: t.name, topic: t }))
      : wanted.map((name) =>
          describable(name)
            ? { name, topic: byName.get(name) }
            : { name, topic: undefined, refused: true },
        );
  const w = new KafkaWriter(1024);
  if (version >= 3) w.int32(0); // throttle_time_ms
  w.array([...brokers, ...coordinators], (x, b) => {
    x.int32(b.nodeId).string(b.host).int32(b.port);
    x.nullableString(b.rack);
  });
  if (version >= 2) w.nullableString(deps.clusterId);
  w.int32(kafkaControllerId(deps, brokers));
  w.array(listed, (x, { name, topic, refused }) => {
    x.int16(
      refused
        ? kafkaErrorCode("TOPIC_AUTHORIZATION_FAILED")
        : topic === undefined
          ? UNKNOWN_TOPIC_OR_PARTITION
          : 0,
    )
      .string(name)
      .bool(topic?.internal ?? false);
    x.array(topic?.partitions ?? [], (y, p) => writePartition(y, version, p, alive));
    if (version >= 8) x.int32(-2147483648); // topic_authorized_operations: not asked for
  });
  if (version >= 8) w.int32(-2147483648);
  return w.finish();
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

function writePartition(
  w: KafkaWriter,
  version: number,
  p: PartitionInfo,
  alive: ReadonlySet<number>,
): void {
  const leader = p.leader >= 0 && alive.has(p.leader) ? p.leader : -1;
  w.int16(leader === -1 ? LEADER_NOT_AVAILABLE : 0)
    .int32(p.partition)
    .int32(leader);
  if (version >= 7) w.int32(Math.max(-1, p.leaderTerm));
  w.array(p.replicas, (x, id) => x.int32(id));
  w.array(
    p.replicas.filter((id) => alive.has(id)),
    (x, id) => x.int32(id),
  );
  if (version >= 5)
    w.array(
      p.replicas.filter((id) => !alive.has(id)),
      (x, id) => x.int32(id),
    );
}
