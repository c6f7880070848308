// One segment of a partition replica's log: <base>.log holds applied entries as records
// (log-record.ts) from Raft index <base> on, <base>.index its sparse index, <base>.checkpoint the
// state before it. Appends are queued and written one writev of everything queued at a time:
// by the libuv thread pool (copying into the page cache costs about 2 ms per MB on this VM: not
// on the event loop), or, when at most SYNC_WRITE_BYTES_MAX are queued, on the event loop one
// iteration after the append (a thread-pool write costs two thread hand-offs, more than the
// copy of a few KiB; the iteration lets the turn that applied it send its answers first).
// fsync happens when the host asks (before it compacts the Raft
// entries the segment now holds). Reads go through the thread pool too and never look past
// what has been written, so a cold read never blocks the event loop. Opening reads the index and
// scans only from its last entry to the end, truncating a torn or corrupt tail there.
import { nextLoopIteration, SYNC_WRITE_BYTES_MAX } from "../common/loop-writes.js";
import { noteSynced } from "../common/sync-manifest.js";
import {
  closeSync,
  existsSync,
  fdatasync,
  fstatSync,
  ftruncateSync,
  openSync,
  read,
  readSync,
  rmSync,
  writev,
  writevSync,
} from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { rename, writeFile } from "node:fs/promises";
import {
  encodeCheckpoint,
  readCheckpoint,
  syncFileAndDirectory,
  syncFileAndDirectoryNow,
  writeCheckpoint,
  writeCheckpointUnsynced,
  type Checkpoint,
} from "./checkpoint.js";
import {
  appendTimeOfHeader,
  corrupt,
  decodeRecordAt,
  encodeRecordHeader,
  nextOffsetAfter,
  recordLengthAt,
  recordSize,
  type LogRecord,
  type RecordProblem,
} from "./log-record.js";
import { SegmentIndex, type IndexEntry } from "./segment-index.js";
import type { StorageStats } from "./storage-stats.js";
import type { TernError } from "../common/errors.js";
import { assert } from "../common/assert.js";
import type { Failpoints } from "../common/failpoints.js";

/** The planted fault of positionForOffset (test/integration/storage-invariant.test.ts). */
export const DAMAGED_INDEX_FAULT = "storage.index-points-past";

const readAsync = promisify(read);
const fdatasyncAsync = promisify(fdatasync);
const writevAsync = promisify(writev);
/** Buffers one queued write takes at most (IOV_MAX is 1024 on Linux). */
const WRITE_BUFFERS_MAX = 1000;
const SCAN_CHUNK_BYTES = 4 * 1024 * 1024;
const BASE_DIGITS = 20;

export interface SegmentOptions {
  /** Bytes of records between sparse index entries. */
  readonly indexIntervalBytes: number;
  readonly stats?: StorageStats;
  /** The process's failpoints, for the planted DAMAGED_INDEX_FAULT; none armed when absent. */
  readonly failpoints?: Failpoints | undefined;
}

export function segmentName(baseIndex: number): string {
  return String(baseIndex).padStart(BASE_DIGITS, "0");
}

/** Where a check of a whole segment found its first bad record, and why. */
export interface SegmentDamage {
  readonly position: number;
  readonly reason: string;
}

/** Where a scan stopped short of the file's end, and why. */
export interface TailRepair {
  readonly position: number;
  readonly fileBytes: number;
  readonly problem: RecordProblem | "index";
}

export class Segment {
  /** Bytes of whole records; writes go here. */
  private size: number;
  private lastIdx: number;
  private lastTrm: number;
  private next: bigint;
  private maxTs: number;
  private firstAppendMs = -1;
  private lastAppendMs = -1;
  private sinceIndexEntry = 0;
  private dirty = false;
  /** Reads in flight: closing waits for them, so a read never touches a reused descriptor. */
  private reading = 0;
  private closeWhenIdle = false;
  private syncing: Promise<void> | undefined;
  /** The checkpoint file was written without fsync: the next sync makes it durable first. */
  private checkpointUnsynced = false;
  /** Bytes on the file (written by completed writes); size counts the queued ones too. */
  private written = 0;
  private queued: Uint8Array[] = [];
  private writing: Promise<void> | undefined;
  private writeError: Error | undefined;
  private writeWaiters: Array<{ target: number; resolve: () => void }> = [];
  /** Set when opening had to cut the file or rebuild the index (for the caller's log). */
  repair: TailRepair | undefined;
  indexRebuilt = false;

