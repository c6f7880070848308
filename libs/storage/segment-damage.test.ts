// A bit flipped inside a sealed segment, before its index's last entry, is trusted by open (it
// checks a sealed segment only from there): the scrub after open finds it, a read that hits it
// fails (never serves it) and reports it once, and the stats count it. A sealed segment cut short
// is reported as damage found at open. docs/storage.md, "Corruption and repair".
import {
  mkdtempSync,
  openSync,
  readdirSync,
  readSync,
  closeSync,
  rmSync,
  writeSync,
  truncateSync,
  statSync,
  readFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import type { Checkpoint } from "./checkpoint.js";
import { CODEC_NONE, type LogRecord } from "./log-record.js";
import { RecordCache } from "./record-cache.js";
import { SegmentedLog, type DamageReport, type SegmentedLogOptions } from "./segmented-log.js";
import { StorageStats } from "./storage-stats.js";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "tern-segdamage-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const INITIAL: Checkpoint = {
  index: 0,
  term: 0,
  nextOffset: 0n,
  voters: [1],
  learners: [],
  state: new Uint8Array(0),
};

function options(stats: StorageStats): SegmentedLogOptions {
  return {
    segmentBytes: 16 * 1024,
    segmentMs: -1,
    indexIntervalBytes: 1024, // open checks a sealed segment only from its last index entry on
    readAheadBytes: 32 * 1024,
    cache: new RecordCache(1024 * 1024),
    stats,
  };
}

function record(i: number, next: bigint): LogRecord {
  return {
    index: i,
    term: 1,
    entryType: 0,
    baseOffset: next,
    offsetCount: 1,
    maxTimestampMs: 1000 + i,
    appendTimeMs: 1000 + i,
    codec: CODEC_NONE,
    data: new Uint8Array(300).fill(i & 0xff),
  };
}

async function written(stats: StorageStats): Promise<string> {
  const log = SegmentedLog.open(dir, options(stats), INITIAL);
  for (let i = 1; i <= 200; i++) {
    const r = record(i, log.nextOffset());
    if (log.shouldRoll(r.data.byteLength + 56, r.appendTimeMs))
      log.roll({
        index: log.lastIndex(),
        term: 1,
        nextOffset: log.nextOffset(),
        voters: [1],
        learners: [],
        state: new Uint8Array(0),
      });
    log.append(r);
  }
  await log.sync();
  expect(log.segmentCount()).toBeGreaterThan(2);
  await log.close();
  return join(
    dir,
    readdirSync(dir)
      .filter((n) => n.endsWith(".log"))
      .sort()[0]!,
  );
}

function flipByte(path: string, at: number): void {
  const fd = openSync(path, "r+");
  const b = Buffer.alloc(1);
  readSync(fd, b, 0, 1, at);
  b[0] = b[0]! ^ 0x10;
  writeSync(fd, b, 0, 1, at);
  closeSync(fd);
}

it("finds a bit flipped in the middle of a sealed segment: scrub reports it, reads refuse it", async () => {
  const stats = new StorageStats();
  const sealed = await written(stats);
  // The 10th record's payload (356 bytes a record): before the index's last entry, where open does not look.
  flipByte(sealed, 9 * 356 + 100);
  const log = SegmentedLog.open(dir, options(stats), INITIAL);
  expect(log.report.repairs).toEqual([]); // open trusted it
  const heard: DamageReport[] = [];
  log.onDamage((d) => heard.push(d));
  const found = await log.scrub();
  expect(found).toHaveLength(1);
  expect(found[0]).toMatchObject({
    file: sealed,
    firstIndex: 1,
    position: 9 * 356,
    foundBy: "scrub",
  });
  expect(heard).toHaveLength(1);
  expect(stats.segmentsDamaged).toBe(1);
  // Offset 9 is the damaged record's: never served.
  await expect(log.readByOffset(9n, 1024)).rejects.toMatchObject({ name: "TernError" });
  await expect(log.readByIndex(10, 1024)).rejects.toThrow(/checksum/);
  expect(heard).toHaveLength(1); // reported once
  // Records before it and the other segments still read.
  expect((await log.readByOffset(0n, 1))[0]!.index).toBe(1);
  expect((await log.readByOffset(150n, 1))[0]!.index).toBe(151);
  await log.close();
});

it("reports a sealed segment cut short as damage found at open", async () => {
  const stats = new StorageStats();
  const sealed = await written(stats);
  truncateSync(sealed, statSync(sealed).size - 500);
  const log = SegmentedLog.open(dir, options(stats), INITIAL);
  const found = await log.scrub();
  expect(found).toHaveLength(1);
  expect(found[0]).toMatchObject({ file: sealed, foundBy: "open" });
  expect(stats.segmentsDamaged).toBe(1);
  await log.close();
});

/** A second replica's log of the same records (what a repair reads from). */
async function soundCopy(stats: StorageStats): Promise<{ log: SegmentedLog; dir: string }> {
  const other = mkdtempSync(join(tmpdir(), "tern-segdamage-sound-"));
  const log = SegmentedLog.open(other, options(stats), INITIAL);
  for (let i = 1; i <= 200; i++) log.append(record(i, log.nextOffset())); // one segment: boundaries differ
  await log.flushed();
  return { log, dir: other };
}

