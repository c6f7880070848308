// The segmented log against real files in a temporary directory: appends survive reopening,
// a torn or corrupt tail is cut on open, a missing or garbled index is rebuilt, reads by Raft
// index, offset and timestamp agree with what was appended, retention and truncation move the
// ends, and the cache never holds more than its budget.
import {
  appendFileSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
  readFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Checkpoint } from "./checkpoint.js";
import { CODEC_NONE, type LogRecord } from "./log-record.js";
import { RecordCache } from "./record-cache.js";
import { SegmentedLog, type SegmentedLogOptions } from "./segmented-log.js";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "tern-seglog-"));
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

function options(over: Partial<SegmentedLogOptions> = {}): SegmentedLogOptions {
  return {
    segmentBytes: 64 * 1024,
    segmentMs: -1,
    indexIntervalBytes: 4096,
    readAheadBytes: 32 * 1024,
    cache: new RecordCache(1024 * 1024),
    ...over,
  };
}

/** Entry i: term 1 + floor(i / 50); every 7th takes no offset; others take i % 5 + 1 offsets. */
function record(i: number, next: bigint): LogRecord {
  const takes = i % 7 === 0 ? 0 : (i % 5) + 1;
  const data = new Uint8Array(200 + (i % 13) * 37).fill(i & 0xff);
  return {
    index: i,
    term: 1 + Math.floor(i / 50),
    entryType: 0,
    baseOffset: takes > 0 ? next : -1n,
    offsetCount: takes,
    maxTimestampMs: takes > 0 ? 1000 + i * 10 : -1,
    appendTimeMs: 1000 + i * 10,
    codec: CODEC_NONE,
    data,
  };
}

function fill(log: SegmentedLog, from: number, to: number): void {
  for (let i = from; i <= to; i++) {
    const r = record(i, log.nextOffset());
    if (log.shouldRoll(r.data.byteLength + 56, r.appendTimeMs))
      log.roll({
        index: log.lastIndex(),
        term: log.lastTerm(),
        nextOffset: log.nextOffset(),
        voters: [1],
        learners: [],
        state: new Uint8Array([i & 0xff]),
      });
    log.append(r);
  }
}

async function allByIndex(log: SegmentedLog): Promise<LogRecord[]> {
  const out: LogRecord[] = [];
  let next = log.firstIndex();
  while (next <= log.lastIndex()) {
    const got = await log.readByIndex(next, 16 * 1024);
    expect(got.length).toBeGreaterThan(0);
    out.push(...got);
    next = got[got.length - 1]!.index + 1;
  }
  return out;
}