  private constructor(
    readonly dir: string,
    readonly checkpoint: Checkpoint,
    private readonly fd: number,
    private readonly index: SegmentIndex,
    private readonly options: SegmentOptions,
  ) {
    this.size = 0;
    this.lastIdx = checkpoint.index;
    this.lastTrm = checkpoint.term;
    this.next = checkpoint.nextOffset;
    this.maxTs = -1;
  }

  get baseIndex(): number {
    return this.checkpoint.index + 1;
  }
  get baseOffset(): bigint {
    return this.checkpoint.nextOffset;
  }
  lastIndex(): number {
    return this.lastIdx;
  }
  lastTerm(): number {
    return this.lastTrm;
  }
  nextOffset(): bigint {
    return this.next;
  }
  bytes(): number {
    return this.size;
  }
  maxTimestampMs(): number {
    return this.maxTs;
  }
  /** Replicated clock at the first timed and the last record (-1 when empty, 0 before a timed one). */
  firstAppendTimeMs(): number {
    return this.firstAppendMs;
  }
  lastAppendTimeMs(): number {
    return this.lastAppendMs;
  }
  isEmpty(): boolean {
    return this.lastIdx < this.baseIndex;
  }

  private static paths(
    dir: string,
    baseIndex: number,
  ): { log: string; index: string; checkpoint: string } {
    const name = segmentName(baseIndex);
    return {
      log: join(dir, `${name}.log`),
      index: join(dir, `${name}.index`),
      checkpoint: join(dir, `${name}.checkpoint`),
    };
  }

  /**
   * A new, empty segment after the checkpoint (written and synced first: it names the segment).
   * `synced: false` (a new log's first segment) skips the checkpoint's fsyncs until the
   * segment's first sync(): a crash before it may lose the checkpoint, and then nothing else
   * (sync() is what the host waits for before it compacts the Raft log: the entries are all
   * still there), which SegmentedLog.open treats as a log never created.
   */
  static create(
    dir: string,
    checkpoint: Checkpoint,
    options: SegmentOptions,
    synced = true,
  ): Segment {
    const p = Segment.paths(dir, checkpoint.index + 1);
    if (synced) writeCheckpoint(p.checkpoint, checkpoint);
    else writeCheckpointUnsynced(p.checkpoint, checkpoint);
    rmSync(p.index, { force: true });
    const fd = openSync(p.log, "w+");
    const segment = new Segment(dir, checkpoint, fd, new SegmentIndex(p.index), options);
    segment.checkpointUnsynced = !synced;
    return segment;
  }

  /**
   * The files create(dir, checkpoint, options, false) would write, written from the thread pool
   * (a new partition's files, off the event loop); open() then opens them and
   * markCheckpointUnsynced() says what create() would have recorded.
   */
  static async prepareFiles(dir: string, checkpoint: Checkpoint): Promise<void> {
    const p = Segment.paths(dir, checkpoint.index + 1);
    const tmp = `${p.checkpoint}.tmp`;
    await writeFile(tmp, encodeCheckpoint(checkpoint));
    await rename(tmp, p.checkpoint);
    await writeFile(p.log, new Uint8Array(0));
  }

  /** The checkpoint file may not be durable (prepareFiles, a reopened first segment): sync() makes it so first. */
  markCheckpointUnsynced(): void {
    this.checkpointUnsynced = true;
  }

  /** Whether the segment at baseIndex has a checkpoint file that decodes. */
  static checkpointReadable(dir: string, baseIndex: number): boolean {
    try {
      return readCheckpoint(Segment.paths(dir, baseIndex).checkpoint) !== undefined;
    } catch {
      return false;
    }
  }

  /**
   * Opens an existing segment. A sealed one (synced when it was rolled) is trusted up to its
   * index's last entry and checked from there; the active one (fullScan: its unsynced part may
   * be torn anywhere) is checked record by record, and its index rebuilt as it goes.
   */
  static open(dir: string, baseIndex: number, options: SegmentOptions, fullScan = false): Segment {
    const p = Segment.paths(dir, baseIndex);
    const checkpoint = readCheckpoint(p.checkpoint);
    if (checkpoint === undefined) throw corrupt(`${p.log}: no checkpoint file`);
    if (checkpoint.index + 1 !== baseIndex)
      throw corrupt(`${p.checkpoint}: names index ${checkpoint.index}, not ${baseIndex - 1}`);
    // create() writes the checkpoint, then the log: a crash between the two leaves a checkpoint
    // without a log. The active segment (fullScan) then held nothing durable: it opens empty, and
    // what it would have held is applied again from the Raft log, as after a torn tail. A sealed
    // segment without its log is damage (ENOENT).
    const fd = openSync(p.log, fullScan && !existsSync(p.log) ? "w+" : "r+");
    const segment = new Segment(dir, checkpoint, fd, new SegmentIndex(p.index), options);
    segment.recover(fstatSync(fd).size, fullScan);
    return segment;
  }

