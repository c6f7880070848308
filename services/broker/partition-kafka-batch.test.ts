// Kafka batches stored as sent (partition entry kind "kafka-batch"): the entry keeps the bytes
// and reads its fields from the batch header; apply assigns offsets and checks idempotence from
// that header alone; a read for the Kafka listener returns the stored bytes whole, any other
// read gets the records (inflated when compressed) with null apart from empty and headers kept.
import { describe, expect, it } from "vitest";
import { partitionForTest, tempPartitionDir } from "./testing/partition-for-test.js";
import {
  decodeEntry,
  encodeEntry,
  kafkaBatchEntry,
  type EntryHeader,
  type PartitionEntry,
  type RecordData,
} from "./partition-entry.js";
import type { PartitionStateMachine } from "./partition-state-machine.js";
import { decodeBatches, encodeBatch, recordsSection } from "../kafka/record-batch.js";
import { KafkaWriter } from "../../libs/records/kafka-codec.js";
import { compress, type CompressionCodec } from "../../libs/records/compression.js";

const HEADER: EntryHeader = {
  appendTimeMs: 1_800_000_000_000,
  retentionMs: -1,
  retentionBytes: -1,
  producerExpiryMs: 3_600_000,
};
const T0 = 1_700_000_000_000;

function records(prefix: string, n: number): RecordData[] {
  return Array.from({ length: n }, (_, i) => ({
    key: i === 0 ? null : i === 1 ? Buffer.alloc(0) : Buffer.from(`k${i}`),
    value: i === 2 ? null : Buffer.from(`${prefix}-${i}`),
    headers:
      i === 3
        ? [
            { key: "h", value: Buffer.from("1") },
            { key: "h", value: null },
            { key: "a", value: Buffer.alloc(0) },
          ]
        : [],
    timestampMs: T0 + i,
  }));
}

/** A batch as a Kafka producer sends it (baseOffset 0, as producers leave it). */
async function kafkaBatch(
  recs: RecordData[],
  o: { pid?: bigint; epoch?: number; seq?: number; txn?: boolean; codec?: CompressionCodec } = {},
): Promise<Buffer> {
  const w = new KafkaWriter(256);
  const b = {
    baseOffset: 0n,
    producerId: o.pid ?? -1n,
    producerEpoch: o.epoch ?? -1,
    baseSequence: o.seq ?? -1,
    isTransactional: o.txn ?? false,
    records: recs,
  };
  const codec = o.codec ?? "none";
  encodeBatch(
    w,
    b,
    codec === "none" ? undefined : { codec, section: await compress(codec, recordsSection(b)) },
  );
  return Buffer.from(w.finish());
}

class Harness {
  readonly dir = tempPartitionDir();
  sm: PartitionStateMachine = partitionForTest("t", 0, this.dir);
  index = 0;
  constructor() {
    this.sm.appliedLog.openAt(0);
  }
  apply(e: PartitionEntry) {
    return this.sm.apply({ index: ++this.index, term: 1, data: encodeEntry(e) });
  }
  stored(batch: Uint8Array) {
    return this.apply(kafkaBatchEntry(HEADER, batch));
  }
}

function plain(r: RecordData) {
  const b = (x: Uint8Array | null) => (x === null ? null : Buffer.from(x).toString());
  return {
    key: b(r.key),
    value: b(r.value),
    headers: r.headers.map((h) => [h.key, b(h.value)]),
    timestampMs: r.timestampMs,
  };
}

describe("partition entry kind kafka-batch", () => {
  it("round-trips the batch bytes and reads producer fields, counts and timestamps from its header", async () => {
    const bytes = await kafkaBatch(records("a", 5), {
      pid: 77n,
      epoch: 3,
      seq: 10,
      txn: true,
      codec: "lz4",
    });
    const back = decodeEntry(encodeEntry(kafkaBatchEntry(HEADER, bytes)));
    expect(back).toMatchObject({
      kind: "kafka-batch",
      header: HEADER,
      producerId: 77n,
      producerEpoch: 3,
      baseSequence: 10,
      isTransactional: true,
      recordCount: 5,
      maxTimestampMs: T0 + 4,
      codec: "lz4",
    });
    expect(Buffer.from((back as { batch: Uint8Array }).batch).equals(bytes)).toBe(true);
  });

  it("refuses a stored batch whose header does not hold (CORRUPT_MESSAGE), deterministically at apply", async () => {
    const bytes = await kafkaBatch(records("a", 3));
    const badDelta = Buffer.from(bytes);
    badDelta.writeInt32BE(7, 23);
    expect(() => kafkaBatchEntry(HEADER, badDelta)).toThrow(/lastOffsetDelta/);
    const control = Buffer.from(bytes);
    control.writeInt16BE(0x20, 21);
    expect(() => kafkaBatchEntry(HEADER, control)).toThrow(/control/);
    expect(() => kafkaBatchEntry(HEADER, bytes.subarray(0, 40))).toThrow(/header alone/);
    // Bypassing the leader's checks: apply refuses it and takes no offset.
    const h = new Harness();
    const data = Buffer.from(encodeEntry(kafkaBatchEntry(HEADER, bytes)));
    data.writeInt32BE(7, data.length - bytes.length + 23);
    expect(h.sm.apply({ index: 1, term: 1, data }).error).toBe("CORRUPT_MESSAGE");
    expect(h.sm.highWatermark()).toBe(0n);
  });
});

