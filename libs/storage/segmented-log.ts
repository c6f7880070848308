// A partition replica's log on disk: an ordered set of segments in one directory, each named
// by the Raft index of its first entry. The state machine appends every applied entry (with
// the offsets it took); the Raft core reads older entries back through cached() (never a
// blocking read: a miss starts an asynchronous read-ahead and answers "not yet"), consumers read
// by offset, ListOffsets by timestamp. Retention removes whole segments from the front.
import { mkdirSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Checkpoint } from "./checkpoint.js";
import { syncDirectory } from "./checkpoint.js";
import { nextOffsetAfter, recordSize, type LogRecord } from "./log-record.js";
import type { CacheWindow, RecordCache } from "./record-cache.js";
import {
  Segment,
  segmentName,
  type SegmentDamage,
  type SegmentOptions,
  type TailRepair,
} from "./segment.js";
import { isTernError } from "../common/errors.js";
import { mkdir } from "node:fs/promises";
import { noteSynced } from "../common/sync-manifest.js";
import { SegmentReplacement } from "./segment-replacement.js";
import type { CleanerFiles } from "./cleaner-files.js";
import { assert, haltOnAssertion } from "../common/assert.js";
import { readCleanPoint, writeCleanPoint } from "./clean-point.js";

export interface SegmentedLogOptions extends SegmentOptions {
  /** Roll to a new segment past this many bytes... */
  readonly segmentBytes: number;
  /** ...or once the active segment's first record is this old (replicated clock); -1: never. */
  readonly segmentMs: number;
  /** Bytes one read-ahead loads for the Raft core. */
  readonly readAheadBytes: number;
  readonly cache: RecordCache;
}

export interface OpenReport {
  readonly segments: number;
  /** sealed: not the last segment on disk (synced when rolled: a torn tail cannot explain it). */
  readonly repairs: Array<TailRepair & { segment: number; sealed: boolean }>;
  readonly indexesRebuilt: number;
  /** Segments dropped because an earlier one ended short of them (a hole in the log). */
  readonly droppedAfterGap: number;
  /** Files of segments a clean had merged into the one before them, left by a crash. */
  readonly mergedRemoved: number;
}

const SEGMENT_FILE = /^(\d{20})\.checkpoint$/;

/** A damaged segment: its file, the Raft indexes it holds, where the first bad record is. */
export interface DamageReport extends SegmentDamage {
  readonly file: string;
  readonly firstIndex: number;
  readonly lastIndex: number;
  /**
   * "read": a read for a consumer or a follower hit it; "scrub": the check after open (both stay
   * refused until replaced: beginReplacement); "open": cut short, found at open (the replica
   * opened, so its Raft log applies the entries after the cut again: repaired already).
   */
  readonly foundBy: "read" | "scrub" | "open";
}

export class SegmentedLog {
  private readonly tail: CacheWindow;
  private readonly ahead: CacheWindow;
  /** A read-ahead is in flight (one at a time). */
  private loading = false;
  private readonly readAheadListeners = new Set<() => void>();
  private closed = false;
  private cachingTail = true;
  /** Damaged segments by base index (each reported once). */
  private readonly damaged = new Map<number, DamageReport>();
  private readonly damageListeners = new Set<(d: DamageReport) => void>();
  /** scrub() reports what open found once. */
  private openRepairsReported = false;
  /** The first dirty offset: the log below it is clean (clean-point.ts; never above the log end). */
  private cleanPoint = 0n;
  /** Counts changes that may have replaced records below the clean point (cleanedUpTo's guard). */
  private rewrites = 0;

  private constructor(
    readonly dir: string,
    private segments: Segment[],
    private readonly options: SegmentedLogOptions,
    readonly report: OpenReport,
  ) {
    this.tail = options.cache.window();
    this.ahead = options.cache.window();
  }

