// AddPartitionsToTxn v0-v3 on a coordinator's listener (v3 flexible, the newest a Kafka client
// sends; v4+ batches transactions for brokers' verification, KIP-890, not served yet): the client's partitions join its open
// transaction (or open one) through the coordinator's own AddPartitionsToTxn handler. A failure
// of the whole request (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, CONCURRENT_TRANSACTIONS,
// fencing, ...) is answered on every partition, as Kafka does. Unlike Kafka's, the coordinator
// answers per partition: one missing from its metadata view is UNKNOWN_TOPIC_OR_PARTITION
// (retriable) and the others are added, where Kafka answers them OPERATION_NOT_ATTEMPTED.
import { kafkaErrorCode } from "./kafka-errors.js";
import { refusal, requireAllowed, type RequestAccess } from "./kafka-access.js";
import type { Logger } from "pino";
import { API } from "./api-versions.js";
import type { TransactionCoordinatorCalls } from "./kafka-deps.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { thrownTxnErrorCode, txnErrorCode } from "./txn-errors.js";

const OPERATION_NOT_ATTEMPTED = 55;

export async function addPartitionsToTxnResponse(
  calls: TransactionCoordinatorCalls,
  logger: Logger,
  version: number,
  r: KafkaReader,
  access?: RequestAccess,
): Promise<Buffer> {
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
  const topics = r.compactArray((x) => {
    const t = { name: x.compactString(), partitions: x.compactArray((y) => y.int32()) };
    x.taggedFields();
    return t;
  });
  r.taggedFields();
  return { transactionalId, producerId, producerEpoch, topics };
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
