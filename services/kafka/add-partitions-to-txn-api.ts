// AddPartitionsToTxn on a coordinator's listener. v0-v3 (v3 flexible) are what Kafka clients
// send: the client's partitions join its open transaction (or open one) through the
// coordinator's own AddPartitionsToTxn handler. A failure of the whole request (NOT_COORDINATOR,
// COORDINATOR_LOAD_IN_PROGRESS, CONCURRENT_TRANSACTIONS, fencing, ...) is answered on every
// partition, as Kafka does. Unlike Kafka's, the coordinator answers per partition: one missing
// from its metadata view is UNKNOWN_TOPIC_OR_PARTITION (retriable) and the others are added,
// where Kafka answers them OPERATION_NOT_ATTEMPTED. v4+ is what Kafka's brokers send for
// KIP-890 (a client never does): several transactions in one request, each verify-only (are
// these partitions in the ongoing transaction?) or an add, with a top-level error code; it needs
// CLUSTER_ACTION on the cluster, as in Kafka, and each transaction is answered on its own. v5 =
// v4 (TRANSACTION_ABORTABLE allowed, never answered). tern's brokers ask their coordinators over
// gRPC (services/broker/txn-verifier.ts); this serves other tools that speak Kafka's.
import { kafkaErrorCode } from "./kafka-errors.js";
import { refusal, requireAllowed, type RequestAccess } from "./kafka-access.js";
import type { Logger } from "pino";
import { API } from "./api-versions.js";
import type { TransactionCoordinatorCalls } from "./kafka-deps.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { thrownTxnErrorCode, txnErrorCode } from "./txn-errors.js";
import { CLUSTER_RESOURCE_NAME } from "../../libs/common/acl.js";

const OPERATION_NOT_ATTEMPTED = 55;

export async function addPartitionsToTxnResponse(
  calls: TransactionCoordinatorCalls,
  logger: Logger,
  version: number,
  r: KafkaReader,
  access?: RequestAccess,
): Promise<Buffer> {
  if (version >= ADD_PARTITIONS_TO_TXN_BATCHED_SINCE)
    return batchedAddPartitionsToTxnResponse(calls, logger, version, r, access);
  const { transactionalId, producerId, producerEpoch, topics } = decodeAddPartitionsToTxnRequest(
    version,
    r,
  );
  const wanted = topics.flatMap((t) =>
    t.partitions.map((partition) => ({ topic: t.name, partition })),
  );
  const codes = new Map<string, number>();
  try {
    // ACLs: WRITE on the transactional id, then on every topic; with one topic refused nothing
    // is added and the others are OPERATION_NOT_ATTEMPTED (Kafka's answer).
    requireAllowed(access, "write", "transactional-id", transactionalId);
    const refusedTopics = new Set(
      topics
        .filter((t) => refusal(access, "write", "topic", t.name) !== undefined)
        .map((t) => t.name),
    );
    if (refusedTopics.size > 0) {
      for (const tp of wanted)
        codes.set(
          `${tp.topic}/${tp.partition}`,
          refusedTopics.has(tp.topic)
            ? kafkaErrorCode("TOPIC_AUTHORIZATION_FAILED")
            : OPERATION_NOT_ATTEMPTED,
        );
      return encodeAddPartitionsToTxnResponse(version, topics, codes);
    }
    const res = await calls.addPartitionsToTxn({
      transactionalId,
      producerId: producerId.toString(),
      producerEpoch,
      partitions: wanted,
      verifyOnly: false,
    });
    for (const x of res.results ?? []) {
      // The coordinator's handler sets topicPartition on every result.
      codes.set(
        `${x.topicPartition!.topic}/${x.topicPartition!.partition}`,
        txnErrorCode(x.errorCode, API.AddPartitionsToTxn, version),
      );
    }
  } catch (e) {
    const code = thrownTxnErrorCode(e, API.AddPartitionsToTxn, version, logger);
    for (const tp of wanted) codes.set(`${tp.topic}/${tp.partition}`, code);
  }
  return encodeAddPartitionsToTxnResponse(version, topics, codes);
}

/** The first flexible version (request header v2, response header v1). */
export const ADD_PARTITIONS_TO_TXN_FLEXIBLE_SINCE = 3;

/** The first version of brokers' batched requests (KIP-890: several transactions, verify-only). */
export const ADD_PARTITIONS_TO_TXN_BATCHED_SINCE = 4;

export interface AddPartitionsToTxnTopic {
  readonly name: string;
  readonly partitions: readonly number[];
}

export interface AddPartitionsToTxnRequest {
  readonly transactionalId: string;
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly topics: readonly AddPartitionsToTxnTopic[];
}

export function decodeAddPartitionsToTxnRequest(
  version: number,
  r: KafkaReader,
): AddPartitionsToTxnRequest {
  if (version < ADD_PARTITIONS_TO_TXN_FLEXIBLE_SINCE) {
    const transactionalId = r.string();
    const producerId = r.int64();
    const producerEpoch = r.int16();
    const topics = r.array((x) => ({ name: x.string(), partitions: x.array((y) => y.int32()) }));
    return { transactionalId, producerId, producerEpoch, topics };
  }
  const transactionalId = r.compactString();
  const producerId = r.int64();
  const producerEpoch = r.int16();
  const topics = compactTopics(r);
  r.taggedFields();
  return { transactionalId, producerId, producerEpoch, topics };
}