  /**
   * Opens the log in dir (synchronously: done once, before the replica serves). An empty
   * directory gets a first segment after `initial`.
   */
  /**
   * A new log's directory and first segment's files, created from the thread pool when dir does
   * not exist (many partitions at once: file creation waits on the file system's journal behind
   * every fsync, and would stall the event loop); open() then opens them. Returns whether it
   * created them.
   */
  static async prepare(dir: string, initial: Checkpoint): Promise<boolean> {
    const created = await mkdir(dir, { recursive: true, mode: 0o700 });
    if (created === undefined) return false; // there already (an existing replica, or a retry)
    await Segment.prepareFiles(dir, initial);
    return true;
  }

  static open(dir: string, options: SegmentedLogOptions, initial: Checkpoint): SegmentedLog {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    for (const f of readdirSync(dir)) if (f.endsWith(".tmp")) rmSync(join(dir, f), { force: true });
    let bases = readdirSync(dir)
      .map((f) => SEGMENT_FILE.exec(f)?.[1])
      .filter((b): b is string => b !== undefined)
      .map(Number)
      .sort((a, b) => a - b);
    // A new log's first checkpoint is synced with the segment's first sync (Segment.create): a
    // crash before it can lose it, and the log then held nothing the Raft log lacks.
    if (
      bases.length === 1 &&
      bases[0] === initial.index + 1 &&
      !Segment.checkpointReadable(dir, bases[0])
    ) {
      Segment.removeFiles(dir, bases[0]);
      bases = [];
    }
    const segments: Segment[] = [];
    const repairs: OpenReport["repairs"] = [];
    let indexesRebuilt = 0;
    let droppedAfterGap = 0;
    let mergedRemoved = 0;
    for (const [i, base] of bases.entries()) {
      const previous = segments[segments.length - 1];
      if (previous !== undefined && base <= previous.lastIndex()) {
        // Inside the segment before it: a clean merged it there and stopped before its files went.
        Segment.removeFiles(dir, base);
        mergedRemoved++;
        continue;
      }
      if (previous !== undefined && previous.lastIndex() + 1 !== base) {
        // An earlier segment lost its tail: what follows cannot be reached. Drop it.
        Segment.removeFiles(dir, base);
        droppedAfterGap++;
        continue;
      }
      const s = Segment.open(dir, base, options, i === bases.length - 1);
      if (s.repair) repairs.push({ ...s.repair, segment: base, sealed: i < bases.length - 1 });
      if (s.indexRebuilt) indexesRebuilt++;
      segments.push(s);
    }
    if (segments.length === 0) segments.push(Segment.create(dir, initial, options, false));
    // The log's very first checkpoint may never have been synced (create, prepare): the first
    // sync of this process makes sure it is, before anything relies on the segment.
    else if (segments[0]!.baseIndex === initial.index + 1) segments[0]!.markCheckpointUnsynced();
    const log = new SegmentedLog(dir, segments, options, {
      segments: segments.length,
      repairs,
      indexesRebuilt,
      droppedAfterGap,
      mergedRemoved,
    });
    // A log cut short (a torn tail, files lost) applies what follows again, raw: dirty.
    log.cleanPoint = readCleanPoint(dir);
    log.lowerCleanPoint(log.nextOffset());
    return log;
  }

  private get active(): Segment {
    return this.segments[this.segments.length - 1]!;
  }
  private get oldest(): Segment {
    return this.segments[0]!;
  }

  firstIndex(): number {
    return this.oldest.baseIndex;
  }
  lastIndex(): number {
    return this.active.lastIndex();
  }
  lastTerm(): number {
    return this.active.lastTerm();
  }
  logStartOffset(): bigint {
    return this.oldest.baseOffset;
  }
  nextOffset(): bigint {
    return this.active.nextOffset();
  }
  segmentCount(): number {
    return this.segments.length;
  }
  /** The state before the first retained entry (what a follower behind the log installs). */
  checkpoint(): Checkpoint {
    return this.oldest.checkpoint;
  }

