// Partition leader epochs as the Kafka listener answers them: a partition's epoch is its
// leader's Raft term, as this node's cluster view has it (the one Metadata v7+ answers). A
// request's current_leader_epoch (Fetch v9+, ListOffsets v4+, KIP-320) is checked against it:
// below it is FENCED_LEADER_EPOCH (the client's metadata is stale), above it
// UNKNOWN_LEADER_EPOCH (this node's view lags the client's; the client retries), -1 unchecked.
// tern's record batches carry no leader epoch (-1), so a consumer has no last fetched epoch to
// send and no divergence to be told of (docs/kafka-protocol.md).
import type { KafkaDeps } from "./kafka-deps.js";
import { kafkaNodes, type KafkaNode } from "./metadata-api.js";

export const FENCED_LEADER_EPOCH = 74;
export const UNKNOWN_LEADER_EPOCH = 75;
/** Kafka's NOT_LEADER_OR_FOLLOWER, the other error that carries the current leader from Produce v10 and Fetch v12. */
export const NOT_LEADER_OR_FOLLOWER = 6;

export interface PartitionLeader {
  /** The leader's Kafka node id, -1 when it has none. */
  readonly leaderId: number;
  readonly leaderEpoch: number;
}

/** The leaders of a request's partitions, looked up in one pass over this node's cluster view. */
export class PartitionLeaders {
  private readonly byPartition = new Map<string, PartitionLeader>();

  constructor(private readonly deps: KafkaDeps) {
    for (const t of deps.metadata()?.topics ?? [])
      if (t.role === "broker")
        for (const p of t.partitions)
          this.byPartition.set(key(t.name, p.partition), {
            leaderId: p.leader,
            leaderEpoch: Math.max(-1, p.leaderTerm),
          });
  }

  /** The partition's leader; undefined for a partition this view does not have. */
  of(topic: string, partition: number): PartitionLeader | undefined {
    return this.byPartition.get(key(topic, partition));
  }

  /** 0, or the error a request's current_leader_epoch gets for this partition. */
  epochError(topic: string, partition: number, currentLeaderEpoch: number): number {
    const leader = this.of(topic, partition);
    if (currentLeaderEpoch < 0 || leader === undefined || leader.leaderEpoch < 0) return 0;
    if (currentLeaderEpoch < leader.leaderEpoch) return FENCED_LEADER_EPOCH;
    if (currentLeaderEpoch > leader.leaderEpoch) return UNKNOWN_LEADER_EPOCH;
    return 0;
  }

  /** The Kafka endpoints of these leaders (Produce v10's NodeEndpoints), live brokers only. */
  endpoints(leaderIds: Iterable<number>): KafkaNode[] {
    const wanted = new Set(leaderIds);
    return kafkaNodes(this.deps).brokers.filter((b) => wanted.has(b.nodeId));
  }
}

/** Whether an answer with this error carries the partition's current leader (KIP-951). */
export function carriesCurrentLeader(errorCode: number): boolean {
  return errorCode === NOT_LEADER_OR_FOLLOWER || errorCode === FENCED_LEADER_EPOCH;
}

function key(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}
