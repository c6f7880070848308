// Limits of the consumer-offsets partitions. The state machine checks them while applying, so
// they are code constants (every replica runs the same code), not per-process configuration.
export const OFFSETS_LIMITS = {
  /** Kafka's offset.metadata.max.bytes default. */
  metadataBytesMax: 4096,
  /** Group ids longer than this are refused with INVALID_GROUP_ID. */
  groupIdCharsMax: 1024,
  transactionalIdCharsMax: 1024,
  /** Kafka's topic name limit. */
  topicCharsMax: 249,
  /** Partitions in one OffsetCommit / TxnOffsetCommit / OffsetFetch request. */
  partitionsPerRequestMax: 10_000,
  /** Committed offsets held by one __consumer_offsets partition (all groups). */
  committedOffsetsMax: 1_000_000,
  /** Pending transactional offsets held for one producer id. */
  pendingOffsetsPerProducerMax: 10_000,
  /** Producer ids remembered (epoch and coordinator epoch for fencing) by one partition. */
  producersMax: 100_000,
  /** Producer epochs are int16 in Kafka. */
  producerEpochMax: 32_767,
} as const;

/** Kafka's defaults: offsets.retention.minutes = 7 days; transactional.id.expiration.ms = 7 days. */
export const OFFSETS_RETENTION_MS_DEFAULT = 7 * 24 * 3600 * 1000;
export const PRODUCER_EXPIRATION_MS_DEFAULT = 7 * 24 * 3600 * 1000;
