import { describe, expect, it } from "vitest";
import {
  addPartitions,
  bumpForInit,
  checkProducer,
  completeEnd,
  initialRecord,
  isExpired,
  isTimedOut,
  isValidTransition,
  markerProducer,
  mergePartitions,
  prepareEnd,
  PRODUCER_EPOCH_MAX,
  type TxnState,
} from "./transaction-metadata.js";

const tp = (topic: string, partition: number) => ({ topic, partition });

describe("transaction metadata", () => {
  it("follows Empty -> Ongoing -> PrepareCommit -> CompleteCommit -> Ongoing", () => {
    let r = initialRecord("t", 7n, 60_000, 1000);
    expect(r).toMatchObject({
      state: "Empty",
      producerId: 7n,
      producerEpoch: 0,
      lastProducerId: -1n,
    });
    r = addPartitions(r, [tp("b", 1), tp("a", 2)], 1100);
    expect(r.state).toBe("Ongoing");
    expect(r.txnStartTimeMs).toBe(1100);
    r = addPartitions(r, [tp("a", 2), tp("a", 0)], 1200);
    expect(r.partitions).toEqual([tp("a", 0), tp("a", 2), tp("b", 1)]);
    expect(r.txnStartTimeMs).toBe(1100);
    r = prepareEnd(r, true, "client", 1300, undefined);
    expect(r).toMatchObject({
      state: "PrepareCommit",
      producerEpoch: 1,
      lastProducerEpoch: 0,
      lastProducerId: 7n,
      endReason: "client",
    });
    expect(markerProducer(r)).toEqual({ producerId: 7n, producerEpoch: 1 });
    r = completeEnd(r, 1400);
    expect(r).toMatchObject({ state: "CompleteCommit", partitions: [], txnStartTimeMs: 0 });
    r = addPartitions(r, [tp("c", 0)], 1500);
    expect(r).toMatchObject({
      state: "Ongoing",
      producerEpoch: 1,
      partitions: [tp("c", 0)],
      txnStartTimeMs: 1500,
      endReason: null,
    });
  });

  it("has a validPreviousStates table that refuses skipping the decision", () => {
    const cases: Array<[TxnState | undefined, TxnState, boolean]> = [
      [undefined, "Empty", true],
      [undefined, "Ongoing", false],
      ["Ongoing", "CompleteCommit", false],
      ["PrepareCommit", "CompleteAbort", false],
      // The Complete* folded into the next transaction's first add (every marker acknowledged).
      ["PrepareCommit", "Ongoing", true],
      ["Ongoing", "CompleteAbort", false],
      ["PrepareAbort", "CompleteAbort", true],
      ["CompleteAbort", "Ongoing", true],
      ["PrepareCommit", "PrepareAbort", false],
    ];
    for (const [from, to, ok] of cases)
      expect(isValidTransition(from, to), `${from} -> ${to}`).toBe(ok);
  });

  it("fences old epochs and reports a timed-out producer as TRANSACTION_TIMED_OUT", () => {
    let r = addPartitions(initialRecord("t", 7n, 100, 0), [tp("a", 0)], 10);
    expect(checkProducer(r, 7n, 0)).toBeUndefined();
    expect(checkProducer(r, 8n, 0)).toBe("INVALID_PRODUCER_ID_MAPPING");
    expect(checkProducer(r, 7n, 1)).toBe("INVALID_PRODUCER_EPOCH");
    expect(isTimedOut(r, 109)).toBe(false);
    expect(isTimedOut(r, 110)).toBe(true);
    r = prepareEnd(r, false, "timeout", 110, undefined);
    expect(checkProducer(r, 7n, 0)).toBe("TRANSACTION_TIMED_OUT");
    r = completeEnd(r, 120);
    expect(checkProducer(r, 7n, 0)).toBe("TRANSACTION_TIMED_OUT");
    r = bumpForInit(r, 100, 130, undefined, true);
    expect(r.producerEpoch).toBe(2);
    expect(checkProducer(r, 7n, 0)).toBe("PRODUCER_FENCED");
    expect(checkProducer(r, 7n, 1)).toBe("PRODUCER_FENCED");
  });

  it("a bump for a new instance (no identity presented) keeps no last epoch; a re-init with the held identity keeps it", () => {
    const start = initialRecord("t", 7n, 100, 0);
    expect(bumpForInit(start, 100, 1, undefined, false)).toMatchObject({
      producerId: 7n,
      producerEpoch: 1,
      lastProducerId: 7n,
      lastProducerEpoch: -1,
    });
    expect(bumpForInit(start, 100, 1, undefined, true)).toMatchObject({
      producerId: 7n,
      producerEpoch: 1,
      lastProducerId: 7n,
      lastProducerEpoch: 0,
    });
  });

  it("a fence bumps the epoch so markers fence the old instance", () => {
    const r = prepareEnd(
      addPartitions(initialRecord("t", 7n, 100, 0), [tp("a", 0)], 10),
      false,
      "fence",
      20,
      undefined,
    );
    expect(r).toMatchObject({ state: "PrepareAbort", producerEpoch: 1, lastProducerEpoch: 0 });
    expect(markerProducer(r)).toEqual({ producerId: 7n, producerEpoch: 1 });
    expect(checkProducer(r, 7n, 0)).toBe("PRODUCER_FENCED");
  });

  it("rotates the producer id when the epoch is exhausted", () => {
    const start = { ...initialRecord("t", 7n, 100, 0), producerEpoch: PRODUCER_EPOCH_MAX - 1 };
    const init = bumpForInit(start, 100, 1, 99n, true);
    expect(init).toMatchObject({
      producerId: 99n,
      producerEpoch: 0,
      lastProducerId: 7n,
      lastProducerEpoch: PRODUCER_EPOCH_MAX - 1,
    });
    const open = addPartitions(start, [tp("a", 0)], 2);
    const end = prepareEnd(open, true, "client", 3, 100n);
    expect(end).toMatchObject({ producerId: 100n, producerEpoch: 0, lastProducerId: 7n });
    expect(markerProducer(end)).toEqual({ producerId: 7n, producerEpoch: PRODUCER_EPOCH_MAX });
    expect(checkProducer(end, 7n, PRODUCER_EPOCH_MAX - 1)).toBe("PRODUCER_FENCED");
    // One below: no rotation, the client gets the last usable epoch.
    const below = prepareEnd(
      addPartitions({ ...start, producerEpoch: PRODUCER_EPOCH_MAX - 2 }, [tp("a", 0)], 2),
      true,
      "client",
      3,
      undefined,
    );
    expect(below).toMatchObject({ producerId: 7n, producerEpoch: PRODUCER_EPOCH_MAX - 1 });
    expect(() => prepareEnd(open, true, "client", 3, undefined)).toThrow(/rotation/);
  });

  it("expires only idle ids", () => {
    const r = initialRecord("t", 7n, 100, 1000);
    expect(isExpired(r, 1999, 1000)).toBe(false);
    expect(isExpired(r, 2000, 1000)).toBe(true);
    expect(isExpired(addPartitions(r, [tp("a", 0)], 1000), 10_000, 1000)).toBe(false);
  });

  it("merges partitions sorted without duplicates", () => {
    expect(mergePartitions([tp("b", 0), tp("a", 1)], [tp("a", 1), tp("a", 0)])).toEqual([
      tp("a", 0),
      tp("a", 1),
      tp("b", 0),
    ]);
  });
});
