// The admin APIs behind kafka-transactions.sh (KIP-664), all flexible from v0:
// - ListTransactions v0-v1: the transactions this node coordinates. Kafka's admin client asks
//   every node Metadata lists and merges; a coordinator answers the __transaction_state
//   partitions it leads, a broker (which coordinates none) an empty list. State filters that
//   name no Kafka state are answered back in unknown_state_filters.
// - DescribeTransactions v0: sent where FindCoordinator(transaction) points; a broker answers
//   NOT_COORDINATOR per id so the client finds the coordinator again.
// - DescribeProducers v0: sent to a partition's leader (a broker): the producer state the
//   partition holds (pid, epoch, last sequence and timestamp, the open transaction's first offset).
// Each is a translation of the gRPC handler the `tern txn` CLI uses; nothing is implemented twice.
import type { RequestAccess } from "./kafka-access.js";
import type { Logger } from "pino";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { API } from "./api-versions.js";
import { kafkaErrorCode } from "./kafka-errors.js";
import { thrownTxnErrorCode } from "./txn-errors.js";
import type { AbortPartitionTransactionCall } from "./write-txn-markers-api.js";
import type {
  DescribeProducersPartitionResult__Output,
  DescribeProducersRequest__Output,
  DescribeProducersResponse__Output,
  DescribeTransactionsRequest__Output,
  DescribeTransactionsResponse__Output,
  ListTransactionsRequest__Output,
  ListTransactionsResponse__Output,
  TransactionDescription__Output,
  TransactionState__Output,
} from "../../libs/common/proto-types/index.js";

/** Kafka's transaction state names (TransactionState.java) and tern's proto enum names. */
const KAFKA_STATE: Readonly<Record<string, string>> = {
  EMPTY: "Empty",
  ONGOING: "Ongoing",
  PREPARE_COMMIT: "PrepareCommit",
  PREPARE_ABORT: "PrepareAbort",
  COMPLETE_COMMIT: "CompleteCommit",
  COMPLETE_ABORT: "CompleteAbort",
};
// The keys above are the proto enum's names.
const TERN_STATE = new Map(
  Object.entries(KAFKA_STATE).map(([tern, kafka]) => [kafka, tern as TransactionState__Output]),
);
/** Every state name Kafka knows (TransactionState.java): tern's and two tern never has. */
const KAFKA_STATE_NAMES: ReadonlySet<string> = new Set([
  ...Object.values(KAFKA_STATE),
  "Dead",
  "PrepareEpochFence",
]);
/** Kafka's name for a state tern has no name for (never written by tern; a safe default). */
const UNKNOWN_STATE = "Unknown";

export interface TransactionAdminCalls {
  /** tern.v1.TransactionCoordinator/ListTransactions; undefined on a broker (no transactions there). */
  listTransactions?(
    request: ListTransactionsRequest__Output,
  ): Promise<ListTransactionsResponse__Output>;
  /** tern.v1.TransactionCoordinator/DescribeTransactions; undefined on a broker. */
  describeTransactions?(
    request: DescribeTransactionsRequest__Output,
  ): Promise<DescribeTransactionsResponse__Output>;
  /** tern.v1.Broker/AbortPartitionTransaction (WriteTxnMarkers); undefined on a coordinator. */
  abortPartitionTransaction?: AbortPartitionTransactionCall;
  /** tern.v1.Broker/DescribeProducers; undefined on a coordinator (it leads no data partitions). */
  describeProducers?(
    request: DescribeProducersRequest__Output,
  ): Promise<DescribeProducersResponse__Output>;
}

