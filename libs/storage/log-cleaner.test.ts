// The cleaner over real segment files, with a small codec whose payloads are JSON lists of
// (offset delta, key, value): the latest record per key survives at its offset, entries keep
// their index, term and offsets, tombstones go after delete.retention.ms, nothing at or above the
// stable offset or younger than min.compaction.lag.ms is touched, a transactional entry stops
// the clean, the map's budget bounds what one clean covers, and a failure injected at every file
// operation of the swap leaves a log that opens to exactly the old or exactly the new segments.
import { cpSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Checkpoint } from "./checkpoint.js";
import { CleanProgress } from "./clean-progress.js";
import { CLEANER_FILES, type CleanerFiles } from "./cleaner-files.js";
import type { CleanableContent, CompactionCodec } from "./compaction-codec.js";
import { CODEC_NONE, type LogRecord } from "./log-record.js";
import { dirtyView, LogCleaner, type CleanSettings } from "./log-cleaner.js";
import { OFFSET_MAP_SLOT_BYTES } from "./offset-map.js";
import { RecordCache } from "./record-cache.js";
import { segmentName } from "./segment.js";
import { SegmentedLog, type SegmentedLogOptions } from "./segmented-log.js";

let dir: string;
const dirs: string[] = [];
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "tern-cleaner-"));
  dirs.push(dir);
});
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const INITIAL: Checkpoint = {
  index: 0,
  term: 0,
  nextOffset: 0n,
  voters: [1],
  learners: [],
  state: new Uint8Array(0),
};

function options(): SegmentedLogOptions {
  return {
    segmentBytes: 4 * 1024,
    segmentMs: -1,
    indexIntervalBytes: 512,
    readAheadBytes: 32 * 1024,
    cache: new RecordCache(1024 * 1024),
  };
}

type Payload =
  | { t: "keyed"; r: Array<[number, string | null, string | null]> }
  | { t: "other" }
  | { t: "txn"; n: number };

const encode = (p: Payload): Uint8Array => Buffer.from(JSON.stringify(p));
const decode = (r: LogRecord): Payload => JSON.parse(Buffer.from(r.data).toString()) as Payload;

/** Payloads of JSON: keyed records at baseOffset + delta; "txn" entries stop a clean. */
const CODEC: CompactionCodec = {
  content(r: LogRecord): Promise<CleanableContent> {
    const p = decode(r);
    if (p.t === "other") return Promise.resolve({ kind: "other" });
    if (p.t === "txn") return Promise.resolve({ kind: "transactional" });
    return Promise.resolve({
      kind: "records",
      records: p.r.map(([d, k, v]) => ({
        offset: r.baseOffset + BigInt(d),
        key: k === null ? null : Buffer.from(k),
        tombstone: v === null,
      })),
      rewrite: (keep) => Promise.resolve(encode({ t: "keyed", r: p.r.filter((_, i) => keep[i]) })),
    });
  },
};

/** Appends entries as the state machine would: roll when due, offsets dense, terms rising. */
class Writer {
  index = 0;
  constructor(readonly log: SegmentedLog) {}
  append(p: Payload, atMs: number, term = 1 + Math.floor(this.index / 40)): void {
    const takes = p.t === "keyed" ? p.r.length : p.t === "txn" ? p.n : 0;
    const data = encode(p);
    const i = this.index + 1;
    if (this.log.shouldRoll(data.byteLength + 56, atMs))
      this.log.roll({
        index: this.log.lastIndex(),
        term: this.log.lastTerm(),
        nextOffset: this.log.nextOffset(),
        voters: [1],
        learners: [],
        state: new Uint8Array([i & 0xff]),
      });
    this.log.append({
      index: i,
      term,
      entryType: 0,
      baseOffset: takes > 0 ? this.log.nextOffset() : -1n,
      offsetCount: takes,
      maxTimestampMs: takes > 0 ? atMs : -1,
      appendTimeMs: atMs,
      codec: CODEC_NONE,
      data,
    });
    this.index = i;
  }
  /** Records of keys k0..k(keys-1) in rotation, value "v<offset>", every 11th a tombstone. */
  keyed(n: number, keys: number, atMs: number): void {
    for (let e = 0; e < n; e++) {
      const base = Number(this.log.nextOffset());
      const count = 1 + (e % 3);
      const r: Array<[number, string, string | null]> = [];
      for (let d = 0; d < count; d++) {
        const o = base + d;
        r.push([d, `k${o % keys}`, o % 11 === 5 ? null : `v${o}`]);
      }
      this.append({ t: "keyed", r }, atMs);
      if (e % 9 === 4) this.append({ t: "other" }, atMs);
    }
  }
}

