// Compaction of a partition replica's own segments (docs/storage.md, "Compaction"), through the
// state machine: Kafka batches (plain and compressed, an idempotent producer) applied, the
// replica cleaned, then read back as the Kafka listener and a gRPC Fetch read it (stored
// batches, offsets from their deltas) and decoded: each key's latest record at its offset, gaps
// where records went, tombstones still null. A follower that catches up from the cleaned
// segments applies the cleaned entries to the same state (offsets, producer state: a retried
// batch is still a duplicate), and the codec refuses to clean transactional entries.
import { describe, expect, it } from "vitest";
import { partitionForTest } from "./testing/partition-for-test.js";
import { encodeEntry, kafkaBatchEntry, type EntryHeader } from "./partition-entry.js";
import type { PartitionStateMachine, ReadBatch } from "./partition-state-machine.js";
import { PARTITION_COMPACTION_CODEC } from "./compaction-codec.js";
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
  const out = new Map<bigint, Written>();
  let at = from;
  while (at < sm.highWatermark()) {
    const r = await sm.read(at, 1 << 20, "READ_UNCOMMITTED", true);
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

  it("classifies transactional batches and markers as not cleanable, and other entries as kept", async () => {
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
    const content = (data: Uint8Array, n?: number) =>
      PARTITION_COMPACTION_CODEC.content(record(data, n));
    expect(await content(encodeEntry(kafkaBatchEntry(header(T0), txn, 0)))).toEqual({
      kind: "transactional",
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
    expect(await content(marker)).toEqual({ kind: "transactional" });
    expect(await content(encodeEntry({ kind: "tick", header: header(T0) }), 0)).toEqual({
      kind: "other",
    });
  });
});
