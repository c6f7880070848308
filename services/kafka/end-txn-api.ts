// EndTxn v0-v2 on a coordinator's listener: commit or abort through the coordinator's own EndTxn
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
  const transactionalId = r.string();
  const producerId = r.int64();
  const producerEpoch = r.int16();
  const committed = r.bool();
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
  return new KafkaWriter(8).int32(0).int16(error).finish();
}