  private recover(fileBytes: number, fullScan: boolean): void {
    const indexOk = this.index.load(fileBytes);
    const last = this.index.last();
    let from: IndexEntry | undefined = indexOk ? last : undefined;
    if (from !== undefined && !this.recordIsAt(from.position, from.index, fileBytes))
      from = undefined;
    if (from === undefined || fullScan) {
      // The active segment (fullScan) keeps no index file until it is sealed: not a repair.
      this.indexRebuilt = !fullScan && from === undefined && fileBytes > 0;
      from = undefined;
    }
    this.resetTailTo(from);
    const stop = this.scan(fileBytes, from !== undefined);
    if (stop !== undefined) {
      this.repair = { position: this.size, fileBytes, problem: stop };
      ftruncateSync(this.fd, this.size);
    }
    // The active segment's file is never read (it is scanned whole): it is written when sealed.
    if (!fullScan && (this.indexRebuilt || stop !== undefined)) this.index.rewrite();
    this.written = this.size;
    this.readFirstAppendTime();
  }

  /**
   * The tail state as of the record an index entry names (it is scanned again), or as of the
   * checkpoint when there is none: the starting point of a scan.
   */
  private resetTailTo(from: IndexEntry | undefined): void {
    this.index.truncateAtPosition((from?.position ?? 0) + 1);
    if (from === undefined) this.index.clear();
    this.size = from?.position ?? 0;
    this.lastIdx = from ? from.index - 1 : this.checkpoint.index;
    this.lastTrm = from ? from.term : this.checkpoint.term;
    this.next = from ? BigInt(from.offset) : this.checkpoint.nextOffset;
    this.maxTs = from ? from.maxTimestampMs : -1;
    this.sinceIndexEntry = 0;
  }

  private recordIsAt(position: number, index: number, fileBytes: number): boolean {
    if (position + 8 > fileBytes) return false;
    const head = Buffer.allocUnsafe(8);
    readSync(this.fd, head, 0, 8, position);
    const size = recordLengthAt(head, 0);
    if (size === undefined || position + size > fileBytes) return false;
    const buf = Buffer.allocUnsafe(size);
    readSync(this.fd, buf, 0, size, position);
    const d = decodeRecordAt(buf, 0);
    return "record" in d && d.record.index === index;
  }

  /**
   * Reads records from the tail (size) to fileBytes, or until the record of index `keep`
   * (synchronously: only while opening or truncating), tracking the tail state and indexing as
   * appends do. Returns why it stopped early, if it did.
   */
  private scan(
    fileBytes: number,
    firstIsIndexed: boolean,
    keep = Number.MAX_SAFE_INTEGER,
  ): RecordProblem | undefined {
    let at = this.size;
    let skipIndex = firstIsIndexed;
    while (at < fileBytes) {
      const want = Math.min(SCAN_CHUNK_BYTES, fileBytes - at);
      let buf = Buffer.allocUnsafe(want);
      readSync(this.fd, buf, 0, want, at);
      let used = 0;
      for (;;) {
        let d = decodeRecordAt(buf, used);
        if ("problem" in d && d.problem === "short" && used === 0 && at + want < fileBytes) {
          // One record larger than the chunk: read it whole.
          const size = recordLengthAt(buf, 0);
          if (size === undefined || at + size > fileBytes) return "short";
          buf = Buffer.allocUnsafe(size);
          readSync(this.fd, buf, 0, size, at);
          d = decodeRecordAt(buf, 0);
        }
        if ("problem" in d) {
          if (d.problem === "short" && used > 0 && at + buf.byteLength < fileBytes) break; // the rest is in the next chunk
          this.size = at + used;
          return d.problem;
        }
        if (d.record.index !== this.lastIdx + 1 || d.record.term < this.lastTrm) {
          this.size = at + used;
          return "checksum";
        }
        this.track(d.record, at + used, d.size, !skipIndex);
        skipIndex = false;
        used += d.size;
        if (this.lastIdx >= keep) {
          this.size = at + used;
          return undefined;
        }
        if (used >= buf.byteLength) break;
      }
      at += used;
      this.size = at;
    }
    return undefined;
  }

