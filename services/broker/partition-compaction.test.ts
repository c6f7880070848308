// Compaction of a partition replica's own segments (docs/storage.md, "Compaction"), through the
// state machine: Kafka batches (plain and compressed, an idempotent producer) applied, the
// replica cleaned, then read back as the Kafka listener and a gRPC Fetch read it (stored
// batches, offsets from their deltas) and decoded: each key's latest record at its offset, gaps
// where records went, tombstones still null. A follower that catches up from the cleaned
// segments applies the cleaned entries to the same state (offsets, producer state: a retried
// batch is still a duplicate). Transactions (KIP-98's cleaner rules): aborted records go and
// never supersede a committed value, committed ones are cleaned like any, a marker goes only
// delete.retention.ms after a clean found its transaction empty, nothing at or above the LSO (an
// open transaction) is touched, and read_committed, the LSO and the aborted index stay as they were.
import { describe, expect, it } from "vitest";
import { partitionForTest } from "./testing/partition-for-test.js";
import { encodeEntry, kafkaBatchEntry, type EntryHeader } from "./partition-entry.js";
import type { PartitionStateMachine, ReadBatch } from "./partition-state-machine.js";
import { partitionCompactionCodec } from "./compaction-codec.js";
import { buildBatch } from "../../libs/records/batch-builder.js";
import { readBatch } from "../../libs/records/batch-reader.js";
import { patchBatchOffsets } from "../../libs/records/batch-header.js";
import type { CompressionCodec } from "../../libs/records/compression.js";
import { CleanProgress } from "../../libs/storage/clean-progress.js";
import { LogCleaner } from "../../libs/storage/log-cleaner.js";
import { CODEC_NONE } from "../../libs/storage/log-record.js";
import { EntryType } from "../../libs/raft/types.js";

const T0 = 1_700_000_000_000;
const header = (atMs: number): EntryHeader => ({
  appendTimeMs: atMs,
  retentionMs: -1,
  retentionBytes: -1,
  producerExpiryMs: 24 * 3_600_000,
});
const PID = 7n;
const KEYS = 10;
const CODECS: CompressionCodec[] = ["none", "none", "gzip", "lz4", "none", "zstd"];

interface Written {
  key: string;
  value: string | null;
  timestampMs: number;
}

/** 240 batches of 1-3 records over KEYS keys from one idempotent producer; every 13th record a tombstone. */
async function fill(
  sm: PartitionStateMachine,
): Promise<{ model: Map<bigint, Written>; entries: Uint8Array[] }> {
  const model = new Map<bigint, Written>();
  const entries: Uint8Array[] = [];
  let seq = 0;
  let index = 0;
  for (let b = 0; b < 240; b++) {
    const base = sm.highWatermark();
    const n = 1 + (b % 3);
    const recs = Array.from({ length: n }, (_, i) => {
      const o = Number(base) + i;
      return {
        key: Buffer.from(`k${o % KEYS}`),
        value: o % 13 === 6 ? null : Buffer.from(`v${o}`),
        headers: [],
        timestampMs: T0 + o,
      };
    });
    const batch = await buildBatch({
      producerId: PID,
      producerEpoch: 0,
      baseSequence: seq,
      isTransactional: false,
      codec: CODECS[b % CODECS.length]!,
      records: recs,
    });
    seq += n;
    const data = encodeEntry(kafkaBatchEntry(header(T0 + b * 10), batch));
    entries.push(data);
    const res = sm.apply({
      index: ++index,
      term: 1 + Math.floor(b / 100),
      data,
      type: EntryType.Normal,
    });
    expect(res.error).toBe("NONE");
    recs.forEach((r, i) =>
      model.set(base + BigInt(i), {
        key: r.key.toString(),
        value: r.value?.toString() ?? null,
        timestampMs: r.timestampMs,
      }),
    );
  }
  return { model, entries };
}

/** Records as a Kafka client reads stored batches: offsets from the batch's base offset and deltas. */
async function readStored(sm: PartitionStateMachine, from = 0n): Promise<Map<bigint, Written>> {
  const out = new Map<bigint, Written>();
  let at = from;
  while (at < sm.highWatermark()) {
    const r = await sm.read(at, 1 << 20, "READ_UNCOMMITTED", true, { storedBatches: true });
    expect(r.error).toBe("NONE");
    for (const b of r.batches) {
      const copy = Buffer.from(b.asSent!.batch);
      patchBatchOffsets(copy, b.baseOffset, -1);
      const { records } = await readBatch(copy, (offset, timestampMs, key, value) => ({
        offset,
        rec: { key: key!.toString(), value: value === null ? null : value.toString(), timestampMs },
      }));
      for (const { offset, rec } of records) if (offset >= from) out.set(offset, rec);
    }
    if (r.nextFetchOffset === at) break;
    at = r.nextFetchOffset;
  }
  return out;
}

