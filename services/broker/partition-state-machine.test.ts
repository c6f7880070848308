import { describe, expect, it } from "vitest";
import { partitionForTest, tempPartitionDir } from "./testing/partition-for-test.js";
import { PartitionStateMachine, type AppendResult } from "./partition-state-machine.js";
import {
  decodeEntry,
  encodeEntry,
  type EntryHeader,
  type PartitionEntry,
  type RecordData,
} from "./partition-entry.js";
import { checkBatch, recordBatch } from "./producer-state.js";
import { BROKER_LIMITS } from "./broker-limits.js";
import type { AppliedEntry } from "../../libs/raft-host/state-machine.js";

const HEADER: EntryHeader = {
  appendTimeMs: 1_000_000,
  retentionMs: -1,
  retentionBytes: -1,
  producerExpiryMs: 3_600_000,
};

function rec(value: string, timestampMs = 0): RecordData {
  return { key: null, value: Buffer.from(value), headers: [], timestampMs };
}

/** A state machine over segment files in a fresh temporary directory (or the given one: a restart). */
function partitionAt(dir = tempPartitionDir()): PartitionStateMachine {
  return partitionForTest("t", 0, dir);
}

/** As the host opens a new group: openAt(0) (a restart restores first, then opens at its index). */
function opened(sm: PartitionStateMachine): PartitionStateMachine {
  sm.appliedLog.openAt(0);
  return sm;
}

class Harness {
  readonly dir = tempPartitionDir();
  sm = opened(partitionAt(this.dir));
  index = 0;
  header: EntryHeader = { ...HEADER };
  /** Every applied entry, as the Raft log would hold it. */
  readonly entries: AppliedEntry[] = [];

  applyEntry(e: PartitionEntry): AppendResult {
    this.index++;
    const entry = { index: this.index, term: 1, data: encodeEntry(e) };
    this.entries.push(entry);
    return this.sm.apply(entry);
  }

  /** Every segment rolls after one entry (retention works on whole segments). */
  segmentPerEntry(): void {
    this.sm.setSegmentConfig(1, -1);
  }

  /** The process restarts: a new state machine on the same files, restored from `snapshot`. */
  async restart(snapshot: Uint8Array, index: number): Promise<PartitionStateMachine> {
    await this.sm.close();
    this.sm = partitionAt(this.dir);
    this.sm.restore(snapshot, index, {
      term: 1,
      confState: { voters: [0], learners: [], outgoingVoters: [] },
    });
    this.sm.appliedLog.openAt(index);
    return this.sm;
  }

  batch(opts: {
    pid?: bigint;
    epoch?: number;
    seq?: number;
    txn?: boolean;
    values: string[];
    ts?: number;
  }): AppendResult {
    return this.applyEntry({
      kind: "batch",
      header: this.header,
      producerId: opts.pid ?? -1n,
      producerEpoch: opts.epoch ?? 0,
      baseSequence: opts.seq ?? -1,
      isTransactional: opts.txn ?? false,
      records: opts.values.map((v) => rec(v, opts.ts ?? 0)),
    });
  }

  marker(pid: bigint, epoch: number, type: "COMMIT" | "ABORT", coordinatorEpoch = 0): AppendResult {
    return this.applyEntry({
      kind: "marker",
      header: this.header,
      producerId: pid,
      producerEpoch: epoch,
      controlType: type,
      coordinatorEpoch,
      epochBumped: false,
    });
  }

  tick(advanceMs: number): AppendResult {
    this.header = { ...this.header, appendTimeMs: this.header.appendTimeMs + advanceMs };
    return this.applyEntry({ kind: "tick", header: this.header });
  }

  async values(
    isolation: "READ_COMMITTED" | "READ_UNCOMMITTED",
    from = 0n,
  ): Promise<Array<[bigint, string]>> {
    const r = await this.sm.read(from, 1 << 30, isolation, true);
    expect(r.error).toBe("NONE");
    return r.batches.flatMap((b) =>
      b.records.map(
        (x, i) => [b.baseOffset + BigInt(i), Buffer.from(x.value!).toString()] as [bigint, string],
      ),
    );
  }
}