const settings = (over: Partial<CleanSettings> = {}): CleanSettings => ({
  nowMs: 10_000,
  minCompactionLagMs: 0,
  deleteRetentionMs: 1_000,
  stableOffset: 1n << 60n,
  ...over,
});

/** Every keyed record the log holds, by offset: [key, value]. */
async function records(log: SegmentedLog): Promise<Map<bigint, [string | null, string | null]>> {
  const out = new Map<bigint, [string | null, string | null]>();
  for (const r of await log.readByIndex(log.firstIndex(), 1 << 30)) {
    const p = decode(r);
    if (p.t === "keyed") for (const [d, k, v] of p.r) out.set(r.baseOffset + BigInt(d), [k, v]);
  }
  return out;
}

/** Each entry's index, term, offsets and times: what a clean never changes. */
async function shape(log: SegmentedLog): Promise<string[]> {
  return (await log.readByIndex(log.firstIndex(), 1 << 30)).map(
    (r) =>
      `${r.index}/${r.term}/${r.baseOffset}/${r.offsetCount}/${r.maxTimestampMs}/${r.appendTimeMs}`,
  );
}

/** Each record's payload, by index. */
async function payloads(log: SegmentedLog): Promise<string[]> {
  return (await log.readByIndex(log.firstIndex(), 1 << 30)).map((r) =>
    Buffer.from(r.data).toString(),
  );
}

function latestPerKey(
  all: Map<bigint, [string | null, string | null]>,
): Map<string, [bigint, string | null]> {
  const latest = new Map<string, [bigint, string | null]>();
  for (const [o, [k, v]] of [...all].sort((a, b) => (a[0] < b[0] ? -1 : 1)))
    if (k !== null) latest.set(k, [o, v]);
  return latest;
}

const cleaner = (over: Partial<ConstructorParameters<typeof LogCleaner>[0]> = {}): LogCleaner =>
  new LogCleaner({ mapBytes: 1024 * 1024, indexIntervalBytes: 512, ...over });