export async function listTransactionsResponse(
  calls: TransactionAdminCalls,
  logger: Logger,
  version: number,
  r: KafkaReader,
  access?: RequestAccess,
): Promise<Buffer> {
  const kafkaStates = r.compactArray((x) => x.compactString());
  const producerIds = r.compactArray((x) => x.int64());
  const durationMs = version >= 1 ? r.int64() : -1n;
  r.taggedFields();
  // A filter naming only states tern never has matches nothing (Kafka's "Dead", "PrepareEpochFence").
  const states = kafkaStates.flatMap((s) => TERN_STATE.get(s) ?? []);
  // Names that are no state of Kafka's at all are answered back as unknown (Kafka's rule).
  const unknownStates = kafkaStates.filter((s) => !KAFKA_STATE_NAMES.has(s));
  let error = 0;
  let listed: Array<{ transactionalId: string; producerId: string; state: string }> = [];
  if (calls.listTransactions !== undefined && (kafkaStates.length === 0 || states.length > 0)) {
    try {
      const answer = await calls.listTransactions({
        stateFilters: states,
        producerIdFilters: producerIds.map(String),
        durationFilterMs: String(durationMs > 0n ? durationMs : 0n),
      });
      // ACLs: only the transactional ids the principal may DESCRIBE.
      listed = (answer.transactions ?? []).filter(
        (t: { transactionalId: string }) =>
          access === undefined || access.allowed("describe", "transactional-id", t.transactionalId),
      );
    } catch (e) {
      error = thrownTxnErrorCode(e, API.ListTransactions, version, logger);
    }
  }
  const w = new KafkaWriter(256).int32(0).int16(error);
  w.compactArray(unknownStates, (x, s) => x.compactNullableString(s));
  w.compactArray(listed, (x, t) => {
    x.compactNullableString(t.transactionalId)
      .int64(BigInt(t.producerId))
      .compactNullableString(KAFKA_STATE[t.state] ?? UNKNOWN_STATE)
      .noTaggedFields();
  });
  return w.noTaggedFields().finish();
}

interface TopicPartitionWire {
  readonly topic: string;
  readonly partition: number;
}

/** Partitions grouped by topic, in first-seen order. */
function byTopic(partitions: readonly TopicPartitionWire[]): Array<[string, number[]]> {
  const topics = new Map<string, number[]>();
  for (const p of partitions) {
    const list = topics.get(p.topic) ?? [];
    list.push(p.partition);
    topics.set(p.topic, list);
  }
  return [...topics];
}

export async function describeTransactionsResponse(
  calls: TransactionAdminCalls,
  logger: Logger,
  r: KafkaReader,
  access?: RequestAccess,
): Promise<Buffer> {
  const asked = r.compactArray((x) => x.compactString());
  r.taggedFields();
  // ACLs: DESCRIBE on each transactional id; refused ones are answered so and not looked up.
  const refused = asked.filter(
    (id) => access !== undefined && !access.allowed("describe", "transactional-id", id),
  );
  const ids = asked.filter((id) => !refused.includes(id));
  let described: Array<{
    transactionalId: string;
    error: number;
    d?: TransactionDescription__Output;
  }>;
  if (ids.length === 0) {
    described = [];
  } else if (calls.describeTransactions === undefined) {
    described = ids.map((transactionalId) => ({
      transactionalId,
      error: kafkaErrorCode("NOT_COORDINATOR"),
    }));
  } else {
    try {
      const answer =
        (await calls.describeTransactions({ transactionalIds: ids })).transactions ?? [];
      described = answer.map((d) => ({
        transactionalId: String(d.transactionalId),
        error: kafkaErrorCode(d.errorCode),
        d,
      }));
    } catch (e) {
      const error = thrownTxnErrorCode(e, API.DescribeTransactions, 0, logger);
      described = ids.map((transactionalId) => ({ transactionalId, error }));
    }
  }
  described.push(
    ...refused.map((transactionalId) => ({
      transactionalId,
      error: kafkaErrorCode("TRANSACTIONAL_ID_AUTHORIZATION_FAILED"),
    })),
  );
  const w = new KafkaWriter(256).int32(0);
  w.compactArray(described, (x, { transactionalId, error, d }) => {
    x.int16(error).compactNullableString(transactionalId);
    if (error !== 0 || d === undefined) {
      x.compactNullableString("")
        .int32(0)
        .int64(-1n)
        .int64(-1n)
        .int16(-1) // producer_epoch
        .compactArray([], () => undefined)
        .noTaggedFields();
      return;
    }
    const preparing = d.state === "PREPARE_COMMIT" || d.state === "PREPARE_ABORT";
    // Kafka: while preparing, only the partitions still waiting for their marker.
    const partitions: TopicPartitionWire[] =
      (preparing ? d.pendingMarkerPartitions : d.partitions) ?? [];
    const startMs = BigInt(d.transactionStartTimeMs ?? 0);
    x.compactNullableString(KAFKA_STATE[d.state] ?? UNKNOWN_STATE)
      .int32(Number(d.transactionTimeoutMs ?? 0))
      .int64(startMs > 0n ? startMs : -1n);
    x.int64(BigInt(d.producerId ?? -1)).int16(Number(d.producerEpoch ?? -1));
    x.compactArray(byTopic(partitions), (y, [topic, indexes]) => {
      y.compactNullableString(topic)
        .compactArray(indexes, (z, i) => z.int32(i))
        .noTaggedFields();
    });
    x.noTaggedFields();
  });
  return w.noTaggedFields().finish();
}