describe("entry codec", () => {
  it("round-trips batches, markers and ticks", async () => {
    const batch: PartitionEntry = {
      kind: "batch",
      header: HEADER,
      producerId: 12345678901234n,
      producerEpoch: 3,
      baseSequence: 7,
      isTransactional: true,
      records: [
        {
          key: Buffer.from("k"),
          value: null,
          headers: [
            { key: "h", value: Buffer.from("v") },
            { key: "n", value: null },
          ],
          timestampMs: 42,
        },
      ],
    };
    const back = decodeEntry(encodeEntry(batch));
    expect(back).toMatchObject({
      kind: "batch",
      header: HEADER,
      producerId: 12345678901234n,
      producerEpoch: 3,
      baseSequence: 7,
      isTransactional: true,
    });
    const r = (back as typeof batch).records[0]!;
    expect(Buffer.from(r.key!).toString()).toBe("k");
    expect(r.value).toBeNull();
    expect(r.timestampMs).toBe(42);
    expect(
      r.headers.map((x) => [x.key, x.value === null ? null : Buffer.from(x.value).toString()]),
    ).toEqual([
      ["h", "v"],
      ["n", null],
    ]);
    const marker: PartitionEntry = {
      kind: "marker",
      header: HEADER,
      producerId: 5n,
      producerEpoch: 1,
      controlType: "ABORT",
      coordinatorEpoch: 9,
      epochBumped: false,
    };
    expect(decodeEntry(encodeEntry(marker))).toEqual(marker);
    expect(decodeEntry(encodeEntry({ kind: "tick", header: HEADER }))).toEqual({
      kind: "tick",
      header: HEADER,
    });
  });

  it("carries a transactional batch's guard and a marker's bumped flag; reads version 1 entries", async () => {
    const guarded: PartitionEntry = {
      kind: "batch",
      header: HEADER,
      producerId: 5n,
      producerEpoch: 1,
      baseSequence: 0,
      isTransactional: true,
      txnGuard: 0x7fffffff,
      records: [{ key: null, value: Buffer.from("v"), headers: [], timestampMs: 1 }],
    };
    expect(decodeEntry(encodeEntry(guarded))).toMatchObject({ txnGuard: 0x7fffffff });
    const bumped: PartitionEntry = {
      kind: "marker",
      header: HEADER,
      producerId: 5n,
      producerEpoch: 2,
      controlType: "COMMIT",
      coordinatorEpoch: 9,
      epochBumped: true,
    };
    expect(decodeEntry(encodeEntry(bumped))).toEqual(bumped);
    // Version 1 (written before guards): no guard field, no flag byte.
    const v1Marker = Buffer.from(encodeEntry(bumped).subarray(0, -1));
    v1Marker[0] = 1;
    expect(decodeEntry(v1Marker)).toEqual({ ...bumped, epochBumped: false });
    const v2Batch = Buffer.from(encodeEntry(guarded));
    const headerEnd = 2 + 4 * 8;
    const v1Batch = Buffer.concat([
      v2Batch.subarray(0, headerEnd),
      v2Batch.subarray(headerEnd + 4),
    ]);
    v1Batch[0] = 1;
    const old = decodeEntry(v1Batch);
    expect(old).toMatchObject({ kind: "batch", producerId: 5n, isTransactional: true });
    expect("txnGuard" in old).toBe(false);
  });

  it("rejects truncated and trailing data with CORRUPT_MESSAGE", async () => {
    const data = encodeEntry({
      kind: "marker",
      header: HEADER,
      producerId: 5n,
      producerEpoch: 1,
      controlType: "ABORT",
      coordinatorEpoch: 9,
      epochBumped: false,
    });
    expect(() => decodeEntry(data.subarray(0, data.length - 1))).toThrow(/truncated/);
    expect(() => decodeEntry(Buffer.concat([data, Buffer.from([0])]))).toThrow(/trailing/);
  });
});

