// DeleteRecords on a partition's state machine: the log start moves at apply (checked against
// the high watermark), reads and timestamp lookups never go below it even inside a kept
// segment, segments wholly below it are removed by retention, and the move survives a
// snapshot, a restart that applies the entry again, and a replica installing the snapshot.
import { describe, expect, it } from "vitest";
import { partitionForTest, tempPartitionDir } from "./testing/partition-for-test.js";
import type { PartitionStateMachine } from "./partition-state-machine.js";
import {
  decodeEntry,
  encodeEntry,
  type EntryHeader,
  type PartitionEntry,
} from "./partition-entry.js";
import { decodeSnapshot, encodeSnapshot } from "./partition-snapshot.js";
import type { AppliedEntry } from "../../libs/raft-host/state-machine.js";

const HEADER: EntryHeader = {
  appendTimeMs: 1_000_000,
  retentionMs: -1,
  retentionBytes: -1,
  producerExpiryMs: 3_600_000,
};
const AT = { term: 1, confState: { voters: [0], learners: [], outgoingVoters: [] } };

class Harness {
  readonly dir = tempPartitionDir();
  sm: PartitionStateMachine;
  index = 0;
  readonly entries: AppliedEntry[] = [];

  constructor() {
    this.sm = partitionForTest("t", 0, this.dir);
    this.sm.appliedLog.openAt(0);
  }

  apply(e: PartitionEntry): ReturnType<PartitionStateMachine["apply"]> {
    this.index++;
    const entry = { index: this.index, term: 1, data: encodeEntry(e) };
    this.entries.push(entry);
    return this.sm.apply(entry);
  }

  /** One batch of values, timestamps 100, 200, ... by offset. */
  batch(values: string[]): ReturnType<PartitionStateMachine["apply"]> {
    const base = Number(this.sm.highWatermark());
    return this.apply({
      kind: "batch",
      header: HEADER,
      producerId: -1n,
      producerEpoch: 0,
      baseSequence: -1,
      isTransactional: false,
      records: values.map((v, i) => ({
        key: null,
        value: Buffer.from(v),
        headers: [],
        timestampMs: 100 * (base + i + 1),
      })),
    });
  }

  deleteRecords(offset: bigint): ReturnType<PartitionStateMachine["apply"]> {
    return this.apply({ kind: "delete-records", header: HEADER, offset });
  }

  async valuesFrom(offset: bigint): Promise<string[]> {
    const r = await this.sm.read(offset, 1 << 20, "READ_UNCOMMITTED", true);
    expect(r.error).toBe("NONE");
    return r.batches.flatMap((b) => b.records.map((x) => Buffer.from(x.value!).toString()));
  }

  /** The process restarts on the same files from `snapshot` at `index`, then re-applies what followed. */
  async restart(snapshot: Uint8Array, index: number): Promise<void> {
    await this.sm.close();
    this.sm = partitionForTest("t", 0, this.dir);
    this.sm.restore(snapshot, index, AT);
    this.sm.appliedLog.openAt(index);
    for (const e of this.entries.slice(index)) this.sm.apply(e);
  }
}

describe("DeleteRecords entry", () => {
  it("round-trips through the entry codec, -1 included", () => {
    for (const offset of [0n, 7n, -1n, 1n << 40n]) {
      const e: PartitionEntry = { kind: "delete-records", header: HEADER, offset };
      expect(decodeEntry(encodeEntry(e))).toEqual(e);
    }
  });
});

describe("snapshot codec", () => {
  it("carries deletedBefore (version 4) and still reads version 3, which had none", () => {
    const snap = {
      clockMs: 5,
      lastExpiryCheckMs: 1,
      logStartOffset: 40n,
      logEndOffset: 90n,
      producers: [],
      aborted: [],
      deletedBefore: 70n,
    };
    expect(decodeSnapshot(encodeSnapshot(snap))).toEqual(snap);
    const v3 = Buffer.from(encodeSnapshot(snap)).subarray(0, -8);
    v3[0] = 3;
    expect(decodeSnapshot(v3)).toEqual({ ...snap, deletedBefore: 0n });
  });
});

