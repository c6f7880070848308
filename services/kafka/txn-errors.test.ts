// The version rule of the transactional APIs' error codes: PRODUCER_FENCED (and tern's
// TRANSACTION_TIMED_OUT) is INVALID_PRODUCER_EPOCH for versions that predate KIP-588, other
// names keep Kafka's number, and anything that is not a TernError is UNKNOWN_SERVER_ERROR.
import { describe, expect, it } from "vitest";
import { TernError } from "../../libs/common/errors.js";
import { API } from "./api-versions.js";
import { thrownTxnErrorCode, txnErrorCode } from "./txn-errors.js";

describe("transactional error codes", () => {
  it("answers PRODUCER_FENCED only from the version that knows it", () => {
    expect(txnErrorCode("PRODUCER_FENCED", API.EndTxn, 1)).toBe(47);
    expect(txnErrorCode("PRODUCER_FENCED", API.EndTxn, 2)).toBe(90);
    expect(txnErrorCode("PRODUCER_FENCED", API.AddPartitionsToTxn, 0)).toBe(47);
    expect(txnErrorCode("PRODUCER_FENCED", API.InitProducerId, 1)).toBe(47);
    expect(txnErrorCode("PRODUCER_FENCED", API.TxnOffsetCommit, 2)).toBe(47);
    expect(txnErrorCode("TRANSACTION_TIMED_OUT", API.AddOffsetsToTxn, 2)).toBe(90);
    expect(txnErrorCode("TRANSACTION_TIMED_OUT", API.AddOffsetsToTxn, 0)).toBe(47);
  });

  it("keeps Kafka's numbers for the other names", () => {
    expect(txnErrorCode("NOT_COORDINATOR", API.EndTxn, 0)).toBe(16);
    expect(txnErrorCode("COORDINATOR_NOT_AVAILABLE", API.EndTxn, 0)).toBe(15);
    expect(txnErrorCode("CONCURRENT_TRANSACTIONS", API.AddPartitionsToTxn, 0)).toBe(51);
    expect(txnErrorCode("INVALID_TXN_STATE", API.EndTxn, 0)).toBe(48);
    expect(txnErrorCode("NONE", API.EndTxn, 0)).toBe(0);
    expect(thrownTxnErrorCode(new TernError("COORDINATOR_LOAD_IN_PROGRESS"), API.EndTxn, 0)).toBe(
      14,
    );
    expect(thrownTxnErrorCode(new Error("boom"), API.EndTxn, 0)).toBe(-1);
  });
});