describe("LogCleaner", () => {
  it("keeps the latest record per key at its offset; entries keep index, term and offsets", async () => {
    const log = SegmentedLog.open(dir, options(), INITIAL);
    const w = new Writer(log);
    w.keyed(300, 20, 1_000);
    await log.flushed();
    const before = await records(log);
    const shapeBefore = await shape(log);
    const active = log.sealedSegments().length;
    expect(active).toBeGreaterThan(5);
    const sealedEnd = log.sealedSegments().at(-1)!.nextOffset();
    const progress = new CleanProgress();
    const view = dirtyView(log, progress, settings());
    expect(view.ratio).toBe(1);

    const out = await cleaner().clean(log, CODEC, progress, settings());
    expect(out).toMatchObject({ kind: "cleaned", firstOffset: 0n, endOffset: sealedEnd });
    if (out.kind !== "cleaned") return;
    // Every entry stays (its header and an emptied payload): records go, entries do not.
    expect(out.bytesAfter).toBeLessThan(out.bytesBefore * 0.75);
    expect(out.recordsRemoved).toBeGreaterThan(out.recordsKept);
    expect(progress.firstDirtyOffset).toBe(sealedEnd);
    expect(dirtyView(log, progress, settings()).dirtyBytes).toBe(0);

    const check = async (l: SegmentedLog): Promise<void> => {
      const after = await records(l);
      expect(await shape(l)).toEqual(shapeBefore);
      // Every kept record is the one written at that offset.
      for (const [o, kv] of after) expect(before.get(o)).toEqual(kv);
      // Every key's latest record survives, tombstones as tombstones (first clean: kept).
      for (const [, [o, v]] of latestPerKey(before)) expect(after.get(o)?.[1]).toBe(v);
      // Below the end of the clean, only each key's latest record there remains.
      const latest = latestPerKey(new Map([...before].filter(([o]) => o < sealedEnd)));
      for (const [o, [k]] of after)
        if (o < sealedEnd && k !== null) expect(latest.get(k)![0]).toBe(o);
      // The active segment is untouched.
      for (const [o, kv] of before) if (o >= sealedEnd) expect(after.get(o)).toEqual(kv);
    };
    await check(log);
    // Reads by offset find records inside cleaned segments.
    const mid = [...(await records(log)).keys()].find((o) => o > 100n)!;
    expect((await log.readByOffset(mid, 1))[0]!.baseOffset).toBeLessThanOrEqual(mid);
    await log.close();
    const reopened = SegmentedLog.open(dir, options(), INITIAL);
    expect(reopened.report.indexesRebuilt).toBe(0);
    expect(reopened.report.repairs).toEqual([]);
    await check(reopened);
    await reopened.close();
  });

  it("stores the clean point: a reopened log is not cleaned again, and only what came after is dirty", async () => {
    const log = SegmentedLog.open(dir, options(), INITIAL);
    const w = new Writer(log);
    w.keyed(300, 20, 1_000);
    const out = await cleaner().clean(log, CODEC, new CleanProgress(), settings());
    expect(out.kind).toBe("cleaned");
    const end = out.kind === "cleaned" ? out.endOffset : -1n;
    expect(log.firstDirtyOffset()).toBe(end);
    const payloadsAfter = await payloads(log);
    await log.close();

    const reopened = SegmentedLog.open(dir, options(), INITIAL);
    expect(reopened.firstDirtyOffset()).toBe(end);
    const progress = new CleanProgress(reopened.firstDirtyOffset());
    expect(dirtyView(reopened, progress, settings()).dirtyBytes).toBe(0);
    expect(await cleaner().clean(reopened, CODEC, progress, settings())).toMatchObject({
      kind: "skipped",
      reason: "nothing-dirty",
      bytesRead: 0,
    });
    expect(await payloads(reopened)).toEqual(payloadsAfter);
    // Writes after the restart: only the segments they seal are dirty; the clean goes on from
    // the stored point.
    const w2 = new Writer(reopened);
    w2.index = reopened.lastIndex();
    w2.keyed(100, 20, 2_000);
    const view = dirtyView(reopened, progress, settings());
    expect(view.dirtyBytes).toBeGreaterThan(0);
    expect(view.ratio).toBeLessThan(1);
    const again = await cleaner().clean(reopened, CODEC, progress, settings());
    expect(again).toMatchObject({ kind: "cleaned", firstOffset: 0n });
    expect(reopened.firstDirtyOffset()).toBe(reopened.sealedSegments().at(-1)!.nextOffset());
    await reopened.close();
  });

  it("removes a tombstone only delete.retention.ms after the clean that covered it", async () => {
    const log = SegmentedLog.open(dir, options(), INITIAL);
    const w = new Writer(log);
    w.append({ t: "keyed", r: [[0, "gone", "a"]] }, 1_000);
    w.append({ t: "keyed", r: [[0, "gone", null]] }, 1_000);
    w.keyed(120, 5, 1_000);
    const tombstoneAt = 1n;
    const progress = new CleanProgress();
    const c = cleaner();
    await c.clean(log, CODEC, progress, settings({ nowMs: 5_000, deleteRetentionMs: 1_000 }));
    let after = await records(log);
    expect(after.has(0n)).toBe(false);
    expect(after.get(tombstoneAt)).toEqual(["gone", null]);
    // Not yet: 999 ms after the first clean.
    w.keyed(40, 5, 5_000);
    await c.clean(log, CODEC, progress, settings({ nowMs: 5_999, deleteRetentionMs: 1_000 }));
    expect((await records(log)).get(tombstoneAt)).toEqual(["gone", null]);
    w.keyed(40, 5, 6_000);
    const out = await c.clean(
      log,
      CODEC,
      progress,
      settings({ nowMs: 6_000, deleteRetentionMs: 1_000 }),
    );
    after = await records(log);
    expect(after.has(tombstoneAt)).toBe(false);
    expect(out.kind === "cleaned" && out.tombstonesRemoved).toBeGreaterThan(0);

    // With nothing dirty, a clean is due once a tombstone left waiting may go.
    w.append({ t: "keyed", r: [[0, "late", null]] }, 6_000);
    w.keyed(40, 5, 6_000);
    await c.clean(log, CODEC, progress, settings({ nowMs: 6_500, deleteRetentionMs: 1_000 }));
    const late = [...(await records(log))].find(([, [k]]) => k === "late")![0];
    expect(progress.nextRemovalAtMs).toBe(7_500);
    expect(
      await c.clean(log, CODEC, progress, settings({ nowMs: 7_499, deleteRetentionMs: 1_000 })),
    ).toMatchObject({ kind: "skipped", reason: "nothing-dirty" });
    const due = await c.clean(
      log,
      CODEC,
      progress,
      settings({ nowMs: 7_500, deleteRetentionMs: 1_000 }),
    );
    expect(due.kind === "cleaned" && due.tombstonesRemoved).toBeGreaterThanOrEqual(1);
    expect((await records(log)).has(late)).toBe(false);
    expect(progress.nextRemovalAtMs).toBe(Infinity);
    await log.close();
  });

  it("never cleans at or above the stable offset, nor a segment younger than min.compaction.lag.ms", async () => {
    const log = SegmentedLog.open(dir, options(), INITIAL);
    const w = new Writer(log);
    w.keyed(100, 4, 1_000);
    w.keyed(100, 4, 9_000);
    const sealed = log.sealedSegments();
    const stable = sealed[2]!.nextOffset() + 1n; // inside the fourth segment
    const before = await records(log);
    const progress = new CleanProgress();
    const out = await cleaner().clean(log, CODEC, progress, settings({ stableOffset: stable }));
    expect(out).toMatchObject({ kind: "cleaned", endOffset: sealed[2]!.nextOffset() });
    const after = await records(log);
    for (const [o, kv] of before)
      if (o >= sealed[2]!.nextOffset()) expect(after.get(o)).toEqual(kv);

    // min.compaction.lag.ms: only segments whose last append is old enough.
    const young = new CleanProgress();
    const lagged = await cleaner().clean(
      log,
      CODEC,
      young,
      settings({ nowMs: 10_000, minCompactionLagMs: 5_000 }),
    );
    expect(lagged.kind).toBe("cleaned");
    const oldEnd = log.sealedSegments().filter((s) => s.lastAppendTimeMs() <= 5_000);
    expect(young.firstDirtyOffset).toBe(oldEnd.at(-1)!.nextOffset());
    await log.close();
  });

  it("does not clean across a transactional entry", async () => {
    const log = SegmentedLog.open(dir, options(), INITIAL);
    const w = new Writer(log);
    w.keyed(80, 4, 1_000);
    w.append({ t: "txn", n: 2 }, 1_000);
    const txnIndex = w.index;
    w.keyed(120, 4, 1_000);
    const before = await payloads(log);
    const progress = new CleanProgress();
    const out = await cleaner().clean(log, CODEC, progress, settings());
    // The segments before the one holding it are cleaned; from it on nothing.
    const txnBase = log
      .sealedSegments()
      .find((s) => s.baseIndex <= txnIndex && txnIndex <= s.lastIndex())!;
    expect(out).toMatchObject({ kind: "cleaned", endOffset: txnBase.baseOffset });
    const after = await payloads(log);
    const firstIdx = txnBase.baseIndex;
    expect(after.slice(firstIdx - 1)).toEqual(before.slice(firstIdx - 1));
    const again = await cleaner().clean(log, CODEC, progress, settings());
    expect(again).toMatchObject({ kind: "skipped", reason: "transactional" });
    expect(await payloads(log)).toEqual(after);
    await log.close();
  });

  it("cleans as many whole segments as the map holds, and none when one segment overflows it", async () => {
    const log = SegmentedLog.open(dir, options(), INITIAL);
    const w = new Writer(log);
    w.keyed(300, 100_000, 1_000); // every key distinct
    const perSegment = (await records(log)).size / (log.sealedSegments().length + 1);
    const slots = Math.ceil((perSegment * 2.5) / 0.9);
    const progress = new CleanProgress();
    const out = await cleaner({ mapBytes: slots * OFFSET_MAP_SLOT_BYTES }).clean(
      log,
      CODEC,
      progress,
      settings(),
    );
    expect(out.kind).toBe("cleaned");
    const sealed = log.sealedSegments();
    expect(progress.firstDirtyOffset).toBeGreaterThan(sealed[0]!.nextOffset() - 1n);
    expect(progress.firstDirtyOffset).toBeLessThan(sealed.at(-1)!.nextOffset());
    const tiny = await cleaner({ mapBytes: 4 * OFFSET_MAP_SLOT_BYTES }).clean(
      log,
      CODEC,
      new CleanProgress(),
      settings(),
    );
    expect(tiny).toMatchObject({ kind: "skipped", reason: "map-full" });
    await log.close();
  });

  /**
   * Each file step, and which use of it fails: the second segment's (the first one is swapped in
   * whole before). The directory is synced twice per swap: after the unlink (before the commit
   * point) and after the rename (after it). committed: the second segment opens new.
   */
  const STEPS: ReadonlyArray<[Step, number, boolean]> = [
    ["create-log", 2, false],
    ["append-log", 2, false],
    ["datasync-log", 2, false],
    ["create-index", 2, false],
    ["append-index", 2, false],
    ["datasync-index", 2, false],
    ["unlink-index", 2, false],
    ["sync-directory", 3, false],
    ["rename-log", 2, false],
    ["sync-directory", 4, true],
    ["rename-index", 2, true],
  ];
  type Step =
    | "create-log"
    | "append-log"
    | "datasync-log"
    | "create-index"
    | "append-index"
    | "datasync-index"
    | "unlink-index"
    | "rename-log"
    | "sync-directory"
    | "rename-index";

  /** The real file operations, failing at the nth use of one step. */
  function failing(step: Step, nth: number): CleanerFiles {
    let seen = 0;
    const maybeFail = (s: string): void => {
      if (s === step && ++seen === nth) throw new Error(`injected failure at ${s}`);
    };
    return {
      async create(path) {
        const isIndex = path.includes(".index.");
        maybeFail(isIndex ? "create-index" : "create-log");
        const f = await CLEANER_FILES.create(path);
        return {
          append: async (parts) => {
            maybeFail(isIndex ? "append-index" : "append-log");
            await f.append(parts);
          },
          datasync: async () => {
            maybeFail(isIndex ? "datasync-index" : "datasync-log");
            await f.datasync();
          },
          close: () => f.close(),
        };
      },
      discard: (p) => CLEANER_FILES.discard(p),
      unlink: (p) => {
        maybeFail("unlink-index");
        CLEANER_FILES.unlink(p);
      },
      rename: (from, to) => {
        maybeFail(from.includes(".index.") ? "rename-index" : "rename-log");
        CLEANER_FILES.rename(from, to);
      },
      syncDirectory: (d) => {
        maybeFail("sync-directory");
        CLEANER_FILES.syncDirectory(d);
      },
    };
  }

  it("opens to exactly the old or exactly the new segments after a failure at any step", async () => {
    const source = SegmentedLog.open(dir, options(), INITIAL);
    const w = new Writer(source);
    w.keyed(200, 10, 1_000);
    await source.close();
    const oldLog = SegmentedLog.open(dir, options(), INITIAL);
    const oldPayloads = await payloads(oldLog);
    const oldShape = await shape(oldLog);
    await oldLog.close();
    // The clean without faults, on a copy: what "new" is.
    const cleanDir = mkdtempSync(join(tmpdir(), "tern-cleaner-"));
    dirs.push(cleanDir);
    cpSync(dir, cleanDir, { recursive: true });
    const reference = SegmentedLog.open(cleanDir, options(), INITIAL);
    await cleaner().clean(reference, CODEC, new CleanProgress(), settings());
    const newPayloads = await payloads(reference);
    await reference.close();
    expect(newPayloads).not.toEqual(oldPayloads);

    for (const [step, nth, committed] of STEPS) {
      const copy = mkdtempSync(join(tmpdir(), "tern-cleaner-"));
      dirs.push(copy);
      cpSync(dir, copy, { recursive: true });
      const log = SegmentedLog.open(copy, options(), INITIAL);
      const segments = log.sealedSegments().map((s) => [s.baseIndex, s.lastIndex()] as const);
      await expect(
        cleaner({ files: failing(step, nth) }).clean(log, CODEC, new CleanProgress(), settings()),
        step,
      ).rejects.toThrow(/injected failure/);
      const inMemory = await payloads(log);
      // "Crash": the process stops here; the directory is opened again.
      const reopened = SegmentedLog.open(copy, options(), INITIAL);
      expect(reopened.report.repairs, step).toEqual([]);
      expect(await shape(reopened), step).toEqual(oldShape);
      const got = await payloads(reopened);
      expect(
        readdirSync(copy).filter((f) => f.endsWith(".tmp")),
        step,
      ).toEqual([]);
      // Segment by segment: exactly the old records or exactly the new ones.
      const states = segments.map(([first, last]) => {
        const slice = (p: string[]): string[] => p.slice(first - 1, last);
        if (JSON.stringify(slice(got)) === JSON.stringify(slice(newPayloads))) return "new";
        if (JSON.stringify(slice(got)) === JSON.stringify(slice(oldPayloads))) return "old";
        return "mixed";
      });
      expect(states, step).not.toContain("mixed");
      expect(states[0], step).toBe("new");
      expect(states[1], step).toBe(committed ? "new" : "old");
      // What this process serves is what the directory holds.
      expect(inMemory, step).toEqual(got);
      // A later clean finishes the job.
      await cleaner().clean(reopened, CODEC, new CleanProgress(), settings());
      expect(await payloads(reopened), step).toEqual(newPayloads);
      await reopened.close();
      await log.close();
    }
  });

  /** Every segment file set the directory holds: a .checkpoint per segment and nothing else left. */
  const segmentFiles = (d: string): string[] =>
    readdirSync(d)
      .filter((f) => /^\d{20}\.(log|index|checkpoint)$/.test(f))
      .sort();

  /** segment.bytes for the merge tests (raised after the log was written: cleaned 4 KiB segments fit). */
  const MERGE_BYTES = 8 * 1024;

  it("merges adjacent cleaned segments that fit in segment.bytes; entries keep index, term and offsets", async () => {
    const log = SegmentedLog.open(dir, options(), INITIAL);
    const w = new Writer(log);
    w.keyed(300, 20, 1_000);
    const shapeBefore = await shape(log);
    const latest = latestPerKey(await records(log));
    // First clean: segment by segment (no segment.bytes given: no merging).
    const first = await cleaner().clean(log, CODEC, new CleanProgress(), settings());
    expect(first).toMatchObject({ kind: "cleaned", segmentsMerged: 0 });
    const sealedBefore = log.sealedSegments().length;
    const payloadsBefore = await payloads(log);
    // With segment.bytes: adjacent ones go into one, within it.
    const second = await cleaner().clean(
      log,
      CODEC,
      new CleanProgress(),
      settings({ segmentBytes: MERGE_BYTES }),
    );
    expect(second.kind === "cleaned" && second.segmentsMerged).toBeGreaterThan(0);
    const sealedAfter = log.sealedSegments();
    expect(sealedAfter.length).toBeLessThan(sealedBefore);
    for (const seg of sealedAfter) expect(seg.bytes()).toBeLessThanOrEqual(MERGE_BYTES);
    expect(await shape(log)).toEqual(shapeBefore);
    expect(await payloads(log)).toEqual(payloadsBefore);
    // Reads by offset and by index across a merged segment.
    const after = await records(log);
    for (const [, [o, v]] of latest) expect(after.get(o)?.[1]).toBe(v);
    const mid = [...after.keys()].find((o) => o > 150n)!;
    expect((await log.readByOffset(mid, 1))[0]!.baseOffset).toBeLessThanOrEqual(mid);
    const files = segmentFiles(dir);
    await log.close();
    const reopened = SegmentedLog.open(dir, options(), INITIAL);
    expect(reopened.report).toMatchObject({
      repairs: [],
      indexesRebuilt: 0,
      droppedAfterGap: 0,
      mergedRemoved: 0,
    });
    expect(reopened.sealedSegments().length).toBe(sealedAfter.length);
    expect(segmentFiles(dir)).toEqual(files);
    expect(await shape(reopened)).toEqual(shapeBefore);
    expect(await payloads(reopened)).toEqual(payloadsBefore);
    await reopened.close();
  });

  /** The steps of a merging swap, failing in the first group; committed: past the rename. */
  const MERGE_STEPS: ReadonlyArray<[Step, number, boolean]> = [
    ["create-log", 1, false],
    ["append-log", 1, false],
    ["datasync-log", 1, false],
    ["create-index", 1, false],
    ["datasync-index", 1, false],
    ["unlink-index", 1, false],
    ["sync-directory", 1, false],
    ["rename-log", 1, false],
    ["sync-directory", 2, true],
    ["unlink-index", 2, true], // the second segment's log
    ["unlink-index", 4, true], // its checkpoint
    ["sync-directory", 3, true],
    ["rename-index", 1, true],
  ];

  it("a failure at any step of a merge opens to the old segments or the merged one, no file left over", async () => {
    const source = SegmentedLog.open(dir, options(), INITIAL);
    new Writer(source).keyed(300, 20, 1_000);
    await cleaner().clean(source, CODEC, new CleanProgress(), settings());
    await source.close();
    const old = SegmentedLog.open(dir, options(), INITIAL);
    const oldPayloads = await payloads(old);
    const oldShape = await shape(old);
    const oldSealed = old.sealedSegments().length;
    await old.close();
    const reference = mkdtempSync(join(tmpdir(), "tern-cleaner-"));
    dirs.push(reference);
    cpSync(dir, reference, { recursive: true });
    const merged = SegmentedLog.open(reference, options(), INITIAL);
    await cleaner().clean(
      merged,
      CODEC,
      new CleanProgress(),
      settings({ segmentBytes: MERGE_BYTES }),
    );
    const mergedSealed = merged.sealedSegments().length;
    await merged.close();
    expect(mergedSealed).toBeLessThan(oldSealed);

    for (const [step, nth, committed] of MERGE_STEPS) {
      const copy = mkdtempSync(join(tmpdir(), "tern-cleaner-"));
      dirs.push(copy);
      cpSync(dir, copy, { recursive: true });
      const log = SegmentedLog.open(copy, options(), INITIAL);
      const firstGroupEnd = log.sealedSegments()[1]!.lastIndex();
      await expect(
        cleaner({ files: failing(step, nth) }).clean(
          log,
          CODEC,
          new CleanProgress(),
          settings({ segmentBytes: MERGE_BYTES }),
        ),
        `${step} ${nth}`,
      ).rejects.toThrow(/injected failure/);
      const inMemory = await payloads(log);
      const servedSegments = log.sealedSegments().map((s) => s.baseIndex);
      const reopened = SegmentedLog.open(copy, options(), INITIAL);
      const what = `${step} ${nth}`;
      expect(reopened.report.repairs, what).toEqual([]);
      expect(reopened.report.droppedAfterGap, what).toBe(0);
      expect(await shape(reopened), what).toEqual(oldShape);
      expect(await payloads(reopened), what).toEqual(oldPayloads);
      expect(inMemory, what).toEqual(oldPayloads);
      expect(
        readdirSync(copy).filter((f) => f.endsWith(".tmp")),
        what,
      ).toEqual([]);
      // Old: every segment as it was. Merged: the first group is one segment, its members' files gone.
      const bases = reopened.sealedSegments().map((s) => s.baseIndex);
      expect(bases, what).toEqual(servedSegments);
      if (committed) {
        expect(bases.length, what).toBeLessThan(oldSealed);
        expect(reopened.sealedSegments()[0]!.lastIndex(), what).toBeGreaterThanOrEqual(
          firstGroupEnd,
        );
      } else {
        expect(bases.length, what).toBe(oldSealed);
      }
      // No file of a merged segment is left: every segment file belongs to a segment.
      const names = new Set([...reopened.segmentInfos()].map((i) => segmentName(i.baseIndex)));
      for (const f of segmentFiles(copy))
        expect(names.has(f.slice(0, 20)), `${what}: ${f}`).toBe(true);
      // A later clean finishes the merge.
      await cleaner().clean(
        reopened,
        CODEC,
        new CleanProgress(),
        settings({ segmentBytes: MERGE_BYTES }),
      );
      expect(reopened.sealedSegments().length, what).toBe(mergedSealed);
      expect(await payloads(reopened), what).toEqual(oldPayloads);
      await reopened.close();
      await log.close();
    }
  });
});