describe("SegmentedLog", () => {
  it("reads back every entry by index after reopening, across many segments", async () => {
    const log = SegmentedLog.open(dir, options(), INITIAL);
    fill(log, 1, 600);
    await log.flushed();
    expect(log.segmentCount()).toBeGreaterThan(3);
    const next = log.nextOffset();
    await log.close();
    const again = SegmentedLog.open(dir, options(), INITIAL);
    expect(again.report.repairs).toEqual([]);
    expect(again.report.indexesRebuilt).toBe(0);
    expect(again.lastIndex()).toBe(600);
    expect(again.nextOffset()).toBe(next);
    const all = await allByIndex(again);
    expect(all.map((r) => r.index)).toEqual(Array.from({ length: 600 }, (_, i) => i + 1));
    for (const r of all) expect(r.data[0]).toBe(r.index & 0xff);
    for (const i of [1, 49, 50, 51, 299, 600]) expect(again.term(i)).toBe(1 + Math.floor(i / 50));
    await again.close();
  });

  it("finds the record holding an offset, from the files and from the tail cache", async () => {
    const log = SegmentedLog.open(dir, options({ cache: new RecordCache(8 * 1024) }), INITIAL);
    fill(log, 1, 400);
    await log.flushed();
    const expected = new Map<bigint, number>();
    for (const r of await allByIndex(log))
      for (let k = 0; k < r.offsetCount; k++) expected.set(r.baseOffset + BigInt(k), r.index);
    for (const offset of [0n, 1n, 2n, 37n, 500n, log.nextOffset() - 1n]) {
      const got = await log.readByOffset(offset, 1);
      expect(got[0]!.index).toBe(expected.get(offset));
    }
    expect(await log.readByOffset(log.nextOffset(), 1000)).toEqual([]);
    await log.close();
  });

  it("cuts a torn tail and a corrupt record on open, and keeps everything before", async () => {
    const log = SegmentedLog.open(dir, options({ segmentBytes: 1 << 30 }), INITIAL);
    fill(log, 1, 100);
    await log.flushed();
    await log.close();
    const file = join(
      dir,
      readdirSync(dir).find((f) => f.endsWith(".log"))!,
    );
    const size = statSync(file).size;
    truncateSync(file, size - 17); // a partial last write
    let again = SegmentedLog.open(dir, options({ segmentBytes: 1 << 30 }), INITIAL);
    expect(again.lastIndex()).toBe(99);
    expect(again.report.repairs[0]!.problem).toBe("short");
    await again.close();
    // Flip a byte in the payload of the last record (after the index's last entry: open checks it).
    const bytes = readFileSync(file);
    bytes[bytes.byteLength - 10] ^= 0xff;
    writeFileSync(file, bytes);
    again = SegmentedLog.open(dir, options({ segmentBytes: 1 << 30 }), INITIAL);
    expect(again.lastIndex()).toBe(98);
    expect(again.report.repairs[0]!.problem).toBe("checksum");
    const read = await allByIndex(again);
    expect(read.length).toBe(again.lastIndex());
    await again.close();
  });

  it("opens an active segment whose log a crash left uncreated (checkpoint written, log not) as empty, and appends to it", async () => {
    // Seen in a readiness test: a broker SIGKILLed while creating a replica's first segment
    // kept its checkpoint without a log, and the replica never opened again (ENOENT each pass).
    const log = SegmentedLog.open(dir, options(), INITIAL);
    fill(log, 1, 300);
    await log.flushed();
    const active = log.report.segments;
    await log.close();
    const logs = readdirSync(dir)
      .filter((f) => f.endsWith(".log"))
      .sort();
    expect(logs.length).toBeGreaterThanOrEqual(active);
    const last = join(dir, logs[logs.length - 1]!);
    rmSync(last);
    rmSync(last.replace(/\.log$/, ".index"), { force: true });
    const again = SegmentedLog.open(dir, options(), INITIAL);
    const lastIndex = again.lastIndex();
    expect(lastIndex).toBeLessThan(300);
    fill(again, lastIndex + 1, lastIndex + 5);
    expect(again.lastIndex()).toBe(lastIndex + 5);
    expect((await allByIndex(again)).map((r) => r.index)).toEqual(
      Array.from({ length: lastIndex + 5 }, (_, i) => i + 1),
    );
    await again.close();
    // A sealed segment without its log stays an error.
    expect(logs.length).toBeGreaterThan(1);
    rmSync(join(dir, logs[0]!));
    expect(() => SegmentedLog.open(dir, options(), INITIAL)).toThrow(/ENOENT/);
  });

  it("creates a new log's first checkpoint unsynced: torn before the first sync, it opens as a new log; after, it is kept", async () => {
    const first = join(dir, `${"1".padStart(20, "0")}.checkpoint`);
    const log = SegmentedLog.open(dir, options(), INITIAL);
    fill(log, 1, 3);
    await log.flushed();
    await log.close();
    // What a machine crash may leave of a file never fsynced: nothing, or an empty file.
    truncateSync(first, 0);
    const reopened = SegmentedLog.open(dir, options(), INITIAL);
    expect(reopened.lastIndex()).toBe(0);
    expect(reopened.firstIndex()).toBe(1);
    fill(reopened, 1, 3);
    await reopened.sync();
    await reopened.close();
    const intact = readFileSync(first);
    expect(intact.byteLength).toBeGreaterThan(0);
    const again = SegmentedLog.open(dir, options(), INITIAL);
    expect(again.lastIndex()).toBe(3);
    await again.close();
    // A sealed first segment's checkpoint is never dropped that way: a torn one stays an error.
    const many = SegmentedLog.open(join(dir, "many"), options(), INITIAL);
    fill(many, 1, 600);
    await many.sync();
    await many.close();
    expect(
      readdirSync(join(dir, "many")).filter((f) => f.endsWith(".checkpoint")).length,
    ).toBeGreaterThan(1);
    truncateSync(join(dir, "many", `${"1".padStart(20, "0")}.checkpoint`), 0);
    expect(() => SegmentedLog.open(join(dir, "many"), options(), INITIAL)).toThrow();
  });

  it("prepares a new log's files off the event loop; open() then opens them like a created log", async () => {
    const sub = join(dir, "prepared");
    expect(await SegmentedLog.prepare(sub, INITIAL)).toBe(true);
    expect(await SegmentedLog.prepare(sub, INITIAL)).toBe(false); // there already: left alone
    expect(readdirSync(sub).sort()).toEqual([
      `${"1".padStart(20, "0")}.checkpoint`,
      `${"1".padStart(20, "0")}.log`,
    ]);
    const log = SegmentedLog.open(sub, options(), INITIAL);
    expect([log.firstIndex(), log.lastIndex(), log.report.indexesRebuilt]).toEqual([1, 0, 0]);
    fill(log, 1, 700);
    await log.sync();
    await log.close();
    const again = SegmentedLog.open(sub, options(), INITIAL);
    expect(again.lastIndex()).toBe(700);
    expect((await allByIndex(again)).length).toBe(700);
    await again.close();
  });

  it("does not roll a new log's first segment on time for entries before the replicated clock started", async () => {
    const log = SegmentedLog.open(dir, options({ segmentMs: 60_000 }), INITIAL);
    // A new group's first entries (its conf change, the leader's empty entry) carry clock 0.
    log.append({ ...record(1, log.nextOffset()), appendTimeMs: 0 });
    log.append({ ...record(2, log.nextOffset()), appendTimeMs: 0 });
    const now = 1_765_000_000_000;
    expect(log.shouldRoll(100, now)).toBe(false);
    log.append({ ...record(3, log.nextOffset()), appendTimeMs: now });
    expect(log.shouldRoll(100, now + 59_999)).toBe(false);
    expect(log.shouldRoll(100, now + 60_000)).toBe(true);
    await log.close();
  });

  it("never serves a corrupt record of a sealed segment (open trusts its index, reads check)", async () => {
    const log = SegmentedLog.open(dir, options(), INITIAL);
    fill(log, 1, 300);
    await log.flushed();
    expect(log.segmentCount()).toBeGreaterThan(2);
    await log.close();
    const sealed = join(
      dir,
      readdirSync(dir)
        .filter((f) => f.endsWith(".log"))
        .sort()[0]!,
    );
    const bytes = readFileSync(sealed);
    bytes[Math.floor(bytes.byteLength / 3)] ^= 0xff;
    writeFileSync(sealed, bytes);
    const again = SegmentedLog.open(dir, options(), INITIAL);
    expect(again.lastIndex()).toBe(300);
    await expect(allByIndex(again)).rejects.toThrow(/checksum|length/);
    await again.close();
  });

  it("after a cut or a flipped byte at any of 60 points of the tail, keeps exactly the whole records before it", async () => {
    const base = SegmentedLog.open(dir, options({ segmentBytes: 1 << 30 }), INITIAL);
    fill(base, 1, 120);
    await base.flushed();
    await base.close();
    const file = join(
      dir,
      readdirSync(dir).find((f) => f.endsWith(".log"))!,
    );
    const original = readFileSync(file);
    // The active segment has no index file (written when sealed): only the log is damaged.
    expect(readdirSync(dir).filter((f) => f.endsWith(".index"))).toEqual([]);
    // Record ends, to know which records a cut at a position leaves whole.
    const ends: number[] = [];
    for (let at = 0; at < original.byteLength;) {
      at += 4 + original.readUInt32BE(at);
      ends.push(at);
    }
    const from = ends[ends.length - 40]!;
    for (let k = 0; k < 60; k++) {
      const point = from + Math.floor(((original.byteLength - from) * k) / 60);
      const damaged = Buffer.from(original);
      const cut = k % 2 === 0;
      writeFileSync(file, cut ? damaged.subarray(0, point) : ((damaged[point] ^= 0x5a), damaged));
      const log = SegmentedLog.open(dir, options({ segmentBytes: 1 << 30 }), INITIAL);
      // A cut keeps the records that end at or before it; a flipped byte loses its record and all after.
      const whole = ends.filter((e) => e <= point).length;
      expect(log.lastIndex(), `${cut ? "cut" : "flip"} at ${point}`).toBe(whole);
      const back = await allByIndex(log);
      expect(back.length).toBe(whole);
      for (const r of back)
        expect(Buffer.from(r.data).equals(Buffer.from(record(r.index, r.baseOffset).data))).toBe(
          true,
        );
      await log.close();
    }
  });

  it("writes a segment's index file when it is sealed, and rebuilds a missing or garbled one", async () => {
    const log = SegmentedLog.open(dir, options(), INITIAL);
    fill(log, 1, 600);
    await log.flushed();
    const next = log.nextOffset();
    await log.close();
    // Every sealed segment has its index file; the active one none.
    const checkpoints = readdirSync(dir)
      .filter((f) => f.endsWith(".checkpoint"))
      .sort();
    const indexes = readdirSync(dir)
      .filter((f) => f.endsWith(".index"))
      .sort();
    expect(checkpoints.length).toBeGreaterThan(2);
    expect(indexes).toEqual(
      checkpoints.slice(0, -1).map((f) => f.replace(".checkpoint", ".index")),
    );
    const index = join(dir, indexes[0]!);
    const good = readFileSync(index);
    rmSync(index);
    let again = SegmentedLog.open(dir, options(), INITIAL);
    expect(again.report.indexesRebuilt).toBe(1);
    expect(again.lastIndex()).toBe(600);
    expect(again.nextOffset()).toBe(next);
    await again.close();
    expect(readFileSync(index)).toEqual(good);
    appendFileSync(index, Buffer.from([1, 2, 3])); // a torn index write
    const garbled = readFileSync(index);
    garbled.writeBigUInt64BE(10n ** 12n, 24 * 1 + 40 * 3); // a position past the file
    writeFileSync(index, garbled);
    again = SegmentedLog.open(dir, options(), INITIAL);
    expect(again.report.indexesRebuilt).toBe(1);
    expect((await again.readByIndex(5, 1024))[0]!.index).toBe(5);
    await again.close();
  });

  it("answers a timestamp with the first record at or after it", async () => {
    const log = SegmentedLog.open(dir, options(), INITIAL);
    fill(log, 1, 500);
    await log.flushed();
    expect((await log.findTimestamp(0))!.index).toBe(1);
    expect((await log.findTimestamp(1000 + 333 * 10))!.index).toBe(333);
    expect((await log.findTimestamp(1000 + 350 * 10))!.index).toBe(351); // 350 took no offset
    expect(await log.findTimestamp(1000 + 501 * 10)).toBeUndefined();
    await log.close();
  });

  it("removes whole segments from the front and truncates the end", async () => {
    const log = SegmentedLog.open(dir, options(), INITIAL);
    fill(log, 1, 600);
    await log.flushed();
    const infos = [...log.segmentInfos()];
    expect(log.removeOldest(2)).toBe(2);
    expect(log.firstIndex()).toBe(infos[2]!.baseIndex);
    expect(log.checkpoint().index).toBe(infos[2]!.baseIndex - 1);
    expect(log.term(log.firstIndex() - 1)).toBe(log.checkpoint().term);
    expect(log.removeOldest(1000)).toBe(infos.length - 3); // the active segment stays
    expect(log.truncateAfter(log.lastIndex() - 5)).toBe(true);
    const last = log.lastIndex();
    await log.close();
    const again = SegmentedLog.open(dir, options(), INITIAL);
    expect(again.lastIndex()).toBe(last);
    expect(again.firstIndex()).toBe(infos[infos.length - 1]!.baseIndex);
    fill(again, last + 1, last + 10);
    await again.flushed();
    expect((await allByIndex(again)).length).toBe(again.lastIndex() - again.firstIndex() + 1);
    await again.close();
  });

  it("serves the Raft core from the cache and reads ahead on a miss", async () => {
    const cache = new RecordCache(256 * 1024);
    const log = SegmentedLog.open(dir, options({ cache }), INITIAL);
    fill(log, 1, 1500);
    await log.flushed();
    expect(cache.usedBytes()).toBeLessThanOrEqual(256 * 1024);
    expect(cache.usedBytes()).toBeGreaterThan(128 * 1024);
    const tail = log.cached(1500, 1501, 1 << 20);
    expect(tail?.map((r) => r.index)).toEqual([1500]);
    expect(log.cached(10, 1501, 1 << 20)).toBeUndefined();
    await new Promise<void>((resolve) => log.onReadAhead(resolve));
    const got = log.cached(10, 1501, 4096)!;
    expect(got[0]!.index).toBe(10);
    expect(got.length).toBeGreaterThan(1);
    await log.close();
  });
});