/** Records as a gRPC Fetch with decode_records gets them: batches of dense offsets. */
async function readDecoded(sm: PartitionStateMachine, from = 0n): Promise<Map<bigint, Written>> {
  return readWith(sm, "READ_UNCOMMITTED", from);
}

async function readWith(
  sm: PartitionStateMachine,
  isolation: "READ_UNCOMMITTED" | "READ_COMMITTED",
  from = 0n,
): Promise<Map<bigint, Written>> {
  const out = new Map<bigint, Written>();
  let at = from;
  const limit = isolation === "READ_COMMITTED" ? sm.lastStableOffset() : sm.highWatermark();
  while (at < limit) {
    const r = await sm.read(at, 1 << 20, isolation, true);
    r.batches.forEach((b: ReadBatch) =>
      b.records.forEach((rec, i) =>
        out.set(b.baseOffset + BigInt(i), {
          key: Buffer.from(rec.key!).toString(),
          value: rec.value === null ? null : Buffer.from(rec.value).toString(),
          timestampMs: rec.timestampMs,
        }),
      ),
    );
    if (r.nextFetchOffset === at) break;
    at = r.nextFetchOffset;
  }
  return out;
}

const cleaner = (): LogCleaner =>
  new LogCleaner({ mapBytes: 1024 * 1024, indexIntervalBytes: 4096 });
const SETTINGS = { minCompactionLagMs: 0, deleteRetentionMs: 24 * 3_600_000 };