  bytes(): number {
    let n = 0;
    for (const s of this.segments) n += s.bytes();
    return n;
  }

  /** Term of an entry in the log, or of the entry just before it; undefined outside. */
  term(index: number): number | undefined {
    const s = this.segmentForIndex(index + 1) ?? this.segmentForIndex(index);
    return s?.termAt(index);
  }

  private segmentForIndex(index: number): Segment | undefined {
    const i = floorBy(this.segments, (s) => s.baseIndex, index);
    if (i < 0) return undefined;
    const s = this.segments[i]!;
    return index <= s.lastIndex() + 1 ? s : undefined;
  }

  // ---- writes -------------------------------------------------------------------------

  append(r: LogRecord): void {
    this.active.append(r);
    if (this.cachingTail) this.tail.push(r);
  }

  /**
   * Whether appends go to the tail cache: only a leader serves fetches and followers, so a
   * follower keeps none (its entries would be copies out of transport frames, for nothing).
   */
  setTailCaching(on: boolean): void {
    this.cachingTail = on;
    if (!on) this.tail.clear();
  }

  /** Whether a record of this size, applied at this replicated time, starts a new segment. */
  shouldRoll(
    recordBytes: number,
    appendTimeMs: number,
    segmentBytes = this.options.segmentBytes,
    segmentMs = this.options.segmentMs,
  ): boolean {
    const a = this.active;
    if (a.isEmpty()) return false;
    if (a.bytes() + recordBytes > segmentBytes) return true;
    return (
      segmentMs >= 0 &&
      a.firstAppendTimeMs() > 0 &&
      appendTimeMs - a.firstAppendTimeMs() >= segmentMs
    );
  }

  /** Seals the active segment and starts a new one after the checkpoint. */
  roll(checkpoint: Checkpoint): void {
    const a = this.active;
    assert(
      checkpoint.index === a.lastIndex(),
      () => `roll at ${checkpoint.index}, log ends at ${a.lastIndex()}`,
    );
    // Sealed: synced in the background (appliedLog.sync() waits for it before any compaction).
    a.seal();
    void a.sync().catch(() => undefined);
    this.segments.push(Segment.create(this.dir, checkpoint, this.options));
  }

  /** Segments from the oldest, for retention decisions (the active one last). */
  *segmentInfos(): Generator<{
    baseIndex: number;
    bytes: number;
    lastAppendTimeMs: number;
    nextOffset: bigint;
    isActive: boolean;
  }> {
    for (let i = 0; i < this.segments.length; i++) {
      const s = this.segments[i]!;
      yield {
        baseIndex: s.baseIndex,
        bytes: s.bytes(),
        lastAppendTimeMs: s.lastAppendTimeMs(),
        nextOffset: s.nextOffset(),
        isActive: i === this.segments.length - 1,
      };
    }
  }

  /** Removes the oldest n segments (never the active one); the log start moves forward. */
  removeOldest(n: number): number {
    const count = Math.min(n, this.segments.length - 1);
    if (count <= 0) return 0;
    for (const s of this.segments.splice(0, count)) s.remove();
    syncDirectory(this.dir);
    if (this.options.stats) this.options.stats.segmentsRemoved += count;
    const first = this.firstIndex();
    this.tail.dropBefore(first);
    this.ahead.dropBefore(first);
    return count;
  }

  /** Drops every entry after index (a restore to an older snapshot); false when the log does not reach it. */
  truncateAfter(index: number): boolean {
    if (index < this.firstIndex() - 1) return false;
    while (this.segments.length > 1 && this.active.baseIndex > index + 1)
      this.segments.pop()!.remove();
    const reached = this.active.truncateAfter(index);
    this.tail.dropAfter(index);
    this.ahead.dropAfter(index);
    this.rewrites++;
    // Before anything is appended again: what follows is applied again, raw.
    this.lowerCleanPoint(this.nextOffset());
    return reached;
  }