export async function describeProducersResponse(
  calls: TransactionAdminCalls,
  logger: Logger,
  r: KafkaReader,
  access?: RequestAccess,
): Promise<Buffer> {
  const topics = r.compactArray((x) => {
    const name = x.compactString();
    const partitions = x.compactArray((y) => y.int32());
    x.taggedFields();
    return { name, partitions };
  });
  r.taggedFields();
  // ACLs: READ on the topic (Kafka's rule); refused topics are answered so and not looked up.
  const refusedTopics = new Set(
    access === undefined
      ? []
      : topics.filter((t) => !access.allowed("read", "topic", t.name)).map((t) => t.name),
  );
  const asked = topics
    .filter((t) => !refusedTopics.has(t.name))
    .flatMap((t) => t.partitions.map((partition) => ({ topic: t.name, partition })));
  const answers = new Map<string, DescribeProducersPartitionResult__Output>();
  let failed: number | undefined;
  if (calls.describeProducers === undefined) failed = kafkaErrorCode("NOT_LEADER_OR_FOLLOWER");
  else if (asked.length > 0) {
    try {
      for (const p of (await calls.describeProducers({ partitions: asked })).partitions ?? [])
        answers.set(`${p.topic}\u0000${p.partition}`, p);
    } catch (e) {
      failed = thrownTxnErrorCode(e, API.DescribeProducers, 0, logger);
    }
  }
  const w = new KafkaWriter(256).int32(0);
  w.compactArray(topics, (x, t) => {
    x.compactNullableString(t.name);
    x.compactArray(t.partitions, (y, partition) => {
      const a = answers.get(`${t.name}\u0000${partition}`);
      const error = refusedTopics.has(t.name)
        ? kafkaErrorCode("TOPIC_AUTHORIZATION_FAILED")
        : (failed ?? (a === undefined ? -1 : kafkaErrorCode(a.errorCode)));
      y.int32(partition)
        .int16(error)
        .compactNullableString(error === 0 ? null : a?.errorMessage || null);
      y.compactArray(error === 0 ? (a?.producers ?? []) : [], (z, p) => {
        z.int64(BigInt(p.producerId))
          .int32(Number(p.producerEpoch))
          .int32(Number(p.lastSequence))
          .int64(BigInt(p.lastTimestampMs));
        z.int32(Number(p.coordinatorEpoch)).int64(BigInt(p.currentTxnStartOffset)).noTaggedFields();
      });
      y.noTaggedFields();
    });
    x.noTaggedFields();
  });
  return w.noTaggedFields().finish();
}
