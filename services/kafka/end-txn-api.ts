// EndTxn v0-v4 on a coordinator's listener (v3+ flexible; v4 only lets the answer be
// TRANSACTION_ABORTABLE, KIP-890, which tern never answers; v5's epoch bump is transactions V2): commit or abort through the coordinator's own EndTxn
// handler, with keep_epoch: Kafka clients below EndTxn v5 (transactions V1: librdkafka, kafkajs)
// go on with the producer id and epoch they hold, so the coordinator must not bump it (markers
// carry that epoch). Answered once the decision is durable; markers follow, and the client's
// next AddPartitionsToTxn waits inside the coordinator for their completion (bounded).
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
  try {
    requireAllowed(access, "write", "transactional-id", transactionalId);
    await calls.endTxn({
      transactionalId,
      producerId: producerId.toString(),
      producerEpoch,
      committed,
      keepEpoch: true,
    });
  } catch (e) {
    error = thrownTxnErrorCode(e, API.EndTxn, version, logger);
  }
  return encodeEndTxnResponse(version, error);
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

export function encodeEndTxnResponse(version: number, errorCode: number): Buffer {
  const w = new KafkaWriter(8).int32(0).int16(errorCode); // throttle_time_ms, error_code
  if (version >= END_TXN_FLEXIBLE_SINCE) w.noTaggedFields();
  return w.finish();
}