/** The flexible versions' topics: a compact array of names and their partitions. */
function compactTopics(r: KafkaReader): AddPartitionsToTxnTopic[] {
  return r.compactArray((x) => {
    const t = { name: x.compactString(), partitions: x.compactArray((y) => y.int32()) };
    x.taggedFields();
    return t;
  });
}

/** Every partition of the request, in request order, with its code (-1 if none was given). */
export function encodeAddPartitionsToTxnResponse(
  version: number,
  topics: readonly AddPartitionsToTxnTopic[],
  codes: ReadonlyMap<string, number>,
): Buffer {
  const count = topics.reduce((n, t) => n + t.partitions.length, 0);
  const code = (t: AddPartitionsToTxnTopic, p: number): number => codes.get(`${t.name}/${p}`) ?? -1;
  const w = new KafkaWriter(64 + count * 8);
  w.int32(0); // throttle_time_ms
  if (version < ADD_PARTITIONS_TO_TXN_FLEXIBLE_SINCE) {
    w.array(topics, (x, t) => {
      x.string(t.name);
      x.array(t.partitions, (y, p) => y.int32(p).int16(code(t, p)));
    });
    return w.finish();
  }
  w.compactArray(topics, (x, t) => {
    x.compactNullableString(t.name);
    x.compactArray(t.partitions, (y, p) => y.int32(p).int16(code(t, p)).noTaggedFields());
    x.noTaggedFields();
  });
  return w.noTaggedFields().finish();
}

export interface AddPartitionsToTxnTransaction {
  readonly transactionalId: string;
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly verifyOnly: boolean;
  readonly topics: readonly AddPartitionsToTxnTopic[];
}

/** v4+: the transactions of a broker's batched request. */
export function decodeBatchedAddPartitionsToTxnRequest(
  r: KafkaReader,
): AddPartitionsToTxnTransaction[] {
  const transactions = r.compactArray((x) => {
    const transactionalId = x.compactString();
    const producerId = x.int64();
    const producerEpoch = x.int16();
    const verifyOnly = x.bool();
    const topics = compactTopics(x);
    x.taggedFields();
    return { transactionalId, producerId, producerEpoch, verifyOnly, topics };
  });
  r.taggedFields();
  return transactions;
}

async function batchedAddPartitionsToTxnResponse(
  calls: TransactionCoordinatorCalls,
  logger: Logger,
  version: number,
  r: KafkaReader,
  access: RequestAccess | undefined,
): Promise<Buffer> {
  const transactions = decodeBatchedAddPartitionsToTxnRequest(r);
  if (refusal(access, "cluster-action", "cluster", CLUSTER_RESOURCE_NAME) !== undefined)
    return encodeBatchedAddPartitionsToTxnResponse(
      kafkaErrorCode("CLUSTER_AUTHORIZATION_FAILED"),
      [],
    );
  const results = await Promise.all(
    transactions.map(async (t) => {
      const wanted = t.topics.flatMap((x) =>
        x.partitions.map((partition) => ({ topic: x.name, partition })),
      );
      const codes = new Map<string, number>();
      try {
        const res = await calls.addPartitionsToTxn({
          transactionalId: t.transactionalId,
          producerId: t.producerId.toString(),
          producerEpoch: t.producerEpoch,
          partitions: wanted,
          verifyOnly: t.verifyOnly,
        });
        for (const x of res.results ?? [])
          codes.set(
            `${x.topicPartition!.topic}/${x.topicPartition!.partition}`,
            txnErrorCode(x.errorCode, API.AddPartitionsToTxn, version),
          );
      } catch (e) {
        const code = thrownTxnErrorCode(e, API.AddPartitionsToTxn, version, logger);
        for (const tp of wanted) codes.set(`${tp.topic}/${tp.partition}`, code);
      }
      return { transaction: t, codes };
    }),
  );
  return encodeBatchedAddPartitionsToTxnResponse(0, results);
}

/** v4+: a top-level code, then each transaction's partitions with their codes (-1 if none). */
export function encodeBatchedAddPartitionsToTxnResponse(
  errorCode: number,
  results: ReadonlyArray<{
    readonly transaction: AddPartitionsToTxnTransaction;
    readonly codes: ReadonlyMap<string, number>;
  }>,
): Buffer {
  const w = new KafkaWriter(64);
  w.int32(0).int16(errorCode); // throttle_time_ms, error_code
  w.compactArray(results, (x, { transaction, codes }) => {
    x.compactNullableString(transaction.transactionalId);
    x.compactArray(transaction.topics, (y, t) => {
      y.compactNullableString(t.name);
      y.compactArray(t.partitions, (z, p) =>
        z
          .int32(p)
          .int16(codes.get(`${t.name}/${p}`) ?? -1)
          .noTaggedFields(),
      );
      y.noTaggedFields();
    });
    x.noTaggedFields();
  });
  return w.noTaggedFields().finish();
}
