// Small pure helpers over a ClusterMetadata view.
import { TernError } from "../common/errors.js";
import { partitionFor } from "../common/hash.js";
import type { ClusterMetadata, NodeInfo, PartitionInfo, Role, TopicInfo } from "./types.js";

export function findNode(m: ClusterMetadata, role: Role, nodeId: number): NodeInfo | undefined {
  return m.nodes.find((n) => n.role === role && n.nodeId === nodeId);
}

/** The address of a node of a role; undefined when unknown. */
export function nodeAddress(m: ClusterMetadata, role: Role, nodeId: number): string | undefined {
  return findNode(m, role, nodeId)?.address;
}

export function findTopic(m: ClusterMetadata, topic: string): TopicInfo | undefined {
  return m.topics.find((t) => t.name === topic);
}

export function findPartition(
  m: ClusterMetadata,
  topic: string,
  partition: number,
): PartitionInfo | undefined {
  return findTopic(m, topic)?.partitions.find((p) => p.partition === partition);
}

/** Address of the current leader of a partition (of its topic's role); undefined when unknown. */
export function partitionLeaderAddress(
  m: ClusterMetadata,
  topic: string,
  partition: number,
): string | undefined {
  const t = findTopic(m, topic);
  const p = t?.partitions.find((x) => x.partition === partition);
  if (!t || !p || p.leader < 0) return undefined;
  return nodeAddress(m, t.role, p.leader);
}

/** Partitions whose replica set includes nodeId (for a host deciding which groups to run). */
export function partitionsHostedBy(
  m: ClusterMetadata,
  role: Role,
  nodeId: number,
): PartitionInfo[] {
  const out: PartitionInfo[] = [];
  for (const t of m.topics) {
    if (t.role !== role) continue;
    for (const p of t.partitions) if (p.replicas.includes(nodeId)) out.push(p);
  }
  return out;
}

/** The Raft group id of a partition: "topic/partition". */
export function partitionGroupId(topic: string, partition: number): string {
  return `${topic}/${partition}`;
}

// The partition of an internal topic that holds a transactional id or a group id. The count is
// that of the topic the controller created (its partitions in cluster metadata), never a
// constant: the controller's TERN_TXN_STATE_PARTITIONS / TERN_OFFSETS_PARTITIONS decide it once,
// when the topic is created, and internal topics never change their partition count.

/** Partitions of an internal topic in this view; undefined before the view holds the topic. */
export function internalPartitionCount(
  m: ClusterMetadata | undefined,
  topic: string,
): number | undefined {
  const t = m === undefined ? undefined : findTopic(m, topic);
  return t === undefined || t.partitions.length === 0 ? undefined : t.partitions.length;
}

/**
 * The partition of `topic` that `key` hashes to (Kafka's abs(hashCode) % count). Throws the
 * retriable COORDINATOR_NOT_AVAILABLE while the view does not hold the topic yet (no metadata,
 * or the controller has not created it): a client finds the coordinator again later.
 */
export function internalPartitionOf(
  m: ClusterMetadata | undefined,
  topic: string,
  key: string,
): number {
  const count = internalPartitionCount(m, topic);
  if (count === undefined)
    throw new TernError(
      "COORDINATOR_NOT_AVAILABLE",
      `${topic} is not in this node's cluster metadata yet`,
    );
  return partitionFor(key, count);
}
