// Every bound the broker data plane enforces, in one place (TigerBeetle style: a limit on
// everything). Topic configs may lower the per-topic ones. What must fit in one gRPC message or
// one Raft frame is checked against libs/common/limits.ts by brokerLimitRelations at start.
import {
  atMost,
  checkLimitRelations,
  GRPC_MESSAGE_BYTES_MAX,
  KiB,
  MiB,
  type LimitRelation,
} from "../../libs/common/limits.js";
import { MESSAGE_ENVELOPE_BYTES_MAX, type RaftHostLimits } from "../../libs/raft-host/limits.js";

export const BROKER_LIMITS = {
  /**
   * Largest batch accepted as sent, compressed when it is (Kafka's message.max.bytes default is
   * 1 MiB; ours allows 4 MiB); a topic's max.message.bytes may lower it. A record has no bound
   * of its own but its batch's, as in Kafka.
   */
  batchBytesMax: 4 * 1024 * 1024,
  /** Records in one batch. */
  recordsPerBatchMax: 10_000,
  /** Partitions in one Produce / Fetch / ListOffsets / DescribeProducers request. */
  partitionsPerRequestMax: 10_000,
  /** (marker, partition) pairs in one WriteTxnMarkers request. */
  markerItemsPerRequestMax: 10_000,
  produceTimeoutMsDefault: 30_000,
  produceTimeoutMsMax: 120_000,
  fetchWaitMsMax: 30_000,
  /** A Fetch's max_bytes when it gives none (Kafka's fetch.max.bytes)... */
  fetchBytesMaxDefault: 50 * MiB,
  /** ...and the most it may ask for: the answer must fit in one gRPC message (brokerLimitRelations). */
  fetchBytesMax: 64 * MiB,
  fetchPartitionBytesMaxDefault: 1024 * 1024,
  /**
   * Wire bytes a fetched batch and each of its records take beyond the records' stored size
   * (batch fields and length prefix; a record's tags, varints and length prefix): read() counts
   * them, so a fetch of many tiny batches stays within max_bytes on the wire too.
   */
  fetchBatchWireBytes: 48,
  fetchRecordWireBytes: 8,
  /** One partition's Fetch answer besides its batches: topic (≤ topicBytesMax), error message (≤ errorMessageCharsMax), offsets, leader endpoint. */
  fetchPartitionAnswerBytesMax: 2 * KiB,
  /** Topic names are at most 249 characters (the controller's rule); requests naming longer ones are refused. */
  topicBytesMax: 249,
  /** Error messages in per-partition answers are cut to this (they may quote request fields). */
  errorMessageCharsMax: 256,
  /** Wake-ups one long-poll may take before answering anyway (each re-reads the partitions). */
  fetchWakeupsMax: 10_000,
  /** Records may be stamped at most this far in the future of the broker's clock. */
  timestampFutureMsMax: 60 * 60 * 1000,
  markerTimeoutMs: 15_000,
  verifyTimeoutMs: 5_000,
  /** Remembered successful add-partition verifications (leader-local cache). */
  verifiedCacheMax: 100_000,
  hangingTransactionMsDefault: 900_000,
  /**
   * Idempotent producers whose state one partition keeps. A new producer past it takes the
   * place of the longest-idle one without an open transaction, idle at least
   * producerEvictableIdleMs; with none, its batch is refused (THROTTLING_QUOTA_EXCEEDED).
   */
  producersPerPartitionMax: 10_000,
  producerEvictableIdleMs: 60_000,
} as const;

/** Per-topic defaults, overridable by topic config keys of the same (Kafka) name. */
export const TOPIC_DEFAULTS = {
  /** Kafka's defaults: 7 days, no size bound (records live in segment files, docs/storage.md). */
  "retention.ms": 7 * 24 * 3600 * 1000,
  "retention.bytes": -1,
  "segment.bytes": 128 * 1024 * 1024,
  "segment.ms": 7 * 24 * 3600 * 1000,
  "producer.id.expiration.ms": 24 * 3600 * 1000,
  "max.message.bytes": 4 * 1024 * 1024,
} as const;

export type TopicConfigKey = keyof typeof TOPIC_DEFAULTS;

/** A topic config value as a number, falling back to the default when absent or malformed. */
export function topicConfigNumber(
  config: Record<string, string> | undefined,
  key: TopicConfigKey,
): number {
  const raw = config?.[key];
  if (raw === undefined || !/^-?\d+$/.test(raw.trim())) return TOPIC_DEFAULTS[key];
  return Number(raw);
}

/** BROKER_LIMITS with plain numbers (tests try other values). */
export type BrokerLimits = { readonly [K in keyof typeof BROKER_LIMITS]: number };

/** Stored-size overhead of one record inside a partition entry or a Produce request, at most (length prefixes, timestamp). */
const RECORD_FRAMING_BYTES_MAX = 32;

/** What must hold between the broker's limits, the gRPC message bound and the Raft host's frames. */
export function brokerLimitRelations(
  raft: RaftHostLimits,
  limits: BrokerLimits = BROKER_LIMITS,
  grpcMessageBytesMax = GRPC_MESSAGE_BYTES_MAX,
): LimitRelation[] {
  const largestBatchWire =
    limits.batchBytesMax + limits.recordsPerBatchMax * RECORD_FRAMING_BYTES_MAX;
  const largestFetchAnswer =
    limits.fetchBytesMax +
    largestBatchWire +
    limits.fetchBatchWireBytes +
    limits.partitionsPerRequestMax * limits.fetchPartitionAnswerBytesMax;
  return [
    atMost(
      "max.message.bytes default",
      TOPIC_DEFAULTS["max.message.bytes"],
      "batchBytesMax",
      limits.batchBytesMax,
    ),
    atMost(
      "fetchBytesMaxDefault",
      limits.fetchBytesMaxDefault,
      "fetchBytesMax",
      limits.fetchBytesMax,
    ),
    atMost(
      "fetchPartitionBytesMaxDefault",
      limits.fetchPartitionBytesMaxDefault,
      "fetchBytesMax",
      limits.fetchBytesMax,
    ),
    // The answer: fetchBytesMax of records, the first batch over the budget, every partition's fields.
    atMost(
      "the largest Fetch answer (fetchBytesMax + one batch + partitionsPerRequestMax × fetchPartitionAnswerBytesMax)",
      largestFetchAnswer,
      "GRPC_MESSAGE_BYTES_MAX",
      grpcMessageBytesMax,
    ),
    // A Produce request with one largest batch must reach the broker.
    atMost(
      "one largest batch in a Produce request",
      largestBatchWire + limits.fetchPartitionAnswerBytesMax,
      "GRPC_MESSAGE_BYTES_MAX",
      grpcMessageBytesMax,
    ),
    // The partition entry of a largest batch goes to followers in one Append, in one Raft frame.
    atMost(
      "one largest batch entry in a Raft frame",
      largestBatchWire + MESSAGE_ENVELOPE_BYTES_MAX,
      "raft grpcMessageBytesMax",
      raft.grpcMessageBytesMax,
    ),
  ];
}

/** At start: a broker whose limits contradict each other refuses to run (LimitError). */
export function assertBrokerLimits(
  raft: RaftHostLimits,
  limits: BrokerLimits = BROKER_LIMITS,
): void {
  checkLimitRelations("broker", brokerLimitRelations(raft, limits));
}

/**
 * Inflated records may take at most this: twice the largest batch, room for the record framing
 * of Kafka's layout; validation then applies the real limits to the decoded records.
 */
export const INFLATED_BYTES_MAX = 2 * BROKER_LIMITS.batchBytesMax;