describe("offsets and plain produce", () => {
  it("assigns dense offsets at apply and reads them back", async () => {
    const h = new Harness();
    expect(h.batch({ values: ["a", "b"] })).toMatchObject({
      error: "NONE",
      baseOffset: 0n,
      lastOffset: 1n,
    });
    expect(h.batch({ values: ["c"] })).toMatchObject({ error: "NONE", baseOffset: 2n });
    expect(h.sm.highWatermark()).toBe(3n);
    expect(await h.values("READ_UNCOMMITTED")).toEqual([
      [0n, "a"],
      [1n, "b"],
      [2n, "c"],
    ]);
    expect(await h.values("READ_UNCOMMITTED", 1n)).toEqual([
      [1n, "b"],
      [2n, "c"],
    ]);
  });

  it("stamps records without a timestamp with the replicated append time", async () => {
    const h = new Harness();
    h.batch({ values: ["a"] });
    h.batch({ values: ["b"], ts: 5 });
    const r = await h.sm.read(0n, 1 << 20, "READ_UNCOMMITTED", true);
    expect(r.batches.map((b) => b.records[0]!.timestampMs)).toEqual([HEADER.appendTimeMs, 5]);
  });

  it("answers OFFSET_OUT_OF_RANGE above the high watermark, empty at it", async () => {
    const h = new Harness();
    h.batch({ values: ["a"] });
    expect((await h.sm.read(2n, 100, "READ_UNCOMMITTED", true)).error).toBe("OFFSET_OUT_OF_RANGE");
    const atEnd = await h.sm.read(1n, 100, "READ_UNCOMMITTED", true);
    expect(atEnd.error).toBe("NONE");
    expect(atEnd.batches).toEqual([]);
    expect(atEnd.nextFetchOffset).toBe(1n);
  });

  it("honours maxBytes but always returns the first batch", async () => {
    const h = new Harness();
    for (let i = 0; i < 10; i++) h.batch({ values: ["x".repeat(100)] });
    const one = await h.sm.read(0n, 10, "READ_UNCOMMITTED", true);
    expect(one.batches.length).toBe(1);
    expect(one.nextFetchOffset).toBe(1n);
    expect((await h.sm.read(0n, 10, "READ_UNCOMMITTED", false)).batches.length).toBe(0);
    // A batch of one 100-byte record: 120 stored bytes, counted with its wire framing.
    const counted = 120 + BROKER_LIMITS.fetchBatchWireBytes + BROKER_LIMITS.fetchRecordWireBytes;
    const some = await h.sm.read(0n, 3 * counted + 50, "READ_UNCOMMITTED", true);
    expect(some.batches.length).toBe(3);
    expect(some.bytes).toBe(3 * counted);
  });

  it("refuses corrupt and empty entries deterministically", async () => {
    const h = new Harness();
    expect(h.sm.apply({ index: ++h.index, term: 1, data: Uint8Array.from([1, 1, 2]) }).error).toBe(
      "CORRUPT_MESSAGE",
    );
    expect(h.batch({ values: [] }).error).toBe("INVALID_RECORD");
    expect(h.batch({ values: ["a"], txn: true }).error).toBe("INVALID_RECORD");
    expect(h.sm.highWatermark()).toBe(0n);
  });
});

