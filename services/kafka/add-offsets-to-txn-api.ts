// AddOffsetsToTxn v0-v4 on a coordinator's listener (v3+ flexible; v4 only lets the answer be
// TRANSACTION_ABORTABLE, KIP-890, which tern never answers): the group's __consumer_offsets partition
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
  const { transactionalId, producerId, producerEpoch, groupId } = decodeAddOffsetsToTxnRequest(
    version,
    r,
  );
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
  return encodeAddOffsetsToTxnResponse(version, error);
}

/** The first flexible version (request header v2, response header v1). */
export const ADD_OFFSETS_TO_TXN_FLEXIBLE_SINCE = 3;

export interface AddOffsetsToTxnRequest {
  readonly transactionalId: string;
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly groupId: string;
}

export function decodeAddOffsetsToTxnRequest(
  version: number,
  r: KafkaReader,
): AddOffsetsToTxnRequest {
  const flexible = version >= ADD_OFFSETS_TO_TXN_FLEXIBLE_SINCE;
  const transactionalId = flexible ? r.compactString() : r.string();
  const producerId = r.int64();
  const producerEpoch = r.int16();
  const groupId = flexible ? r.compactString() : r.string();
  if (flexible) r.taggedFields();
  return { transactionalId, producerId, producerEpoch, groupId };
}

export function encodeAddOffsetsToTxnResponse(version: number, errorCode: number): Buffer {
  const w = new KafkaWriter(8).int32(0).int16(errorCode); // throttle_time_ms, error_code
  if (version >= ADD_OFFSETS_TO_TXN_FLEXIBLE_SINCE) w.noTaggedFields();
  return w.finish();
}