  /** Replaces the whole log with an empty one after the checkpoint (an installed snapshot). */
  resetTo(checkpoint: Checkpoint): void {
    for (const s of this.segments) s.remove();
    this.tail.clear();
    this.ahead.clear();
    this.segments = [Segment.create(this.dir, checkpoint, this.options)];
    this.rewrites++;
    this.lowerCleanPoint(this.nextOffset());
  }

  // ---- the clean point (clean-point.ts) ---------------------------------------------------

  /** The first dirty offset: a clean covered the log below it (0 before any). */
  firstDirtyOffset(): bigint {
    return this.cleanPoint;
  }

  /** A token cleanedUpTo() checks: it changes whenever records below the clean point may have. */
  rewriteCount(): number {
    return this.rewrites;
  }

  /**
   * A clean that started at rewriteCount() `since` covered the log up to end (exclusive): the
   * point moves up there and is stored, durably, after the clean's swaps. False, and nothing
   * stored, when the log was truncated, reset or repaired meanwhile (what it cleaned may be gone).
   */
  cleanedUpTo(end: bigint, since: number): boolean {
    if (since !== this.rewrites || this.closed) return false;
    assert(
      end <= this.nextOffset(),
      () => `clean point ${end} past the log end ${this.nextOffset()}`,
    );
    if (end > this.cleanPoint) {
      writeCleanPoint(this.dir, end);
      this.cleanPoint = end;
    }
    return true;
  }

  /** Lowers the clean point to offset (stored first) when it is above it. */
  private lowerCleanPoint(offset: bigint): void {
    if (this.cleanPoint <= offset) return;
    writeCleanPoint(this.dir, offset);
    this.cleanPoint = offset;
  }

  /** fsync of everything appended so far, in the thread pool. */
  async sync(): Promise<void> {
    for (const s of this.segments) await s.sync();
  }

  // ---- reads for the Raft core ------------------------------------------------------------

  /**
   * Entries [lo, hi) from the cache, at most about maxBytes; undefined when lo is not cached
   * (a read-ahead from lo starts; onReadAhead listeners hear when it lands).
   */
  cached(lo: number, hi: number, maxBytes: number): LogRecord[] | undefined {
    const fromTail = this.tail.slice(lo, hi, maxBytes);
    if (fromTail !== undefined) return fromTail;
    const fromAhead = this.ahead.slice(lo, hi, maxBytes);
    if (fromAhead !== undefined) {
      const lastLoaded = this.ahead.last()!.index;
      const lastServed = fromAhead[fromAhead.length - 1]!.index;
      // Half of the window served: load the next part while this one is being sent.
      if (lastLoaded - lastServed < (lastLoaded - this.ahead.first()!.index) / 2)
        this.readAhead(lastLoaded + 1);
      return fromAhead;
    }
    this.readAhead(lo);
    return undefined;
  }

  onReadAhead(listener: () => void): () => void {
    this.readAheadListeners.add(listener);
    return () => this.readAheadListeners.delete(listener);
  }

  private readAhead(lo: number): void {
    if (this.loading || this.closed) return;
    const tailFirst = this.tail.first()?.index ?? this.lastIndex() + 1;
    if (lo >= tailFirst || lo < this.firstIndex() || lo > this.lastIndex()) return;
    // At most a quarter of the cache, so the window it fills is not evicted before it is used.
    const bytes = Math.max(
      64 * 1024,
      Math.min(this.options.readAheadBytes, this.options.cache.bytesMax / 4),
    );
    void this.readByIndex(lo, bytes, tailFirst)
      .then((records) => {
        for (const r of records) this.ahead.push(r);
      })
      // A failed read-ahead is retried by the next miss (damage is reported); a broken invariant
      // stops the process.
      .catch((e: unknown) => void haltOnAssertion(e))
      .finally(() => {
        this.loading = false;
        for (const l of this.readAheadListeners) l();
      });
    this.loading = true;
  }

