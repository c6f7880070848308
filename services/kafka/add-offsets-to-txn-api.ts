// AddOffsetsToTxn v0-v2 on a coordinator's listener: the group's __consumer_offsets partition
// joins the transaction (the coordinator's own handler), so the TxnOffsetCommit the client
// then sends to the group coordinator (a broker) is accepted.
import { requireAllowed, type RequestAccess } from "./kafka-access.js";
import type { Logger } from "pino";
import { API } from "./api-versions.js";
import type { TransactionCoordinatorCalls } from "./kafka-deps.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { thrownTxnErrorCode } from "./txn-errors.js";

export async function addOffsetsToTxnResponse(
  calls: TransactionCoordinatorCalls,
  logger: Logger,
  version: number,
  r: KafkaReader,
  access?: RequestAccess,
): Promise<Buffer> {
  const transactionalId = r.string();
  const producerId = r.int64();
  const producerEpoch = r.int16();
  const groupId = r.string();
  let error = 0;
  try {
    // ACLs: WRITE on the transactional id, READ on the group.
    requireAllowed(access, "write", "transactional-id", transactionalId);
    requireAllowed(access, "read", "group", groupId);
    await calls.addOffsetsToTxn({
      transactionalId,
      producerId: producerId.toString(),
      producerEpoch,
      groupId,
    });
  } catch (e) {
    error = thrownTxnErrorCode(e, API.AddOffsetsToTxn, version, logger);
  }
  return new KafkaWriter(8).int32(0).int16(error).finish();
}