it("replaces a damaged sealed segment with a sound replica's records: every record reads again", async () => {
  const stats = new StorageStats();
  const sealed = await written(stats);
  const before = readFileSync(sealed);
  flipByte(sealed, 9 * 356 + 100);
  const log = SegmentedLog.open(dir, options(stats), INITIAL);
  const [damage] = await log.scrub();
  expect(damage).toBeDefined();
  await expect(log.readByIndex(10, 1024)).rejects.toThrow(/checksum/);
  const sound = await soundCopy(new StorageStats());
  try {
    const r = log.beginReplacement(damage!.firstIndex)!;
    expect(r.needsIndex).toBe(damage!.firstIndex);
    // In two chunks, as a repair reads them.
    await r.append(await sound.log.readByIndex(r.needsIndex, 2000, damage!.lastIndex + 1));
    expect(r.complete()).toBe(false);
    await r.append(await sound.log.readByIndex(r.needsIndex, 1 << 20, damage!.lastIndex + 1));
    expect(r.complete()).toBe(true);
    expect(await r.finish()).toBe(true);
    expect(stats.segmentsRepaired).toBe(1);
    expect(log.damage()).toEqual([]);
    expect(readdirSync(dir).filter((n) => n.endsWith(".tmp"))).toEqual([]);
    // Byte for byte what was written before the flip; every record reads, by index and offset.
    expect(readFileSync(sealed).equals(before)).toBe(true);
    const all = await log.readByIndex(1, 1 << 20);
    expect(all.map((x) => x.index)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
    expect(Buffer.from((await log.readByOffset(9n, 1))[0]!.data)).toEqual(Buffer.alloc(300, 10));
    expect(await log.scrub()).toEqual([]);
    await log.close();
    // And after a restart (the rebuilt index on disk).
    const reopened = SegmentedLog.open(dir, options(stats), INITIAL);
    expect(reopened.report.repairs).toEqual([]);
    expect(await reopened.scrub()).toEqual([]);
    expect((await reopened.readByIndex(1, 1 << 20)).length).toBe(200);
    await reopened.close();
  } finally {
    await sound.log.close();
    rmSync(sound.dir, { recursive: true, force: true });
  }
});

it("refuses replacement records that do not fit the segment, and leaves it as it was", async () => {
  const stats = new StorageStats();
  const sealed = await written(stats);
  flipByte(sealed, 9 * 356 + 100);
  const log = SegmentedLog.open(dir, options(stats), INITIAL);
  const [damage] = await log.scrub();
  const sound = await soundCopy(new StorageStats());
  try {
    const good = await sound.log.readByIndex(1, 1 << 20, damage!.lastIndex + 1);
    const r = log.beginReplacement(damage!.firstIndex)!;
    // Another term than this replica's index says.
    await expect(r.append([{ ...good[0]!, term: 2 }])).rejects.toThrow(/term 2/);
    // A gap.
    await expect(r.append([good[1]!])).rejects.toThrow(/index 1 belongs here/);
    // Other offsets.
    await expect(r.append([{ ...good[0]!, baseOffset: 5n }])).rejects.toThrow(/base offset 5/);
    expect(r.needsIndex).toBe(1);
    // Finishing short of the segment's last record is refused.
    await r.append(good.slice(0, 3));
    await expect(r.finish()).rejects.toThrow(/records up to 3/);
    await r.abort();
    expect(readdirSync(dir).filter((n) => n.endsWith(".tmp"))).toEqual([]);
    expect(stats.segmentsRepaired).toBe(0);
    expect(log.damage()).toHaveLength(1);
    await expect(log.readByIndex(10, 1024)).rejects.toThrow(/checksum/);
    // The active segment is never replaced.
    const infos = [...log.segmentInfos()];
    expect(log.beginReplacement(infos[infos.length - 1]!.baseIndex)).toBeUndefined();
  } finally {
    await log.close();
    await sound.log.close();
    rmSync(sound.dir, { recursive: true, force: true });
  }
});

it("does not swap in a replacement of a segment that retention removed meanwhile", async () => {
  const stats = new StorageStats();
  const sealed = await written(stats);
  flipByte(sealed, 9 * 356 + 100);
  const log = SegmentedLog.open(dir, options(stats), INITIAL);
  const [damage] = await log.scrub();
  const sound = await soundCopy(new StorageStats());
  try {
    const r = log.beginReplacement(damage!.firstIndex)!;
    await r.append(await sound.log.readByIndex(1, 1 << 20, damage!.lastIndex + 1));
    log.removeOldest(1);
    expect(await r.finish()).toBe(false);
    expect(readdirSync(dir).some((n) => n.startsWith(basename(sealed).slice(0, 20)))).toBe(false);
    expect(stats.segmentsRepaired).toBe(0);
  } finally {
    await log.close();
    await sound.log.close();
    rmSync(sound.dir, { recursive: true, force: true });
  }
});
