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

/** Limits of consumer groups (KIP-848 membership), checked while applying. */
export const GROUP_LIMITS = {
  /** Kafka's group.consumer.max.size is configurable; ours is a constant every replica shares. */
  membersMax: 1_000,
  /** Consumer groups with members or state held by one __consumer_offsets partition. */
  groupsPerPartitionMax: 10_000,
  memberIdCharsMax: 64,
  instanceIdCharsMax: 249,
  clientIdCharsMax: 255,
  clientHostCharsMax: 255,
  rackIdCharsMax: 255,
  /** Topic names in one subscription. */
  subscribedTopicsMax: 10_000,
  /** Regular expressions are compiled on every replica: keep them short. */
  regexCharsMax: 1_000,
  /** Topics one heartbeat entry may carry the partition counts of. */
  metadataTopicsMax: 10_000,
  /** Partitions a member may report as owned in one heartbeat. */
  ownedPartitionsMax: 100_000,
  rebalanceTimeoutMsMax: 30 * 60 * 1000,
} as const;
