// Data an older build wrote stays readable after the upgrade to the one stored format
// (docs/storage.md, "Upgrade"): a partition entry of kind "batch" (proto records, decoded) in
// the segments applies and reads after a restart, and goes to a gRPC fetch as a v2 batch
// encoded per fetch (kafka_batch) or as records (decode_records), next to the kafka-batch
// entries written since. A gRPC fetch under read_uncommitted gets transaction markers as
// Kafka's control batches; read_committed skips them and the aborted batch whole.
import { describe, expect, it } from "vitest";
import { partitionForTest, tempPartitionDir } from "./testing/partition-for-test.js";
import {
  encodeEntry,
  kafkaBatchEntry,
  type EntryHeader,
  type PartitionEntry,
  type RecordData,
} from "./partition-entry.js";
import type { PartitionStateMachine, ReadOptions } from "./partition-state-machine.js";
import { WireBatch } from "./fetch-codec.js";
import { batchBytes, decodeBatches } from "../kafka/record-batch.js";

const HEADER: EntryHeader = {
  appendTimeMs: 1_800_000_000_000,
  retentionMs: -1,
  retentionBytes: -1,
  producerExpiryMs: 3_600_000,
};
const T0 = 1_700_000_000_000;
/** What a gRPC fetch reads with by default (fetch-handler.ts: kafka_batch, control batches). */
const AS_KAFKA_BATCH: ReadOptions = { storedBatches: true, controlBatches: true };

function records(prefix: string, n: number, timestampMs = T0): RecordData[] {
  return Array.from({ length: n }, (_, i) => ({
    key: Buffer.from(`${prefix}k${i}`),
    value: Buffer.from(`${prefix}-${i}`),
    headers: i === 1 ? [{ key: "h", value: Buffer.from("hv") }] : [],
    timestampMs: timestampMs === 0 ? 0 : timestampMs + i,
  }));
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
  /** Reopens the replica from its segments and a snapshot taken now (a restart). */
  async restart(): Promise<void> {
    const snapshot = this.sm.snapshot();
    await this.sm.close();
    this.sm = partitionForTest("t", 0, this.dir);
    this.sm.restore(snapshot, this.index, {
      term: 1,
      confState: { voters: [0], learners: [], outgoingVoters: [] },
    });
    this.sm.appliedLog.openAt(this.index);
  }
}

/** The v2 batches a gRPC fetch from `offset` sends (kafka_batch, patched as on the wire). */
async function fetchedAsKafkaBatch(
  sm: PartitionStateMachine,
  offset: bigint,
  isolation: "READ_UNCOMMITTED" | "READ_COMMITTED" = "READ_UNCOMMITTED",
): Promise<Buffer[]> {
  const read = await sm.read(offset, 1 << 20, isolation, true, AS_KAFKA_BATCH);
  return read.batches.map((b) => new WireBatch(b, true).kafkaBatch);
}

const text = (b: Uint8Array | null): string | null =>
  b === null ? null : Buffer.from(b).toString();