  /** Records from Raft index lo on (at most about maxBytes, stopping before index `stop`). */
  async readByIndex(
    lo: number,
    maxBytes: number,
    stop = Number.MAX_SAFE_INTEGER,
  ): Promise<LogRecord[]> {
    const out: LogRecord[] = [];
    let bytes = 0;
    let index = lo;
    while (bytes < maxBytes && index < stop) {
      const s = this.segmentForIndex(index);
      if (s === undefined || index > s.lastIndex()) break;
      let position = s.positionForIndex(index);
      while (bytes < maxBytes && index <= s.lastIndex() && index < stop) {
        const got = await this.readChecked(
          s,
          position,
          Math.max(64 * 1024, maxBytes - bytes),
          out.length,
        );
        if (got === undefined) return out;
        const { records, end } = got;
        if (records.length === 0) return out;
        for (const r of records) {
          if (r.index < index) continue;
          if (r.index >= stop || (out.length > 0 && bytes + r.data.byteLength > maxBytes))
            return out;
          assert(r.index === index, () => `${this.dir}: read index ${r.index}, expected ${index}`);
          out.push(r);
          bytes += recordSize(r);
          index++;
        }
        position = end;
      }
    }
    return out;
  }

  // ---- damage ------------------------------------------------------------------------------

  /**
   * A segment read whose checksum failure is reported as damage. With records already gathered
   * (served > 0) it answers undefined instead of throwing: the caller returns what it has, the
   * sound records before the damage, and never reads past it.
   */
  private async readChecked(
    s: Segment,
    position: number,
    maxBytes: number,
    served = 0,
  ): Promise<Awaited<ReturnType<Segment["read"]>> | undefined> {
    try {
      return await s.read(position, maxBytes);
    } catch (e) {
      if (isTernError(e, "CORRUPT_MESSAGE"))
        this.noteDamage(
          s,
          {
            position: typeof e.details.position === "number" ? e.details.position : position,
            reason: e.message,
          },
          "read",
        );
      if (served > 0 && isTernError(e, "CORRUPT_MESSAGE")) return undefined;
      throw e;
    }
  }

  /** Hears of each damaged segment once (found by a read or by scrub()). */
  onDamage(listener: (d: DamageReport) => void): () => void {
    this.damageListeners.add(listener);
    return () => this.damageListeners.delete(listener);
  }

  /** Damaged segments found so far and not repaired. */
  damage(): DamageReport[] {
    return [...this.damaged.values()];
  }

  private noteDamage(
    where: Segment | Pick<DamageReport, "file" | "firstIndex" | "lastIndex">,
    d: SegmentDamage,
    foundBy: DamageReport["foundBy"],
  ): DamageReport | undefined {
    const at =
      where instanceof Segment
        ? { file: where.logPath(), firstIndex: where.baseIndex, lastIndex: where.lastIndex() }
        : where;
    if (this.damaged.has(at.firstIndex)) return undefined;
    const report: DamageReport = { ...d, ...at, foundBy };
    this.damaged.set(at.firstIndex, report);
    if (this.options.stats) this.options.stats.segmentsDamaged++;
    for (const l of this.damageListeners) l(report);
    return report;
  }

  /**
   * Starts rewriting the damaged sealed segment that begins at baseIndex from a sound replica's
   * records (segment-replacement.ts); undefined when no sealed segment begins there (removed by
   * retention, or the active one: a restart checks that one record by record and cuts it).
   */
  beginReplacement(baseIndex: number): SegmentReplacement | undefined {
    const old = this.sealedSegment(baseIndex);
    if (old === undefined) return undefined;
    return new SegmentReplacement(old, `${old.logPath()}.repair.tmp`, (r) => this.swapIn(old, r));
  }

  private sealedSegment(baseIndex: number): Segment | undefined {
    const i = this.segments.findIndex((s) => s.baseIndex === baseIndex);
    return i < 0 || i === this.segments.length - 1 || this.closed ? undefined : this.segments[i];
  }

