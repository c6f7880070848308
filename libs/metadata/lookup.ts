// Small pure helpers over a ClusterMetadata view.
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