describe("idempotent producer", () => {
  it("accepts the next sequence and answers a duplicate of the last 5 with its original offsets", async () => {
    const h = new Harness();
    for (let i = 0; i < 6; i++)
      expect(h.batch({ pid: 7n, seq: i * 2, values: ["a", "b"] }).error).toBe("NONE");
    // Batches 1..5 (seq 2..11) are remembered; seq 2 is the oldest remembered.
    const dup = h.batch({ pid: 7n, seq: 2, values: ["a", "b"] });
    expect(dup).toMatchObject({ error: "NONE", duplicate: true, baseOffset: 2n, lastOffset: 3n });
    expect(h.sm.highWatermark()).toBe(12n);
    // seq 0 fell out of the window: already written, not a gap.
    expect(h.batch({ pid: 7n, seq: 0, values: ["a", "b"] }).error).toBe(
      "DUPLICATE_SEQUENCE_NUMBER",
    );
    expect(h.sm.highWatermark()).toBe(12n);
  });

  it("refuses a gap with OUT_OF_ORDER_SEQUENCE_NUMBER and writes nothing", async () => {
    const h = new Harness();
    h.batch({ pid: 7n, seq: 0, values: ["a"] });
    const r = h.batch({ pid: 7n, seq: 2, values: ["c"] });
    expect(r.error).toBe("OUT_OF_ORDER_SEQUENCE_NUMBER");
    expect(h.sm.highWatermark()).toBe(1n);
    expect(h.batch({ pid: 7n, seq: 1, values: ["b"] }).error).toBe("NONE");
  });

  it("fences a stale epoch and starts a new epoch at sequence 0", async () => {
    const h = new Harness();
    h.batch({ pid: 7n, epoch: 1, seq: 0, values: ["a"] });
    expect(h.batch({ pid: 7n, epoch: 0, seq: 1, values: ["b"] }).error).toBe(
      "INVALID_PRODUCER_EPOCH",
    );
    expect(h.batch({ pid: 7n, epoch: 2, seq: 5, values: ["b"] }).error).toBe(
      "OUT_OF_ORDER_SEQUENCE_NUMBER",
    );
    expect(h.batch({ pid: 7n, epoch: 2, seq: 0, values: ["b"] }).error).toBe("NONE");
    expect(h.batch({ pid: 7n, epoch: 1, seq: 1, values: ["c"] }).error).toBe(
      "INVALID_PRODUCER_EPOCH",
    );
    expect(h.sm.describeProducers()).toEqual([
      expect.objectContaining({ producerId: 7n, producerEpoch: 2, lastSequence: 0 }),
    ]);
  });

  it("wraps sequences past 2^31-1", async () => {
    const entry = {
      producerEpoch: 0,
      batches: [],
      lastTimestampMs: 0,
      coordinatorEpoch: -1,
      openTransaction: null,
      markersApplied: 0,
      lastEndedEpoch: -1,
    };
    const atEnd = recordBatch(
      recordBatch(
        entry,
        {
          producerId: 7n,
          producerEpoch: 0,
          baseSequence: 0,
          recordCount: 1,
          isTransactional: false,
        },
        0n,
        0,
      ),
      {
        producerId: 7n,
        producerEpoch: 0,
        baseSequence: 1,
        recordCount: 0x7ffffffe,
        isTransactional: false,
      },
      1n,
      0,
    );
    expect(atEnd.batches.at(-1)!.lastSequence).toBe(0x7ffffffe);
    expect(
      checkBatch(atEnd, {
        producerId: 7n,
        producerEpoch: 0,
        baseSequence: 0x7fffffff,
        recordCount: 1,
        isTransactional: false,
      }),
    ).toEqual({ kind: "append" });
    const wrapped = recordBatch(
      atEnd,
      {
        producerId: 7n,
        producerEpoch: 0,
        baseSequence: 0x7fffffff,
        recordCount: 1,
        isTransactional: false,
      },
      2n,
      0,
    );
    expect(
      checkBatch(wrapped, {
        producerId: 7n,
        producerEpoch: 0,
        baseSequence: 0,
        recordCount: 2,
        isTransactional: false,
      }),
    ).toEqual({ kind: "append" });
  });

  it("requires sequence 0 first, so a pipelined later batch can never make an earlier one look written", async () => {
    const h = new Harness();
    // A brand-new producer whose second batch (seq 2) overtakes its first (seq 0).
    expect(h.batch({ pid: 7n, seq: 2, values: ["c"] }).error).toBe("OUT_OF_ORDER_SEQUENCE_NUMBER");
    expect(h.batch({ pid: 7n, seq: 0, values: ["a", "b"] }).error).toBe("NONE");
    expect(h.batch({ pid: 7n, seq: 2, values: ["c"] }).error).toBe("NONE");
    expect(h.sm.highWatermark()).toBe(3n);
  });

  it("after a marker resets the sequence space, the next transaction must start at sequence 0", async () => {
    const h = new Harness();
    expect(h.batch({ pid: 7n, epoch: 0, seq: 0, txn: true, values: ["a"] }).error).toBe("NONE");
    expect(h.marker(7n, 1, "COMMIT").error).toBe("NONE");
    // Next transaction (epoch 1 after the V2 bump): its batch seq 1 arrives before seq 0.
    expect(h.batch({ pid: 7n, epoch: 1, seq: 1, txn: true, values: ["c"] }).error).toBe(
      "OUT_OF_ORDER_SEQUENCE_NUMBER",
    );
    expect(h.batch({ pid: 7n, epoch: 1, seq: 0, txn: true, values: ["b"] }).error).toBe("NONE");
    expect(h.batch({ pid: 7n, epoch: 1, seq: 1, txn: true, values: ["c"] }).error).toBe("NONE");
  });

  it("keeps producers apart", async () => {
    const h = new Harness();
    h.batch({ pid: 1n, seq: 0, values: ["a"] });
    h.batch({ pid: 2n, seq: 0, values: ["b"] });
    expect(h.batch({ pid: 1n, seq: 1, values: ["c"] }).error).toBe("NONE");
    expect(h.batch({ pid: 2n, seq: 1, values: ["d"] }).error).toBe("NONE");
  });

  it("expires idle producers using the replicated time", async () => {
    const h = new Harness();
    h.header = { ...h.header, producerExpiryMs: 60_000 };
    h.batch({ pid: 1n, seq: 0, values: ["a"] });
    h.tick(30_000);
    expect(h.sm.producer(1n)).toBeDefined();
    h.tick(40_000);
    expect(h.sm.producer(1n)).toBeUndefined();
    // Unknown again: the producer must start over at sequence 0 (its client resets on the error).
    expect(h.batch({ pid: 1n, seq: 9, values: ["b"] }).error).toBe("OUT_OF_ORDER_SEQUENCE_NUMBER");
    expect(h.batch({ pid: 1n, seq: 0, values: ["b"] }).error).toBe("NONE");
  });
});

