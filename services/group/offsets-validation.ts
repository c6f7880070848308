// Validation of offset commits, shared by the request handlers (to refuse early, before
// anything is proposed) and the state machine (authoritative: it runs on every replica).
import type { ErrorName } from "../../libs/common/errors.js";
import type { OffsetCommitItem } from "./entry-fields.js";
import { OFFSETS_LIMITS } from "./offsets-limits.js";

export interface Refusal {
  readonly error: ErrorName;
  readonly message: string;
}

const utf8 = new TextEncoder();

export function tpKey(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}

export function checkGroupId(groupId: string): Refusal | undefined {
  if (groupId.length === 0)
    return { error: "INVALID_GROUP_ID", message: "group id must not be empty" };
  if (groupId.length > OFFSETS_LIMITS.groupIdCharsMax) {
    return {
      error: "INVALID_GROUP_ID",
      message: `group id has ${groupId.length} characters, limit ${OFFSETS_LIMITS.groupIdCharsMax}`,
    };
  }
  return undefined;
}

export function checkPartitionCount(count: number): Refusal | undefined {
  if (count > OFFSETS_LIMITS.partitionsPerRequestMax) {
    return {
      error: "INVALID_REQUEST",
      message: `request has ${count} partitions, limit ${OFFSETS_LIMITS.partitionsPerRequestMax}`,
    };
  }
  return undefined;
}

/** Per-item checks; returns one refusal (or undefined) per item, in order. */
export function checkItems(items: readonly OffsetCommitItem[]): Array<Refusal | undefined> {
  const seen = new Set<string>();
  return items.map((item) => {
    const refusal = checkItem(item);
    if (refusal) return refusal;
    const key = tpKey(item.topic, item.partition);
    if (seen.has(key))
      return {
        error: "INVALID_REQUEST",
        message: `partition ${item.topic}-${item.partition} appears twice in the request`,
      };
    seen.add(key);
    return undefined;
  });
}

function checkItem(item: OffsetCommitItem): Refusal | undefined {
  if (item.topic.length === 0 || item.topic.length > OFFSETS_LIMITS.topicCharsMax) {
    return {
      error: "INVALID_TOPIC_EXCEPTION",
      message: `topic name must have 1..${OFFSETS_LIMITS.topicCharsMax} characters`,
    };
  }
  if (!Number.isInteger(item.partition) || item.partition < 0 || item.partition > 0x7fffffff) {
    return {
      error: "UNKNOWN_TOPIC_OR_PARTITION",
      message: `partition ${item.partition} is not a valid partition number`,
    };
  }
  if (item.offset < 0n)
    return { error: "INVALID_REQUEST", message: `offset ${item.offset} is negative` };
  if (!Number.isInteger(item.leaderEpoch) || item.leaderEpoch < -1) {
    return {
      error: "INVALID_REQUEST",
      message: `leader epoch ${item.leaderEpoch} must be -1 or a non-negative integer`,
    };
  }
  const metadataBytes = utf8.encode(item.metadata).length;
  if (metadataBytes > OFFSETS_LIMITS.metadataBytesMax) {
    // Kafka's code here is OFFSET_METADATA_TOO_LARGE (12), which our error table lacks.
    return {
      error: "INVALID_REQUEST",
      message: `offset metadata is ${metadataBytes} bytes, limit ${OFFSETS_LIMITS.metadataBytesMax}`,
    };
  }
  return undefined;
}

export function checkProducer(
  transactionalId: string,
  producerId: bigint,
  producerEpoch: number,
): Refusal | undefined {
  if (transactionalId.length === 0)
    return { error: "INVALID_REQUEST", message: "transactional id must not be empty" };
  if (transactionalId.length > OFFSETS_LIMITS.transactionalIdCharsMax) {
    return {
      error: "INVALID_REQUEST",
      message: `transactional id has ${transactionalId.length} characters, limit ${OFFSETS_LIMITS.transactionalIdCharsMax}`,
    };
  }
  if (producerId < 0n)
    return { error: "INVALID_REQUEST", message: `producer id ${producerId} must be non-negative` };
  if (
    !Number.isInteger(producerEpoch) ||
    producerEpoch < 0 ||
    producerEpoch > OFFSETS_LIMITS.producerEpochMax
  ) {
    return {
      error: "INVALID_REQUEST",
      message: `producer epoch ${producerEpoch} must be in 0..${OFFSETS_LIMITS.producerEpochMax}`,
    };
  }
  return undefined;
}