  private readFirstAppendTime(): void {
    if (this.size === 0) return;
    const head = Buffer.allocUnsafe(Math.min(this.size, 64));
    readSync(this.fd, head, 0, head.byteLength, 0);
    this.firstAppendMs = appendTimeOfHeader(head);
  }

  /** Updates the tail state for a record written at position; adds an index entry when due. */
  private track(r: LogRecord, position: number, size: number, mayIndex: boolean): void {
    if (
      mayIndex &&
      (position === 0 ||
        this.sinceIndexEntry >= this.options.indexIntervalBytes ||
        r.term !== this.lastTrm)
    ) {
      this.index.add({
        index: r.index,
        term: r.term,
        offset: Number(this.next),
        position,
        maxTimestampMs: this.maxTs,
      });
      this.sinceIndexEntry = 0;
    }
    this.sinceIndexEntry += size;
    this.lastIdx = r.index;
    this.lastTrm = r.term;
    if (r.offsetCount > 0) this.next = nextOffsetAfter(r);
    if (r.maxTimestampMs > this.maxTs) this.maxTs = r.maxTimestampMs;
    // 0: the replicated clock before the log's first timed entry (a new group's conf change).
    if (this.firstAppendMs <= 0) this.firstAppendMs = r.appendTimeMs;
    this.lastAppendMs = r.appendTimeMs;
  }

  /** Appends one record (the next index); returns its encoded size. */
  append(r: LogRecord): number {
    assert(
      r.index === this.lastIdx + 1,
      () => `segment ${this.baseIndex}: append of ${r.index} after ${this.lastIdx}`,
    );
    assert(
      r.offsetCount === 0 || r.baseOffset === this.next,
      () => `segment ${this.baseIndex}: record at offset ${r.baseOffset}, next is ${this.next}`,
    );
    if (this.writeError !== undefined) throw this.writeError;
    const header = encodeRecordHeader(r);
    const size = header.byteLength + r.data.byteLength;
    this.queued.push(header);
    if (r.data.byteLength > 0) this.queued.push(r.data);
    const position = this.size;
    this.size += size;
    if (this.writing === undefined) this.writing = this.writeQueued();
    this.track(r, position, size, true);
    this.dirty = true;
    if (this.options.stats) this.options.stats.appendedBytes += size;
    return size;
  }

  /** Writes what is queued, in order, one writev at a time, until the queue is empty. */
  private async writeQueued(): Promise<void> {
    this.reading++; // the descriptor stays open until the writes return
    try {
      // Started with nothing in flight: everything not yet written is queued.
      if (this.size - this.written <= SYNC_WRITE_BYTES_MAX) await nextLoopIteration();
      while (this.queued.length > 0 && this.writeError === undefined) {
        const buffers = this.queued.splice(0, WRITE_BUFFERS_MAX);
        let bytes = 0;
        for (const b of buffers) bytes += b.byteLength;
        try {
          const bytesWritten =
            bytes <= SYNC_WRITE_BYTES_MAX
              ? writevSync(this.fd, buffers, this.written)
              : (await writevAsync(this.fd, buffers, this.written)).bytesWritten;
          if (bytesWritten !== bytes)
            throw new Error(
              `segment ${this.dir}/${segmentName(this.baseIndex)}: wrote ${bytesWritten} of ${bytes} bytes`,
            );
        } catch (e) {
          // The file now has a hole: no later record may land after it (the next append throws;
          // a restart cuts the segment there and applies those entries again from the Raft log).
          this.writeError = e as Error;
          return;
        }
        this.written += bytes;
        this.releaseWriteWaiters(false);
      }
    } finally {
      this.writing = undefined;
      this.releaseWriteWaiters(true);
      this.reading--;
      if (this.reading === 0 && this.closeWhenIdle) this.closeNow();
    }
  }

  /**
   * Resolves once every append made before the call is on the file (not necessarily durable).
   * Waits for those bytes only, not for an idle writer, so a reader is not starved by appends.
   */
  async flushed(): Promise<void> {
    const target = this.size;
    if (this.written < target && this.writeError === undefined) {
      await new Promise<void>((resolve) => this.writeWaiters.push({ target, resolve }));
    }
    if (this.writeError !== undefined) throw this.writeError;
  }