describe("transactions", () => {
  it("holds the LSO at the first offset of an open transaction and advances it on COMMIT", async () => {
    const h = new Harness();
    h.batch({ values: ["plain"] });
    h.batch({ pid: 5n, seq: 0, txn: true, values: ["t1", "t2"] });
    h.batch({ values: ["after"] });
    expect(h.sm.lastStableOffset()).toBe(1n);
    expect(h.sm.highWatermark()).toBe(4n);
    expect(await h.values("READ_COMMITTED")).toEqual([[0n, "plain"]]);
    expect(await h.values("READ_UNCOMMITTED")).toEqual([
      [0n, "plain"],
      [1n, "t1"],
      [2n, "t2"],
      [3n, "after"],
    ]);
    expect(h.marker(5n, 0, "COMMIT")).toMatchObject({ error: "NONE", baseOffset: 4n });
    expect(h.sm.lastStableOffset()).toBe(5n);
    expect(await h.values("READ_COMMITTED")).toEqual([
      [0n, "plain"],
      [1n, "t1"],
      [2n, "t2"],
      [3n, "after"],
    ]);
    const r = await h.sm.read(0n, 1 << 20, "READ_COMMITTED", true);
    expect(r.nextFetchOffset).toBe(5n);
  });

  it("never returns aborted or control records under read_committed", async () => {
    const h = new Harness();
    h.batch({ pid: 5n, seq: 0, txn: true, values: ["bad1"] });
    h.batch({ pid: 6n, seq: 0, txn: true, values: ["good1"] });
    h.batch({ pid: 5n, seq: 1, txn: true, values: ["bad2"] });
    h.marker(5n, 0, "ABORT");
    expect(h.sm.lastStableOffset()).toBe(1n);
    h.marker(6n, 0, "COMMIT");
    expect(h.sm.lastStableOffset()).toBe(5n);
    expect(await h.values("READ_COMMITTED")).toEqual([[1n, "good1"]]);
    expect(await h.values("READ_UNCOMMITTED")).toEqual([
      [0n, "bad1"],
      [1n, "good1"],
      [2n, "bad2"],
    ]);
    expect(h.sm.abortedTransactions()).toEqual([
      { producerId: 5n, firstOffset: 0n, lastOffset: 3n },
    ]);
    // A later transaction of the same producer is not confused with the aborted one.
    h.batch({ pid: 5n, seq: 2, txn: true, values: ["ok"] });
    h.marker(5n, 0, "COMMIT");
    expect(await h.values("READ_COMMITTED")).toEqual([
      [1n, "good1"],
      [5n, "ok"],
    ]);
  });

  it("skips a fully filtered range and reports the next fetch offset", async () => {
    const h = new Harness();
    h.batch({ pid: 5n, seq: 0, txn: true, values: ["x"] });
    h.marker(5n, 0, "ABORT");
    const r = await h.sm.read(0n, 1 << 20, "READ_COMMITTED", true);
    expect(r.batches).toEqual([]);
    expect(r.nextFetchOffset).toBe(2n);
  });

  it("refuses a non-transactional batch while the producer's transaction is open", async () => {
    const h = new Harness();
    h.batch({ pid: 5n, seq: 0, txn: true, values: ["x"] });
    expect(h.batch({ pid: 5n, seq: 1, values: ["y"] }).error).toBe("INVALID_TXN_STATE");
  });

  it("refuses markers from an older producer epoch or coordinator epoch; a retried marker is harmless", async () => {
    const h = new Harness();
    h.batch({ pid: 5n, epoch: 3, seq: 0, txn: true, values: ["x"] });
    expect(h.marker(5n, 2, "COMMIT", 1).error).toBe("INVALID_PRODUCER_EPOCH");
    expect(h.marker(5n, 3, "COMMIT", 4).error).toBe("NONE");
    const end = h.sm.highWatermark();
    expect(h.marker(5n, 3, "COMMIT", 4)).toMatchObject({ error: "NONE", duplicate: true });
    expect(h.sm.highWatermark()).toBe(end);
    h.batch({ pid: 5n, epoch: 3, seq: 1, txn: true, values: ["y"] });
    expect(h.marker(5n, 3, "ABORT", 3).error).toBe("TRANSACTION_COORDINATOR_FENCED");
    expect(h.sm.lastStableOffset()).toBe(2n);
  });

  it("accepts an abort marker with a bumped epoch (fencing) and the new epoch then starts fresh", async () => {
    const h = new Harness();
    h.batch({ pid: 5n, epoch: 0, seq: 0, txn: true, values: ["x"] });
    expect(h.batch({ pid: 5n, epoch: 1, seq: 0, txn: true, values: ["zombie?"] }).error).toBe(
      "INVALID_TXN_STATE",
    );
    expect(h.marker(5n, 1, "ABORT", 0).error).toBe("NONE");
    expect(h.batch({ pid: 5n, epoch: 0, seq: 1, txn: true, values: ["late"] }).error).toBe(
      "INVALID_PRODUCER_EPOCH",
    );
    expect(h.batch({ pid: 5n, epoch: 1, seq: 0, txn: true, values: ["new"] }).error).toBe("NONE");
    expect(h.sm.lastStableOffset()).toBe(2n);
  });

  it("does not expire a producer with an open transaction", async () => {
    const h = new Harness();
    h.header = { ...h.header, producerExpiryMs: 1_000 };
    h.batch({ pid: 5n, seq: 0, txn: true, values: ["x"] });
    h.tick(20_000);
    expect(h.sm.producer(5n)?.openTransaction?.firstOffset).toBe(0n);
  });
});

