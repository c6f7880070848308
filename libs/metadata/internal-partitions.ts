// The partition of an internal topic that holds a transactional id or a group id. The count is
// that of the topic the controller created (its partitions in cluster metadata), never a
// constant: the controller's TERN_TXN_STATE_PARTITIONS / TERN_OFFSETS_PARTITIONS decide it once,
// when the topic is created, and internal topics never change their partition count.
import { TernError } from "../common/errors.js";
import { partitionFor } from "../common/hash.js";
import { findTopic } from "./lookup.js";
import type { ClusterMetadata } from "./types.js";

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
