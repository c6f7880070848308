// Kafka's view of tern's nodes. Kafka has one node id space; tern has one per role (broker 0 and
// coordinator 0 both exist), so a coordinator appears to Kafka clients as
// COORDINATOR_KAFKA_NODE_ID_BASE + its id, and a broker keeps its own id. tern ids are at most
// 1,000,000 (NODE_ID_MAX), so the two ranges never meet and both fit Kafka's int32.
import { parseHostPort } from "../../libs/common/config.js";
import type { ClusterMetadata, Role } from "../../libs/metadata/types.js";
import type { KafkaEndpoint } from "./kafka-deps.js";

/** Coordinator N is Kafka node 1_000_000_000 + N (docs/kafka-protocol.md). */
export const COORDINATOR_KAFKA_NODE_ID_BASE = 1_000_000_000;

export function kafkaNodeId(role: Role, nodeId: number): number {
  return role === "coordinator" ? COORDINATOR_KAFKA_NODE_ID_BASE + nodeId : nodeId;
}

/** The tern node behind a Kafka node id. */
export function ternNodeOf(kafkaId: number): { role: Role; nodeId: number } {
  return kafkaId >= COORDINATOR_KAFKA_NODE_ID_BASE
    ? { role: "coordinator", nodeId: kafkaId - COORDINATOR_KAFKA_NODE_ID_BASE }
    : { role: "broker", nodeId: kafkaId };
}

/** The Kafka listener a live node registered; undefined when it is dead, unknown or has none. */
export function nodeKafkaEndpoint(
  m: ClusterMetadata | undefined,
  role: Role,
  nodeId: number,
): KafkaEndpoint | undefined {
  const a = m?.nodes.find((n) => n.role === role && n.nodeId === nodeId && n.alive)?.kafkaAddress;
  if (a === undefined) return undefined;
  try {
    return parseHostPort(a, "kafka address");
  } catch {
    return undefined;
  }
}