  /**
   * The replacement's synced file takes the damaged one's name (rename, then a directory sync),
   * and is opened with its index rebuilt by a scan. Synchronous from the check on, so nothing
   * removes the segment in between. Reads in flight finish on the old file (closed after them).
   */
  private swapIn(old: Segment, r: SegmentReplacement): boolean {
    const i = this.segments.indexOf(old);
    if (i < 0 || i === this.segments.length - 1 || this.closed) return false;
    // Another replica's copy may be less cleaned than this one: dirty from it on, stored first.
    this.rewrites++;
    this.lowerCleanPoint(old.baseOffset);
    const path = old.logPath();
    renameSync(r.tmpPath, path);
    syncDirectory(this.dir);
    noteSynced(path, statSync(path).size);
    const fresh = Segment.open(this.dir, old.baseIndex, this.options, true);
    // Every record was checked before it was written.
    assert(
      fresh.repair === undefined &&
        fresh.lastIndex() === old.lastIndex() &&
        fresh.nextOffset() === old.nextOffset(),
      () =>
        `${path}: the replacement opened at index ${fresh.lastIndex()}, next offset ${fresh.nextOffset()}, not ${old.lastIndex()}, ${old.nextOffset()}`,
    );
    this.segments[i] = fresh;
    old.close();
    this.damaged.delete(old.baseIndex);
    if (this.options.stats) this.options.stats.segmentsRepaired++;
    return true;
  }

  // ---- compaction (log-cleaner.ts) ------------------------------------------------------

  /** The sealed segments, oldest first: what a clean may rewrite (never the active one). */
  sealedSegments(): readonly Segment[] {
    return this.closed ? [] : this.segments.slice(0, -1);
  }

  /** Records of a segment from position on (about maxBytes), checked; damage is reported as a read's. */
  readSegment(s: Segment, position: number, maxBytes: number): ReturnType<Segment["read"]> {
    return this.readChecked(s, position, maxBytes) as ReturnType<Segment["read"]>;
  }

  /**
   * Swaps a cleaned copy in for adjacent sealed segments, one or several merged (docs/storage.md,
   * "Compaction", the swap): the first one's index goes, the synced log file is renamed over the
   * first one's log (the commit point), the others' files go (checkpoint last: opening removes a
   * segment inside the one before it), then the index is renamed in, and the new segment is
   * opened in their place. False, with nothing renamed, when the segments are no longer there as
   * they were (removed, truncated, replaced). Synchronous from the check on, so nothing changes
   * them in between; reads in flight finish on the old files.
   */
  swapCleaned(
    group: readonly Segment[],
    lastIndexes: readonly number[],
    tmpLog: string,
    tmpIndex: string,
    files: CleanerFiles,
  ): boolean {
    const i = this.segments.indexOf(group[0]!);
    if (
      i < 0 ||
      i + group.length > this.segments.length - 1 ||
      this.closed ||
      group.some((s, k) => this.segments[i + k] !== s || s.lastIndex() !== lastIndexes[k])
    )
      return false;
    const path = group[0]!.logPath();
    const indexPath = `${path.slice(0, -".log".length)}.index`;
    // Before the commit point: a failure leaves the old log (an index missing is rebuilt from
    // it). The unlink is made durable first, so the old index never sits beside the new log.
    files.unlink(indexPath);
    files.syncDirectory(this.dir);
    files.rename(tmpLog, path);
    // After it: the new log is the segment, whatever fails from here on.
    let indexInPlace = false;
    try {
      files.syncDirectory(this.dir);
      if (group.length > 1) {
        for (const s of group.slice(1)) {
          const base = s.logPath().slice(0, -".log".length);
          files.unlink(`${base}.log`);
          files.unlink(`${base}.index`);
          files.unlink(`${base}.checkpoint`);
        }
        files.syncDirectory(this.dir);
      }
      files.rename(tmpIndex, indexPath);
      indexInPlace = true;
    } finally {
      this.openCleaned(group, i, indexInPlace);
    }
    return true;
  }