describe("a partition with Kafka batches stored as sent", () => {
  it("assigns offsets at apply and answers duplicates from the header's sequence", async () => {
    const h = new Harness();
    const first = await kafkaBatch(records("a", 4), { pid: 9n, epoch: 0, seq: 0 });
    expect(h.stored(first)).toMatchObject({ error: "NONE", baseOffset: 0n, lastOffset: 3n });
    expect(
      h.stored(await kafkaBatch(records("b", 2), { pid: 9n, epoch: 0, seq: 4 })),
    ).toMatchObject({ error: "NONE", baseOffset: 4n, lastOffset: 5n });
    expect(h.stored(first)).toMatchObject({ error: "NONE", baseOffset: 0n, duplicate: true });
    expect(h.stored(await kafkaBatch(records("c", 1), { pid: 9n, epoch: 0, seq: 9 })).error).toBe(
      "OUT_OF_ORDER_SEQUENCE_NUMBER",
    );
    expect(h.sm.highWatermark()).toBe(6n);
    expect(h.sm.describeProducers()[0]).toMatchObject({ producerId: 9n, lastSequence: 5 });
  });

  it("a Kafka read gets the stored bytes whole; other reads get the records, inflated, null apart from empty", async () => {
    const h = new Harness();
    const sent = records("z", 6);
    const zstd = await kafkaBatch(sent, { codec: "zstd" });
    h.stored(await kafkaBatch(records("p", 2)));
    h.stored(zstd);
    const raw = await h.sm.read(0n, 1 << 20, "READ_UNCOMMITTED", true, { storedBatches: true });
    expect(
      raw.batches.map((b) => [
        b.baseOffset,
        b.records.length,
        b.asSent?.codec,
        b.asSent?.recordCount,
      ]),
    ).toEqual([
      [0n, 0, "none", 2],
      [2n, 0, "zstd", 6],
    ]);
    expect(Buffer.from(raw.batches[1]!.asSent!.batch).equals(zstd)).toBe(true);
    expect(raw.bytes).toBe(raw.batches.reduce((n, b) => n + b.asSent!.batch.byteLength, 0));
    const decoded = await h.sm.read(0n, 1 << 20, "READ_UNCOMMITTED", true);
    expect(decoded.batches[1]!.asSent).toBeUndefined();
    expect(decoded.batches[1]!.records.map(plain)).toEqual(sent.map(plain));
    expect(decoded.nextFetchOffset).toBe(8n);
    expect(await h.sm.offsetForTimestamp(T0 + 3)).toEqual({ offset: 5n, timestampMs: T0 + 3 }); // the second batch's fourth record
  });

  it("a batch straddling the fetch offset: the Kafka read sends it whole, the others trim it", async () => {
    const h = new Harness();
    h.stored(await kafkaBatch(records("s", 5), { pid: 4n, epoch: 0, seq: 0, codec: "gzip" }));
    h.apply({ kind: "delete-records", header: HEADER, offset: 3n });
    const raw = await h.sm.read(3n, 1 << 20, "READ_UNCOMMITTED", true, { storedBatches: true });
    expect(raw.batches.map((b) => b.baseOffset)).toEqual([0n]);
    expect(raw.nextFetchOffset).toBe(5n);
    const trimmed = await h.sm.read(3n, 1 << 20, "READ_UNCOMMITTED", true);
    expect(trimmed.batches[0]).toMatchObject({ baseOffset: 3n, baseSequence: 3 });
    expect(trimmed.batches[0]!.records.map((r) => Buffer.from(r.value!).toString())).toEqual([
      "s-3",
      "s-4",
    ]);
  });

  it("read_committed drops an aborted transaction's stored batches whole", async () => {
    const h = new Harness();
    h.stored(
      await kafkaBatch(records("aborted", 3), {
        pid: 5n,
        epoch: 0,
        seq: 0,
        txn: true,
        codec: "snappy",
      }),
    );
    h.apply({
      kind: "marker",
      header: HEADER,
      producerId: 5n,
      producerEpoch: 0,
      controlType: "ABORT",
      coordinatorEpoch: 0,
      epochBumped: false,
    });
    expect(
      h.stored(await kafkaBatch(records("kept", 2), { pid: 5n, epoch: 0, seq: 3, txn: true })),
    ).toMatchObject({ error: "NONE", baseOffset: 4n });
    expect(h.sm.lastStableOffset()).toBe(4n);
    h.apply({
      kind: "marker",
      header: HEADER,
      producerId: 5n,
      producerEpoch: 0,
      controlType: "COMMIT",
      coordinatorEpoch: 0,
      epochBumped: false,
    });
    const r = await h.sm.read(0n, 1 << 20, "READ_COMMITTED", true, { storedBatches: true });
    expect(r.batches.map((b) => [b.baseOffset, b.asSent?.recordCount])).toEqual([[4n, 2]]);
    expect(r.nextFetchOffset).toBe(7n);
    // Still a valid batch for a client: its CRC is untouched by the read.
    expect((await decodeBatches(Buffer.from(r.batches[0]!.asSent!.batch)))[0]!.records.length).toBe(
      2,
    );
  });

  it("survives a restart: the segments hold the batch as sent, a snapshot its producer state", async () => {
    const h = new Harness();
    const bytes = await kafkaBatch(records("r", 3), { pid: 8n, epoch: 0, seq: 0, codec: "lz4" });
    h.stored(bytes);
    const snapshot = h.sm.snapshot();
    await h.sm.close();
    const again = partitionForTest("t", 0, h.dir);
    again.restore(snapshot, h.index, {
      term: 1,
      confState: { voters: [0], learners: [], outgoingVoters: [] },
    });
    again.appliedLog.openAt(h.index);
    const raw = await again.read(0n, 1 << 20, "READ_UNCOMMITTED", true, { storedBatches: true });
    expect(Buffer.from(raw.batches[0]!.asSent!.batch).equals(bytes)).toBe(true);
    expect(again.describeProducers()[0]).toMatchObject({ producerId: 8n, lastSequence: 2 });
    await again.close();
  });
});