describe("DeleteRecords on the state machine", () => {
  it("moves the log start inside a kept segment: reads below fail, a read at it starts there", async () => {
    const h = new Harness();
    h.batch(["r0", "r1", "r2", "r3", "r4"]);
    h.batch(["r5", "r6"]);
    const segments = h.sm.segmentCount();
    expect(h.deleteRecords(3n)).toMatchObject({ error: "NONE", logStartOffset: 3n });
    expect(h.sm.logStartOffset()).toBe(3n);
    expect(h.sm.segmentCount()).toBe(segments); // the records still sit in the (kept) segment
    const below = await h.sm.read(2n, 1 << 20, "READ_UNCOMMITTED", true);
    expect(below).toMatchObject({ error: "OFFSET_OUT_OF_RANGE", logStartOffset: 3n });
    expect((await h.sm.read(0n, 1 << 20, "READ_COMMITTED", true)).error).toBe(
      "OFFSET_OUT_OF_RANGE",
    );
    expect(await h.valuesFrom(3n)).toEqual(["r3", "r4", "r5", "r6"]);
    // ListOffsets by timestamp never answers an offset below the log start.
    expect(await h.sm.offsetForTimestamp(0)).toEqual({ offset: 3n, timestampMs: 400 });
    expect(await h.sm.offsetForTimestamp(600)).toEqual({ offset: 5n, timestampMs: 600 });
  });

  it("refuses an offset past the high watermark, keeps a lower one as a no-op, and -1 means the high watermark", async () => {
    const h = new Harness();
    h.batch(["a", "b", "c", "d"]);
    expect(h.deleteRecords(5n)).toMatchObject({ error: "OFFSET_OUT_OF_RANGE" });
    expect(h.sm.logStartOffset()).toBe(0n);
    expect(h.deleteRecords(4n)).toMatchObject({ error: "NONE", logStartOffset: 4n }); // == high watermark: allowed
    expect(h.deleteRecords(2n)).toMatchObject({ error: "NONE", logStartOffset: 4n });
    expect(h.sm.logStartOffset()).toBe(4n);
    h.batch(["e", "f"]);
    expect(h.deleteRecords(-1n)).toMatchObject({ error: "NONE", logStartOffset: 6n });
    expect(await h.valuesFrom(6n)).toEqual([]);
    h.batch(["g"]);
    expect(await h.valuesFrom(6n)).toEqual(["g"]);
    expect(h.sm.highWatermark()).toBe(7n);
  });

  it("lets retention remove the segments wholly below the log start (never the active one)", async () => {
    const h = new Harness();
    h.sm.setSegmentConfig(1, -1); // one entry per segment
    for (let i = 0; i < 5; i++) h.batch([`v${i}`]);
    const firstIndex = h.sm.appliedLog.firstIndex();
    expect(h.sm.segmentCount()).toBe(5);
    expect(h.deleteRecords(3n)).toMatchObject({ error: "NONE", logStartOffset: 3n });
    // The segments of offsets 0, 1 and 2 went; the one holding offset 3 stays.
    expect(h.sm.segmentCount()).toBe(3);
    expect(h.sm.appliedLog.firstIndex()).toBe(firstIndex + 3);
    expect(await h.valuesFrom(3n)).toEqual(["v3", "v4"]);
    expect(h.sm.logStartOffset()).toBe(3n);
  });

  it("trims the aborted-transaction index below the new log start", () => {
    const h = new Harness();
    h.apply({
      kind: "batch",
      header: HEADER,
      producerId: 5n,
      producerEpoch: 0,
      baseSequence: 0,
      isTransactional: true,
      records: [{ key: null, value: Buffer.from("x"), headers: [], timestampMs: 0 }],
    });
    h.apply({
      kind: "marker",
      header: HEADER,
      producerId: 5n,
      producerEpoch: 0,
      controlType: "ABORT",
      coordinatorEpoch: 0,
      epochBumped: false,
    });
    expect(h.sm.abortedTransactions().length).toBe(1);
    h.deleteRecords(2n);
    expect(h.sm.abortedTransactions().length).toBe(0);
  });

  it("keeps the LSO at or above the new log start while a transaction that began below it is open", async () => {
    const h = new Harness();
    h.batch(["a", "b"]);
    h.apply({
      kind: "batch",
      header: HEADER,
      producerId: 5n,
      producerEpoch: 0,
      baseSequence: 0,
      isTransactional: true,
      records: [{ key: null, value: Buffer.from("t"), headers: [], timestampMs: 0 }],
    });
    h.batch(["c", "d"]);
    expect(h.sm.lastStableOffset()).toBe(2n);
    h.deleteRecords(3n);
    expect(h.sm.lastStableOffset()).toBe(3n);
    // Nothing past it is committed-readable until the transaction ends.
    expect((await h.sm.read(3n, 1 << 20, "READ_COMMITTED", true)).batches).toEqual([]);
    h.apply({
      kind: "marker",
      header: HEADER,
      producerId: 5n,
      producerEpoch: 0,
      controlType: "COMMIT",
      coordinatorEpoch: 0,
      epochBumped: false,
    });
    expect(h.sm.lastStableOffset()).toBe(6n);
    const r = await h.sm.read(3n, 1 << 20, "READ_COMMITTED", true);
    expect(
      r.batches.flatMap((b) => b.records.map((x) => Buffer.from(x.value!).toString())),
    ).toEqual(["c", "d"]);
  });

  it("survives a snapshot and a restart, also when the entry is applied again after the snapshot", async () => {
    const h = new Harness();
    h.batch(["a", "b", "c", "d", "e"]);
    const early = h.sm.snapshot();
    const earlyAt = h.index;
    h.deleteRecords(2n);
    const later = h.sm.snapshot();
    const laterAt = h.index;
    // From the snapshot taken after the move.
    await h.restart(later, laterAt);
    expect(h.sm.logStartOffset()).toBe(2n);
    expect((await h.sm.read(1n, 1 << 20, "READ_UNCOMMITTED", true)).error).toBe(
      "OFFSET_OUT_OF_RANGE",
    );
    expect(await h.valuesFrom(2n)).toEqual(["c", "d", "e"]);
    // From the one before it: the entry is applied again and moves the log start the same way.
    await h.restart(early, earlyAt);
    expect(h.sm.logStartOffset()).toBe(2n);
    expect(await h.valuesFrom(2n)).toEqual(["c", "d", "e"]);
  });

  it("reaches a replica that installs the leader's snapshot", async () => {
    const h = new Harness();
    h.batch(["a", "b", "c"]);
    h.deleteRecords(2n);
    h.batch(["d"]);
    const fresh = partitionForTest("t", 0);
    fresh.appliedLog.openAt(0);
    fresh.restore(h.sm.snapshot(), h.index, AT);
    expect(fresh.logStartOffset()).toBe(4n); // its log starts after the snapshot
    // A follower that holds the entries already keeps them, and the log start with them.
    const follower = new Harness();
    for (const e of h.entries) follower.sm.apply(e);
    follower.sm.restore(h.sm.snapshot(), h.index, AT);
    expect(follower.sm.logStartOffset()).toBe(2n);
    expect(await follower.valuesFrom(2n)).toEqual(["c", "d"]);
    await fresh.close();
  });
});