  private openCleaned(group: readonly Segment[], i: number, indexInPlace: boolean): void {
    const old = group[0]!;
    const last = group.at(-1)!;
    const path = old.logPath();
    noteSynced(path, statSync(path).size);
    if (!indexInPlace) rmSync(`${path.slice(0, -".log".length)}.index`, { force: true });
    const fresh = Segment.open(this.dir, old.baseIndex, this.options, !indexInPlace);
    assert(
      fresh.repair === undefined &&
        fresh.lastIndex() === last.lastIndex() &&
        fresh.lastTerm() === last.lastTerm() &&
        fresh.nextOffset() === last.nextOffset(),
      () =>
        `${path}: the cleaned segment opened at index ${fresh.lastIndex()}, next offset ${fresh.nextOffset()}, not ${last.lastIndex()}, ${last.nextOffset()}`,
    );
    this.segments.splice(i, group.length, fresh);
    // Their files are gone (or go at the next open): the descriptors close after reads in flight.
    for (const s of group) s.close();
    // Cached copies of their records are the raw ones: served from the file from now on.
    const after = last.lastIndex() + 1;
    if ((this.tail.first()?.index ?? after) < after) this.tail.dropBefore(after);
    if ((this.ahead.first()?.index ?? after) < after) this.ahead.dropBefore(after);
  }

  /**
   * Checks every record of every sealed segment (open trusts them up to their index's last
   * entry), one at a time through the thread pool; reports what it finds, and what open found:
   * a sealed segment cut short, or segments dropped after one. The active one was checked
   * record by record at open. Returns the damage it reported.
   */
  async scrub(): Promise<DamageReport[]> {
    const found: DamageReport[] = [];
    const openRepairs = this.openRepairsReported ? [] : this.report.repairs;
    this.openRepairsReported = true;
    for (const r of openRepairs) {
      if (!r.sealed || this.damaged.has(r.segment)) continue;
      const d = this.noteDamage(
        {
          file: join(this.dir, `${segmentName(r.segment)}.log`),
          firstIndex: r.segment,
          lastIndex: r.segment - 1,
        },
        {
          position: r.position,
          reason: `${r.problem} at open: cut there, ${this.report.droppedAfterGap} later segments dropped; the entries after the replica's snapshot are applied again from its Raft log`,
        },
        "open",
      );
      if (d !== undefined) found.push(d);
      // Open cut it and the replica still opened: its snapshot lies at or before the cut, and the
      // entries after it are applied again from its Raft log, which makes the log whole again.
      this.damaged.delete(r.segment);
      if (this.options.stats) this.options.stats.segmentsRepaired++;
    }
    for (const s of this.segments.slice(0, -1)) {
      if (this.closed) break;
      if (this.damaged.has(s.baseIndex)) continue;
      const d = await s.verify();
      const report = d === undefined ? undefined : this.noteDamage(s, d, "scrub");
      if (report !== undefined) found.push(report);
    }
    return found;
  }

  // ---- reads for consumers ----------------------------------------------------------------

  /**
   * Offset-bearing records whose offsets end after `offset`, in order, about maxBytes of them
   * (at least one). Served from the tail cache when it covers the offset, else from the files.
   */
  async readByOffset(offset: bigint, maxBytes: number): Promise<LogRecord[]> {
    const cachedAt = this.tail.findOffset(offset);
    if (cachedAt !== undefined) {
      const out: LogRecord[] = [];
      let bytes = 0;
      for (let i = cachedAt; ; i++) {
        const r = this.tail.at(i);
        if (r === undefined) break;
        if (r.offsetCount === 0 || nextOffsetAfter(r) <= offset) continue;
        if (out.length > 0 && bytes + r.data.byteLength > maxBytes) break;
        out.push(r);
        bytes += r.data.byteLength;
      }
      return out;
    }
    return this.readFilesByOffset(offset, maxBytes);
  }