describe("partition compaction", () => {
  it("keeps each key's latest record at its offset, with gaps, tombstones null, read stored and decoded", async () => {
    const sm = partitionForTest("c", 0, undefined, 2048);
    sm.appliedLog.openAt(0);
    const { model } = await fill(sm);
    const before = await readStored(sm);
    expect(before).toEqual(model);
    const progress = new CleanProgress();
    expect(sm.dirtyView(progress, 0).ratio).toBe(1);
    const out = await sm.clean(cleaner(), progress, SETTINGS);
    expect(out.kind).toBe("cleaned");
    if (out.kind !== "cleaned") return;
    expect(out.recordsRemoved).toBeGreaterThan(out.recordsKept);
    const end = out.endOffset;

    const after = await readStored(sm);
    expect(await readDecoded(sm)).toEqual(after);
    // Every record read is the one written at that offset (tombstones null, never empty).
    for (const [o, rec] of after) expect(rec).toEqual(model.get(o));
    expect([...after.values()].some((r) => r.value === null)).toBe(true);
    // Below the clean's end only each key's latest record there remains; from it on, everything.
    const latest = new Map<string, bigint>();
    for (const [o, rec] of model) if (o < end) latest.set(rec.key, o);
    for (const [o, rec] of after) if (o < end) expect(latest.get(rec.key)).toBe(o);
    for (const o of latest.values()) expect(after.has(o)).toBe(true);
    for (const [o, rec] of model) if (o >= end) expect(after.get(o)).toEqual(rec);
    expect(sm.highWatermark()).toBe(BigInt(model.size));
    expect(sm.logStartOffset()).toBe(0n);

    // A fetch at an offset that was removed starts at the next record kept.
    const gap = [...model.keys()].find((o) => o < end && !after.has(o))!;
    const fromGap = await readStored(sm, gap);
    expect([...fromGap.keys()][0]).toBe([...after.keys()].find((o) => o > gap));
    // ListOffsets by time: the first kept record at or after the time of a removed one.
    const byTime = await sm.offsetForTimestamp(model.get(gap)!.timestampMs);
    expect(byTime?.offset).toBe([...after.keys()].find((o) => o >= gap));
    await sm.close();
  });

  it("a follower catching up across the cleaned range applies its entries to the same state", async () => {
    const leader = partitionForTest("c", 0, undefined, 2048);
    leader.appliedLog.openAt(0);
    const { entries } = await fill(leader);
    const out = await leader.clean(cleaner(), new CleanProgress(), SETTINGS);
    expect(out.kind).toBe("cleaned");
    // What the Raft core streams to a follower below the snapshot: the segments' entries.
    const { records } = await leader.appliedRecords(1, 1_000_000, 1 << 30);
    expect(records.length).toBe(entries.length);
    expect(records.some((r, i) => !Buffer.from(r.data).equals(entries[i]!))).toBe(true);
    const follower = partitionForTest("c", 0, undefined, 2048);
    follower.appliedLog.openAt(0);
    for (const r of records) {
      const res = follower.apply({ index: r.index, term: r.term, data: r.data, type: r.entryType });
      expect(res.error).toBe("NONE");
    }
    expect(follower.highWatermark()).toBe(leader.highWatermark());
    expect(follower.describeProducers()).toEqual(leader.describeProducers());
    expect(await readStored(follower)).toEqual(await readStored(leader));
    // Idempotence survives: the producer's last batch sent again is a duplicate on both, at
    // its original offsets; the next sequence is taken.
    const last = entries[entries.length - 1]!;
    const replay = { index: entries.length + 1, term: 3, data: last, type: EntryType.Normal };
    const l = leader.apply(replay);
    const f = follower.apply(replay);
    expect(l).toMatchObject({ duplicate: true });
    expect(f).toEqual({ ...l, appendTimeMs: f.appendTimeMs });
    await leader.close();
    await follower.close();
  });

  it("tells the cleaner a transactional batch's fate and a marker's, and keeps other entries", async () => {
    const txn = await buildBatch({
      producerId: 9n,
      producerEpoch: 0,
      baseSequence: 0,
      isTransactional: true,
      codec: "none",
      records: [{ key: Buffer.from("k"), value: Buffer.from("v"), headers: [], timestampMs: T0 }],
    });
    const record = (data: Uint8Array, offsetCount = 1) => ({
      index: 1,
      term: 1,
      entryType: EntryType.Normal,
      baseOffset: offsetCount > 0 ? 0n : -1n,
      offsetCount,
      maxTimestampMs: T0,
      appendTimeMs: T0,
      codec: CODEC_NONE,
      data,
    });
    const codec = partitionCompactionCodec((pid, offset) => pid === 9n && offset === 0n);
    const content = (data: Uint8Array, n?: number) => codec.content(record(data, n));
    expect(await content(encodeEntry(kafkaBatchEntry(header(T0), txn, 0)))).toMatchObject({
      kind: "records",
      transaction: { producerId: 9n, aborted: true },
    });
    const marker = encodeEntry({
      kind: "marker",
      header: header(T0),
      producerId: 9n,
      producerEpoch: 0,
      controlType: "COMMIT",
      coordinatorEpoch: 0,
      epochBumped: false,
    });
    const m = await content(marker);
    expect(m).toMatchObject({ kind: "marker", producerId: 9n, removed: false });
    const removed = await (m as { remove(): Promise<Uint8Array> }).remove();
    expect(await content(removed)).toMatchObject({ kind: "marker", removed: true });
    expect(await content(encodeEntry({ kind: "tick", header: header(T0) }), 0)).toEqual({
      kind: "other",
    });
  });

  it("removes aborted records, keeps committed ones, removes markers delete.retention.ms after their transaction emptied, never touches the open transaction", async () => {
    const sm = partitionForTest("c", 0, undefined, 2048);
    sm.appliedLog.openAt(0);
    let index = 0;
    let clock = T0;
    const seqs = new Map<bigint, number>();
    const apply = (data: Uint8Array) => {
      const res = sm.apply({ index: ++index, term: 1, data, type: EntryType.Normal });
      expect(res.error, res.message).toBe("NONE");
      return res;
    };
    const send = async (pid: bigint, txn: boolean, kvs: Array<[string, string | null]>) => {
      const seq = seqs.get(pid) ?? 0;
      seqs.set(pid, seq + kvs.length);
      const batch = await buildBatch({
        producerId: pid,
        producerEpoch: 0,
        baseSequence: seq,
        isTransactional: txn,
        codec: "none",
        records: kvs.map(([k, v]) => ({
          key: Buffer.from(k),
          value: v === null ? null : Buffer.from(v),
          headers: [],
          timestampMs: clock,
        })),
      });
      clock += 10;
      return apply(encodeEntry(kafkaBatchEntry(header(clock), batch)));
    };
    const end = (pid: bigint, type: "COMMIT" | "ABORT") => {
      clock += 10;
      return apply(
        encodeEntry({
          kind: "marker",
          header: header(clock),
          producerId: pid,
          producerEpoch: 0,
          controlType: type,
          coordinatorEpoch: 0,
          epochBumped: false,
        }),
      );
    };
    const filler = async (n: number) => {
      for (let i = 0; i < n; i++) await send(7n, false, [[`f${i % 4}`, `filler-${clock}`]]);
    };
    // x: committed value, then an aborted write that must never supersede it.
    await send(7n, false, [["x", "x-committed"]]);
    await send(20n, true, [
      ["a", "a-t20"],
      ["b", "b-t20"],
    ]); // committed, superseded later
    await send(21n, true, [
      ["x", "x-aborted"],
      ["c", "c-aborted"],
    ]);
    const abortMarker = end(21n, "ABORT").baseOffset;
    const commitMarker = end(20n, "COMMIT").baseOffset;
    await send(22n, true, [["d", "d-t22"]]); // committed, stays the latest of d
    const keptMarker = end(22n, "COMMIT").baseOffset;
    await filler(20);
    await send(7n, false, [
      ["a", "a-later"],
      ["b", "b-later"],
    ]);
    await filler(40);
    // An open transaction: the LSO stays at its first offset.
    const open = (await send(23n, true, [["e", "e-open"]])).baseOffset;
    await filler(40);
    expect(sm.lastStableOffset()).toBe(open);
    const abortedBefore = sm.abortedTransactions();
    const committedBefore = await readWith(sm, "READ_COMMITTED");
    const markers = async () =>
      (
        await sm.read(0n, 1 << 24, "READ_UNCOMMITTED", true, {
          storedBatches: true,
          controlBatches: true,
        })
      ).batches
        .filter((b) => b.control !== undefined)
        .map((b) => b.baseOffset);
    expect(await markers()).toEqual([abortMarker, commitMarker, keptMarker]);

    const progress = new CleanProgress();
    const c = cleaner();
    const first = await sm.clean(c, progress, { minCompactionLagMs: 0, deleteRetentionMs: 1000 });
    expect(first).toMatchObject({ kind: "cleaned", abortedRemoved: 2, markersRemoved: 0 });
    expect((first as { endOffset: bigint }).endOffset).toBeLessThanOrEqual(open);
    const after = await readStored(sm);
    const values = [...after.values()].map((r) => `${r.key}=${r.value}`);
    expect(values).toContain("x=x-committed");
    expect(values).toContain("d=d-t22");
    expect(values).not.toContain("x=x-aborted");
    expect(values).not.toContain("c=c-aborted");
    expect(values).not.toContain("a=a-t20");
    expect(values).toContain("e=e-open");
    // read_committed sees what it saw, minus superseded records; LSO and aborted index unchanged.
    const committedAfter = await readWith(sm, "READ_COMMITTED");
    for (const [o, r] of committedAfter) expect(committedBefore.get(o)).toEqual(r);
    expect(committedAfter.get(open)).toBeUndefined();
    expect(sm.lastStableOffset()).toBe(open);
    expect(sm.abortedTransactions()).toEqual(abortedBefore);
    // Markers stay for now (delete.retention.ms from this clean).
    expect(await markers()).toEqual([abortMarker, commitMarker, keptMarker]);

    // Later: the emptied transactions' markers go; the one whose record is still there stays.
    clock += 2000;
    apply(encodeEntry({ kind: "tick", header: header(clock) }));
    const second = await sm.clean(c, progress, { minCompactionLagMs: 0, deleteRetentionMs: 1000 });
    expect(second).toMatchObject({ kind: "cleaned", markersRemoved: 2 });
    expect(await markers()).toEqual([keptMarker]);
    expect((await readStored(sm)).get(open)).toEqual(after.get(open));

    // A follower catching up from these segments reaches the same state.
    const { records } = await sm.appliedRecords(1, 1_000_000, 1 << 30);
    const follower = partitionForTest("c", 0, undefined, 2048);
    follower.appliedLog.openAt(0);
    for (const r of records)
      follower.apply({ index: r.index, term: r.term, data: r.data, type: r.entryType });
    expect(follower.highWatermark()).toBe(sm.highWatermark());
    expect(follower.lastStableOffset()).toBe(open);
    expect(follower.abortedTransactions()).toEqual(sm.abortedTransactions());
    expect(follower.describeProducers()).toEqual(sm.describeProducers());
    expect(await readWith(follower, "READ_COMMITTED")).toEqual(
      await readWith(sm, "READ_COMMITTED"),
    );
    await sm.close();
    await follower.close();
  });
});