describe("an older build's batch entries after the upgrade", () => {
  it("apply, survive a restart, and go out as v2 batches or as records", async () => {
    const h = new Harness();
    // Written with the old encoder, as a build before the one stored format wrote them.
    expect(
      h.apply({
        kind: "batch",
        header: HEADER,
        producerId: 3n,
        producerEpoch: 0,
        baseSequence: 0,
        isTransactional: false,
        records: records("old", 3),
      }).baseOffset,
    ).toBe(0n);
    // Without timestamps: the append time, as an older build answered them.
    h.apply({
      kind: "batch",
      header: HEADER,
      producerId: -1n,
      producerEpoch: 0,
      baseSequence: 0,
      isTransactional: false,
      records: records("stamped", 1, 0),
    });
    const sent = batchBytes({
      producerId: 3n,
      producerEpoch: 0,
      baseSequence: 3,
      isTransactional: false,
      records: records("new", 2),
    });
    expect(h.apply(kafkaBatchEntry(HEADER, sent)).baseOffset).toBe(4n);
    await h.restart();

    const batches = await fetchedAsKafkaBatch(h.sm, 1n);
    expect(batches.map((b) => b.readBigInt64BE(0))).toEqual([1n, 3n, 4n]);
    const decoded = await decodeBatches(Buffer.concat(batches));
    // The old batch from the fetch offset on (as today's records answer), its sequence moved with it.
    expect(decoded[0]).toMatchObject({ producerId: 3n, producerEpoch: 0, baseSequence: 1 });
    expect(decoded[0]!.records.map((r) => text(r.value))).toEqual(["old-1", "old-2"]);
    expect(decoded[0]!.records[0]!.headers.map((x) => [x.key, text(x.value)])).toEqual([
      ["h", "hv"],
    ]);
    expect(decoded[1]!.records.map((r) => r.timestampMs)).toEqual([HEADER.appendTimeMs]);
    // The new batch as stored, its CRC unchanged.
    expect(batches[2]!.subarray(16).equals(sent.subarray(16))).toBe(true);

    const asRecords = await h.sm.read(0n, 1 << 20, "READ_UNCOMMITTED", true);
    expect(asRecords.batches.flatMap((b) => b.records.map((r) => text(r.value)))).toEqual([
      "old-0",
      "old-1",
      "old-2",
      "stamped-0",
      "new-0",
      "new-1",
    ]);
    await h.sm.close();
  });

  it("markers go as control batches under read_uncommitted; read_committed skips them and aborted batches whole", async () => {
    const h = new Harness();
    const txnBatch = (prefix: string, pid: bigint, seq: number): PartitionEntry =>
      kafkaBatchEntry(
        HEADER,
        batchBytes({
          producerId: pid,
          producerEpoch: 0,
          baseSequence: seq,
          isTransactional: true,
          records: records(prefix, 2),
        }),
      );
    const marker = (pid: bigint, commit: boolean): PartitionEntry => ({
      kind: "marker",
      header: HEADER,
      producerId: pid,
      producerEpoch: 0,
      controlType: commit ? "COMMIT" : "ABORT",
      coordinatorEpoch: 7,
      epochBumped: false,
    });
    h.apply(txnBatch("aborted", 5n, 0)); // 0-1
    expect(h.apply(marker(5n, false)).baseOffset).toBe(2n);
    h.apply(txnBatch("kept", 6n, 0)); // 3-4
    expect(h.apply(marker(6n, true)).baseOffset).toBe(5n);

    const uncommitted = await decodeBatches(Buffer.concat(await fetchedAsKafkaBatch(h.sm, 0n)));
    expect(uncommitted.map((b) => [b.isControl, b.isTransactional, b.producerId])).toEqual([
      [false, true, 5n],
      [true, true, 5n],
      [false, true, 6n],
      [true, true, 6n],
    ]);
    // Kafka's control record: key (version 0, type 0 abort / 1 commit), value (version 0, coordinator epoch).
    expect(Buffer.from(uncommitted[1]!.records[0]!.key!)).toEqual(Buffer.from([0, 0, 0, 0]));
    expect(Buffer.from(uncommitted[3]!.records[0]!.key!)).toEqual(Buffer.from([0, 0, 0, 1]));
    expect(Buffer.from(uncommitted[3]!.records[0]!.value!)).toEqual(
      Buffer.from([0, 0, 0, 0, 0, 7]),
    );

    const committed = await fetchedAsKafkaBatch(h.sm, 0n, "READ_COMMITTED");
    expect(committed.map((b) => b.readBigInt64BE(0))).toEqual([3n]);
    // The records form (decode_records) never has control batches.
    const asRecords = await h.sm.read(0n, 1 << 20, "READ_UNCOMMITTED", true);
    expect(asRecords.batches.map((b) => b.baseOffset)).toEqual([0n, 3n]);
    await h.sm.close();
  });
});