  private async readFilesByOffset(offset: bigint, maxBytes: number): Promise<LogRecord[]> {
    const out: LogRecord[] = [];
    let bytes = 0;
    let i = floorBy(this.segments, (s) => s.baseOffset, offset);
    // Several segments may start at the same offset (none of their entries took one): take the first.
    while (i > 0 && this.segments[i - 1]!.baseOffset === this.segments[i]!.baseOffset) i--;
    for (; i >= 0 && i < this.segments.length && bytes < maxBytes; i++) {
      const s = this.segments[i]!;
      if (s.nextOffset() <= offset) continue;
      let position = s.positionForOffset(offset);
      // The index names a record at or before `offset` (floor); offsets are contiguous within a
      // segment. A first record past `offset` is a wrong index: serving from there would skip
      // records silently.
      let fromIndex = position > 0;
      for (;;) {
        const got = await this.readChecked(
          s,
          position,
          Math.max(64 * 1024, maxBytes - bytes),
          out.length,
        );
        if (got === undefined) return out;
        const { records, end } = got;
        if (records.length === 0) break;
        for (const r of records) {
          if (fromIndex && r.offsetCount > 0) {
            assert(
              r.baseOffset <= offset,
              () =>
                `${this.dir}: the index of segment ${s.baseIndex} gave position ${position} for offset ${offset}, where offset ${r.baseOffset} is`,
            );
            fromIndex = false;
          }
          if (r.offsetCount === 0 || nextOffsetAfter(r) <= offset) continue;
          if (out.length > 0 && bytes + r.data.byteLength > maxBytes) return out;
          out.push(r);
          bytes += r.data.byteLength;
        }
        position = end;
        if (bytes >= maxBytes) return out;
      }
    }
    return out;
  }

  /**
   * The first offset-bearing record whose largest timestamp is at or after ts, among those with
   * an offset at or after fromOffset (a log start moved by DeleteRecords inside a segment).
   */
  async findTimestamp(ts: number, fromOffset = 0n): Promise<LogRecord | undefined> {
    for (const s of this.segments) {
      if (s.maxTimestampMs() < ts || s.nextOffset() <= fromOffset) continue;
      let position = s.positionForTimestamp(ts);
      for (;;) {
        const { records, end } = (await this.readChecked(s, position, 256 * 1024))!;
        if (records.length === 0) break;
        for (const r of records)
          if (r.offsetCount > 0 && r.maxTimestampMs >= ts && nextOffsetAfter(r) > fromOffset)
            return r;
        position = end;
      }
    }
    return undefined;
  }

  /**
   * The largest record timestamp among the segments holding offsets at or after fromOffset
   * (-1 when none has one): with findTimestamp, the record Kafka's ListOffsets MAX_TIMESTAMP names.
   */
  maxTimestampMs(fromOffset = 0n): number {
    let max = -1;
    for (const s of this.segments)
      if (s.nextOffset() > fromOffset && s.maxTimestampMs() > max) max = s.maxTimestampMs();
    return max;
  }

  /** Closes the files once the queued writes have landed (resolves then). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.options.cache.forget(this.tail);
    this.options.cache.forget(this.ahead);
    this.readAheadListeners.clear();
    const segments = this.segments;
    await Promise.all(segments.map((s) => s.flushed().catch(() => undefined)));
    for (const s of segments) s.close();
  }

  /** Resolves once every append so far is on the files (not necessarily durable). */
  async flushed(): Promise<void> {
    for (const s of this.segments) await s.flushed();
  }

  /** Closes and deletes every file (the replica left this node). */
  destroy(): void {
    void this.close();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Index of the last element whose key is <= v (keys non-decreasing); -1 when none. */
function floorBy<T, K extends number | bigint>(
  items: readonly T[],
  key: (t: T) => K,
  v: K,
): number {
  let lo = 0;
  let hi = items.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (key(items[mid]!) <= v) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}
