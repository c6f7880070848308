// Every bound the broker data plane enforces, in one place (TigerBeetle style: a limit on
// everything). Topic configs may lower the per-topic ones.
export const BROKER_LIMITS = {
  /** Largest batch accepted (Kafka's message.max.bytes default is 1 MiB; ours allows 4 MiB). */
  batchBytesMax: 4 * 1024 * 1024,
  /** Largest single record (key + value + headers). */
  recordBytesMax: 1024 * 1024,
  /** Records in one batch. */
  recordsPerBatchMax: 10_000,
  /** Partitions in one Produce / Fetch / ListOffsets / DescribeProducers request. */
  partitionsPerRequestMax: 10_000,
  /** (marker, partition) pairs in one WriteTxnMarkers request. */
  markerItemsPerRequestMax: 10_000,
  produceTimeoutMsDefault: 30_000,
  produceTimeoutMsMax: 120_000,
  fetchWaitMsMax: 30_000,
  fetchBytesMaxDefault: 50 * 1024 * 1024,
  fetchPartitionBytesMaxDefault: 1024 * 1024,
  /** Wake-ups one long-poll may take before answering anyway (each re-reads the partitions). */
  fetchWakeupsMax: 10_000,
  /** Records may be stamped at most this far in the future of the broker's clock. */
  timestampFutureMsMax: 60 * 60 * 1000,
  markerTimeoutMs: 15_000,
  verifyTimeoutMs: 5_000,
  /** Remembered successful add-partition verifications (leader-local cache). */
  verifiedCacheMax: 100_000,
  hangingTransactionMsDefault: 900_000,
} as const;

/** Per-topic defaults, overridable by topic config keys of the same (Kafka) name. */
export const TOPIC_DEFAULTS = {
  "retention.ms": 7 * 24 * 3600 * 1000,
  /** Records are kept in memory (see docs/broker.md): bounded per partition by default. */
  "retention.bytes": 64 * 1024 * 1024,
  "producer.id.expiration.ms": 24 * 3600 * 1000,
  "max.message.bytes": 4 * 1024 * 1024,
} as const;

export type TopicConfigKey = keyof typeof TOPIC_DEFAULTS;

/** A topic config value as a number, falling back to the default when absent or malformed. */
export function topicConfigNumber(config: Record<string, string> | undefined, key: TopicConfigKey): number {
  const raw = config?.[key];
  if (raw === undefined || !/^-?\d+$/.test(raw.trim())) return TOPIC_DEFAULTS[key];
  return Number(raw);
}