describe("retention (whole segments, Kafka's rules)", () => {
  it("drops segments older than retention.ms and advances the log start offset", async () => {
    const h = new Harness();
    h.segmentPerEntry();
    h.header = { ...h.header, retentionMs: 10_000 };
    h.batch({ values: ["a"] });
    h.tick(5_000);
    h.batch({ values: ["b"] });
    h.tick(6_000);
    expect(h.sm.logStartOffset()).toBe(1n);
    expect((await h.sm.read(0n, 100, "READ_UNCOMMITTED", true)).error).toBe("OFFSET_OUT_OF_RANGE");
    expect(await h.values("READ_UNCOMMITTED", 1n)).toEqual([[1n, "b"]]);
  });

  it("drops by size while the rest still holds retention.bytes, never the active segment", async () => {
    const h = new Harness();
    h.segmentPerEntry();
    h.header = { ...h.header, retentionBytes: 250 };
    for (let i = 0; i < 5; i++) h.batch({ values: ["x".repeat(100)] });
    expect(h.sm.logStartOffset()).toBe(3n);
    expect(h.sm.segmentCount()).toBe(2);
    h.header = { ...h.header, retentionBytes: 0 };
    h.batch({ values: ["y"] });
    expect(h.sm.logStartOffset()).toBe(5n);
    expect(await h.values("READ_UNCOMMITTED", 5n)).toEqual([[5n, "y"]]);
  });

  it("keeps everything with Kafka's defaults (no size bound) within retention.ms", async () => {
    const h = new Harness();
    h.sm.setSegmentConfig(4096, -1);
    h.header = { ...h.header, retentionMs: 7 * 24 * 3600 * 1000, retentionBytes: -1 };
    for (let i = 0; i < 200; i++) h.batch({ values: ["z".repeat(500)] });
    expect(h.sm.segmentCount()).toBeGreaterThan(20);
    expect(h.sm.logStartOffset()).toBe(0n);
    expect((await h.values("READ_UNCOMMITTED")).length).toBe(200);
  });

  it("trims the aborted index with the log; producer state and the LSO stay", async () => {
    const h = new Harness();
    h.segmentPerEntry();
    h.header = { ...h.header, retentionMs: 1_000 };
    h.batch({ pid: 5n, seq: 0, txn: true, values: ["x"] });
    h.marker(5n, 0, "ABORT");
    h.batch({ pid: 6n, seq: 0, txn: true, values: ["open"] });
    expect(h.sm.abortedTransactions().length).toBe(1);
    h.tick(5_000);
    expect(h.sm.abortedTransactions().length).toBe(0);
    expect(h.sm.logStartOffset()).toBe(3n);
    // The open transaction's first offset (2) is gone with its segment, but it stays open.
    expect(h.sm.lastStableOffset()).toBe(2n);
    expect(h.batch({ pid: 5n, seq: 1, values: ["next"] })).toMatchObject({
      error: "NONE",
      baseOffset: 3n,
    });
  });
});