  private releaseWriteWaiters(all: boolean): void {
    if (this.writeWaiters.length === 0) return;
    const waiting = this.writeWaiters;
    this.writeWaiters = [];
    for (const w of waiting) {
      if (all || w.target <= this.written) w.resolve();
      else this.writeWaiters.push(w);
    }
  }

  private assertNoWrites(what: string): void {
    assert(
      this.writing === undefined && this.queued.length === 0,
      () => `segment ${this.dir}/${segmentName(this.baseIndex)}: ${what} while writes are queued`,
    );
  }

  /** Term of index, if it lies in this segment (or is its checkpoint's). */
  termAt(index: number): number | undefined {
    if (index === this.checkpoint.index) return this.checkpoint.term;
    if (index < this.baseIndex || index > this.lastIdx) return undefined;
    return this.index.termAt(index);
  }

  /** File position to start reading for Raft index `index` (at or before its record). */
  positionForIndex(index: number): number {
    const i = this.index.floorByIndex(index);
    return i < 0 ? 0 : this.index.at(i).position;
  }

  positionForOffset(offset: bigint): number {
    let i = this.index.floorByOffset(Number(offset));
    // A planted fault (tests only: TERN_FAILPOINTS): the in-memory index points one entry too far.
    if (
      this.options.failpoints?.faultArmed(DAMAGED_INDEX_FAULT) === true &&
      i + 1 < this.index.length
    )
      i++;
    return i < 0 ? 0 : this.index.at(i).position;
  }

  positionForTimestamp(ts: number): number {
    const i = this.index.floorBelowTimestamp(ts);
    return i < 0 ? 0 : this.index.at(i).position;
  }

  /**
   * Records from position on, about maxBytes of them (at least one whole record), checked.
   * A record that fails its checksum is never returned: the read fails instead.
   */
  async read(position: number, maxBytes: number): Promise<{ records: LogRecord[]; end: number }> {
    if (this.closeWhenIdle) return { records: [], end: position };
    // What is asked for may still be queued: wait for it (never read past the written part).
    if (position + maxBytes > this.written && this.written < this.size)
      await this.flushed().catch(() => undefined);
    this.reading++;
    try {
      return await this.readRecords(position, maxBytes);
    } finally {
      this.reading--;
      if (this.reading === 0 && this.closeWhenIdle) this.closeNow();
    }
  }

  private async readRecords(
    position: number,
    maxBytes: number,
  ): Promise<{ records: LogRecord[]; end: number }> {
    const end = this.written;
    if (position >= end) return { records: [], end: position };
    const want = Math.max(1, Math.min(maxBytes, end - position));
    let buf = Buffer.allocUnsafe(want);
    const { bytesRead } = await readAsync(this.fd, buf, 0, want, position);
    if (this.options.stats) this.options.stats.readBytes += bytesRead;
    buf = buf.subarray(0, bytesRead);
    const records: LogRecord[] = [];
    let used = 0;
    for (;;) {
      const d = decodeRecordAt(buf, used);
      if ("problem" in d) {
        // The sound records before a damaged one are served; the damaged one never is.
        if (d.problem !== "short" && records.length > 0) break;
        if (d.problem !== "short")
          throw corrupt(
            `segment ${this.dir}/${segmentName(this.baseIndex)}: ${d.problem} at position ${position + used}`,
            { segment: this.baseIndex, position: position + used },
          );
        if (records.length > 0) break;
        // The first record is larger than maxBytes: read exactly it.
        const size = recordLengthAt(buf, 0);
        if (size === undefined || position + size > end)
          throw corrupt(
            `segment ${this.dir}/${segmentName(this.baseIndex)}: bad length at position ${position}`,
            { segment: this.baseIndex, position },
          );
        return this.readRecords(position, size);
      }
      records.push(d.record);
      used += d.size;
      if (used >= buf.byteLength) break;
    }
    return { records, end: position + used };
  }

  /**
   * Reads the whole segment back through the thread pool and checks every record (length,
   * checksum, version, consecutive Raft indexes, the last one where the tail state says):
   * where and why the first bad one is, or undefined when all are sound. Sealed segments are
   * trusted at open up to their index's last entry; this is what finds a bit flipped before it.
   */
  async verify(): Promise<SegmentDamage | undefined> {
    const end = this.written;
    let position = 0;
    let expect = this.baseIndex;
    while (position < end) {
      if (this.closeWhenIdle) return undefined;
      let records: LogRecord[];
      let next: number;
      try {
        ({ records, end: next } = await this.read(position, SCAN_CHUNK_BYTES));
      } catch (e) {
        return {
          position: (e as TernError).details?.position as number,
          reason: (e as Error).message,
        };
      }
      if (records.length === 0) break;
      let at = position;
      for (const r of records) {
        if (r.index !== expect)
          return { position: at, reason: `record of index ${r.index} where ${expect} belongs` };
        expect++;
        at += recordSize(r);
      }
      position = next;
    }
    if (expect - 1 !== this.lastIdx)
      return { position, reason: `ends at index ${expect - 1}, not ${this.lastIdx}` };
    return undefined;
  }

