// EndTxn v0-v5 on a coordinator's listener (v3+ flexible; v4 only lets the answer be
// TRANSACTION_ABORTABLE, KIP-890, which tern never answers): commit or abort through the
// coordinator's own EndTxn handler. Below v5 (transactions V1: librdkafka, kafkajs, a Java
// client with transaction.version below 2) with keep_epoch: those clients go on with the producer
// id and epoch they hold, so the coordinator must not bump it (markers carry that epoch). v5 is
// transactions V2 (KIP-890 part 2), as tern's own producer: the coordinator bumps the epoch and
// the answer carries the producer id and epoch of the client's next transaction. Answered once
// the decision is durable; markers follow, and the client's next request of the transactional id
// waits inside the coordinator for their completion (bounded).
import { requireAllowed, type RequestAccess } from "./kafka-access.js";
import type { Logger } from "pino";
import { API } from "./api-versions.js";
import type { TransactionCoordinatorCalls } from "./kafka-deps.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { thrownTxnErrorCode } from "./txn-errors.js";

export async function endTxnResponse(
  calls: TransactionCoordinatorCalls,
  logger: Logger,
  version: number,
  r: KafkaReader,
  access?: RequestAccess,
): Promise<Buffer> {
  const { transactionalId, producerId, producerEpoch, committed } = decodeEndTxnRequest(version, r);
  let error = 0;
  let next: ProducerIdentity = { producerId: -1n, producerEpoch: -1 };
  try {
    requireAllowed(access, "write", "transactional-id", transactionalId);
    const answer = await calls.endTxn({
      transactionalId,
      producerId: producerId.toString(),
      producerEpoch,
      committed,
      keepEpoch: version < END_TXN_BUMPS_EPOCH_SINCE,
    });
    next = { producerId: BigInt(answer.producerId), producerEpoch: answer.producerEpoch };
  } catch (e) {
    error = thrownTxnErrorCode(e, API.EndTxn, version, logger);
  }
  return encodeEndTxnResponse(version, error, next);
}

/** Transactions V2 (KIP-890 part 2): every end bumps the epoch, and the answer carries it. */
export const END_TXN_BUMPS_EPOCH_SINCE = 5;

/** The producer id and epoch a v5 answer carries (-1, -1 with an error, Kafka's defaults). */
export interface ProducerIdentity {
  readonly producerId: bigint;
  readonly producerEpoch: number;
}

/** The first flexible version (request header v2, response header v1). */
export const END_TXN_FLEXIBLE_SINCE = 3;

export interface EndTxnRequest {
  readonly transactionalId: string;
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly committed: boolean;
}

export function decodeEndTxnRequest(version: number, r: KafkaReader): EndTxnRequest {
  const flexible = version >= END_TXN_FLEXIBLE_SINCE;
  const transactionalId = flexible ? r.compactString() : r.string();
  const producerId = r.int64();
  const producerEpoch = r.int16();
  const committed = r.bool();
  if (flexible) r.taggedFields();
  return { transactionalId, producerId, producerEpoch, committed };
}

export function encodeEndTxnResponse(
  version: number,
  errorCode: number,
  next: ProducerIdentity = { producerId: -1n, producerEpoch: -1 },
): Buffer {
  const w = new KafkaWriter(24).int32(0).int16(errorCode); // throttle_time_ms, error_code
  if (version >= END_TXN_BUMPS_EPOCH_SINCE) {
    const ok = errorCode === 0;
    w.int64(ok ? next.producerId : -1n).int16(ok ? next.producerEpoch : -1);
  }
  if (version >= END_TXN_FLEXIBLE_SINCE) w.noTaggedFields();
  return w.finish();
}