describe("timestamps", () => {
  it("finds the first offset at or after a timestamp", async () => {
    const h = new Harness();
    h.batch({ values: ["a"], ts: 100 });
    h.batch({ values: ["b", "c"], ts: 200 });
    expect(await h.sm.offsetForTimestamp(150)).toEqual({ offset: 1n, timestampMs: 200 });
    expect(await h.sm.offsetForTimestamp(50)).toEqual({ offset: 0n, timestampMs: 100 });
    expect(await h.sm.offsetForTimestamp(300)).toBeNull();
  });
});

describe("snapshot and restart", () => {
  it("restores producers, open transactions, the aborted index and offsets; records stay in the segments", async () => {
    const h = new Harness();
    h.batch({ values: ["plain"] });
    h.batch({ pid: 5n, seq: 0, txn: true, values: ["bad"] });
    h.marker(5n, 0, "ABORT", 2);
    h.batch({ pid: 6n, epoch: 4, seq: 0, txn: true, values: ["open"] });
    h.batch({ pid: 7n, seq: 0, values: ["idem"] });
    const snap = h.sm.snapshot();
    const at = h.index;
    const before = {
      producers: h.sm.describeProducers(),
      aborted: h.sm.abortedTransactions(),
      read: await h.sm.read(0n, 1 << 20, "READ_UNCOMMITTED", true),
      hw: h.sm.highWatermark(),
    };
    // Applied past the snapshot, then the process dies: those entries are dropped and applied again.
    h.batch({ values: ["after-snapshot"] });
    const copy = await h.restart(snap, at);
    h.index = at;
    expect(copy.producer(5n)?.markersApplied).toBe(1);
    expect(copy.highWatermark()).toBe(before.hw);
    expect(copy.lastStableOffset()).toBe(3n);
    expect(copy.describeProducers()).toEqual(before.producers);
    expect(copy.abortedTransactions()).toEqual(before.aborted);
    expect(await copy.read(0n, 1 << 20, "READ_UNCOMMITTED", true)).toEqual(before.read);
    // It continues identically: duplicate detection and fencing survive.
    expect(h.batch({ pid: 7n, seq: 0, values: ["idem"] })).toMatchObject({
      duplicate: true,
      baseOffset: 4n,
    });
    expect(h.marker(5n, 0, "COMMIT", 1).error).toBe("TRANSACTION_COORDINATOR_FENCED");
    expect(h.batch({ values: ["after-snapshot"] })).toMatchObject({
      error: "NONE",
      baseOffset: 5n,
    });
  });

  it("holds metadata only, and a replica installing it starts its log after it", async () => {
    const h = new Harness();
    const big = "x".repeat(1000);
    for (let i = 0; i < 50; i++) h.batch({ values: [big] });
    const snap = h.sm.snapshot();
    expect(snap.byteLength).toBeLessThan(1000);
    const fresh = opened(partitionAt());
    fresh.restore(snap, h.index, {
      term: 1,
      confState: { voters: [0], learners: [], outgoingVoters: [] },
    });
    expect(fresh.logStartOffset()).toBe(50n);
    expect(fresh.highWatermark()).toBe(50n);
    expect(fresh.appliedLog.firstIndex()).toBe(h.index + 1);
    // What the leader streams next lands at the right offset.
    expect(
      fresh.apply({
        index: h.index + 1,
        term: 1,
        data: encodeEntry({
          kind: "batch",
          header: h.header,
          producerId: -1n,
          producerEpoch: 0,
          baseSequence: -1,
          isTransactional: false,
          records: [rec("n")],
        }),
      }),
    ).toMatchObject({ baseOffset: 50n });
    await fresh.close();
  });

  it("refuses to open at an applied index the segments do not reach (lost files: the host starts the log over)", async () => {
    const h = new Harness();
    h.batch({ values: ["a"] });
    await h.sm.close();
    const lost = partitionAt();
    expect(() => lost.appliedLog.openAt(5)).toThrow(
      /the applied log ends at 0, before the applied index 5/,
    );
    await lost.close();
  });

  it("is deterministic: two replicas applying the same entries produce identical snapshots", async () => {
    const a = new Harness();
    const b = new Harness();
    for (const h of [a, b]) {
      h.header = { ...h.header, retentionBytes: 500, producerExpiryMs: 20_000 };
      for (let i = 0; i < 50; i++) {
        h.batch({
          pid: BigInt(i % 3),
          seq: Math.floor(i / 3),
          txn: i % 3 === 0,
          values: [`v${i}`],
        });
        if (i % 7 === 0) h.marker(0n, 0, i % 2 === 0 ? "COMMIT" : "ABORT");
        if (i % 11 === 0) h.tick(7_000);
      }
    }
    expect(Buffer.from(a.sm.snapshot()).equals(Buffer.from(b.sm.snapshot()))).toBe(true);
  });

  it("wakes append listeners on appends only", async () => {
    const h = new Harness();
    let wakes = 0;
    const off = h.sm.onAppend(() => wakes++);
    h.batch({ values: ["a"] });
    h.batch({ pid: 1n, seq: 0, values: ["b"] });
    h.batch({ pid: 1n, seq: 0, values: ["b"] });
    h.tick(1);
    expect(wakes).toBe(2);
    off();
    h.batch({ values: ["c"] });
    expect(wakes).toBe(2);
  });
});

describe("transaction-end listeners (the broker's verification cache forgets on them)", () => {
  it("hear every accepted marker (nothing open too), not a refused one, and a restore", async () => {
    const h = new Harness();
    const heard: Array<bigint | undefined> = [];
    const stop = h.sm.onTransactionEnd((pid) => heard.push(pid));
    h.batch({ pid: 5n, epoch: 0, seq: 0, txn: true, values: ["a"] });
    expect(heard).toEqual([]);
    h.marker(5n, 0, "COMMIT", 2);
    h.marker(6n, 0, "ABORT"); // no data here: a no-op marker still ends what was verified
    expect(h.marker(5n, 0, "ABORT", 1).error).toBe("TRANSACTION_COORDINATOR_FENCED");
    expect(heard).toEqual([5n, 6n]);
    h.sm.restore(h.sm.snapshot(), h.index, {
      term: 1,
      confState: { voters: [0], learners: [], outgoingVoters: [] },
    });
    expect(heard).toEqual([5n, 6n, undefined]);
    stop();
    h.marker(7n, 0, "COMMIT");
    expect(heard.length).toBe(3);
  });
});