  /** The file this segment's records are in. */
  logPath(): string {
    return join(this.dir, `${segmentName(this.baseIndex)}.log`);
  }

  /**
   * Cuts every record after `index` (synchronously: used while restoring). Returns false when
   * the segment does not reach index.
   */
  truncateAfter(index: number): boolean {
    if (index >= this.lastIdx) return index === this.lastIdx;
    this.assertNoWrites("truncation");
    const keep = Math.max(index, this.checkpoint.index);
    // Re-scan from the index entry at or before keep+1 to find where keep's record ends.
    const i = this.index.floorByIndex(keep + 1);
    const from = i < 0 ? undefined : this.index.at(i);
    const fileBytes = this.size;
    this.resetTailTo(from);
    // Scan forward to keep's record; everything after is dropped.
    const problem =
      keep > this.lastIdx ? this.scan(fileBytes, from !== undefined, keep) : undefined;
    if (problem !== undefined)
      throw corrupt(
        `segment ${this.dir}/${segmentName(this.baseIndex)}: ${problem} at ${this.size} while truncating`,
      );
    ftruncateSync(this.fd, this.size);
    this.written = this.size;
    this.index.rewrite();
    this.dirty = true;
    if (this.size === 0) {
      this.firstAppendMs = -1;
      this.lastAppendMs = -1;
    }
    return keep === index;
  }

  /**
   * No more appends (the log rolled past it): its index file is written now, for every later
   * open, and an unsynced checkpoint is synced before the next segment's durable one names a
   * later state (a crash must not keep the second and lose the first).
   */
  seal(): void {
    this.index.persist();
    if (this.checkpointUnsynced) {
      syncFileAndDirectoryNow(Segment.paths(this.dir, this.baseIndex).checkpoint);
      this.checkpointUnsynced = false;
    }
  }

  /**
   * fsync in the thread pool of everything appended before the call. A sync already in flight
   * may have started before the latest appends: it is waited for, then another runs if needed.
   */
  async sync(): Promise<void> {
    await this.flushed();
    while (this.syncing !== undefined) await this.syncing;
    if (this.closeWhenIdle) return;
    if (this.checkpointUnsynced) {
      // Before the data: a durable log never lacks its checkpoint.
      this.checkpointUnsynced = false;
      this.reading++;
      this.syncing = syncFileAndDirectory(Segment.paths(this.dir, this.baseIndex).checkpoint)
        .catch((e: unknown) => {
          this.checkpointUnsynced = true;
          throw e;
        })
        .finally(() => {
          this.syncing = undefined;
          this.reading--;
          if (this.reading === 0 && this.closeWhenIdle) this.closeNow();
        });
      await this.syncing;
      if (this.options.stats) this.options.stats.fsyncs += 2;
    }
    if (!this.dirty || this.closeWhenIdle) return;
    this.dirty = false;
    const covered = this.written;
    this.reading++; // the descriptor stays open until the fsync returns
    this.syncing = fdatasyncAsync(this.fd).finally(() => {
      this.syncing = undefined;
      this.reading--;
      if (this.reading === 0 && this.closeWhenIdle) this.closeNow();
    });
    await this.syncing;
    noteSynced(join(this.dir, `${segmentName(this.baseIndex)}.log`), covered);
    if (this.options.stats) this.options.stats.fsyncs++;
  }

  close(): void {
    if (this.closeWhenIdle) return;
    this.closeWhenIdle = true;
    if (this.reading === 0) this.closeNow();
  }

  private closeNow(): void {
    closeSync(this.fd);
  }

  /** Closes and deletes the segment's files. */
  remove(): void {
    this.close();
    Segment.removeFiles(this.dir, this.baseIndex);
  }

  /** Deletes a segment's files (also one that was never opened). */
  static removeFiles(dir: string, baseIndex: number): void {
    const p = Segment.paths(dir, baseIndex);
    rmSync(p.log, { force: true });
    rmSync(p.index, { force: true });
    rmSync(p.checkpoint, { force: true });
  }
}
