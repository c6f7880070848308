// Kafka error codes for the transactional APIs' answers. Failures of the coordinator's and the
// group service's handlers are thrown TernErrors whose names are Kafka's; two need a version
// rule. PRODUCER_FENCED (90, KIP-588) is known to clients only from InitProducerId v4,
// AddPartitionsToTxn / AddOffsetsToTxn / EndTxn v2 and TxnOffsetCommit v3; older versions get
// INVALID_PRODUCER_EPOCH (47), as Kafka's broker answers them. TRANSACTION_TIMED_OUT is
// tern-only (1001): a Kafka client gets what Kafka answers a producer whose transaction the
// coordinator aborted on timeout (its epoch was bumped), the same fencing code.
import type { Logger } from "pino";
import { isTernError } from "../../libs/common/errors.js";
import { API } from "./api-versions.js";
import { kafkaErrorCode } from "./kafka-errors.js";

/** The first version of each API that may answer PRODUCER_FENCED. */
const PRODUCER_FENCED_SINCE: ReadonlyMap<number, number> = new Map([
  [API.InitProducerId, 4],
  [API.AddPartitionsToTxn, 2],
  [API.AddOffsetsToTxn, 2],
  [API.EndTxn, 2],
  [API.TxnOffsetCommit, 3],
]);

export function txnErrorCode(name: string, apiKey: number, version: number): number {
  const fencing = name === "PRODUCER_FENCED" || name === "TRANSACTION_TIMED_OUT";
  if (fencing)
    return version >= (PRODUCER_FENCED_SINCE.get(apiKey) ?? Infinity)
      ? kafkaErrorCode("PRODUCER_FENCED")
      : kafkaErrorCode("INVALID_PRODUCER_EPOCH");
  return kafkaErrorCode(name);
}

/** A thrown failure's code: a TernError's own, anything else UNKNOWN_SERVER_ERROR (-1, logged). */
export function thrownTxnErrorCode(
  e: unknown,
  apiKey: number,
  version: number,
  logger?: Logger,
): number {
  if (isTernError(e)) return txnErrorCode(e.errorName, apiKey, version);
  logger?.warn({ err: e, apiKey, version }, "kafka transactional request failed");
  return -1;
}
