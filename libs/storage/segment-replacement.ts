// A damaged sealed segment rewritten from a sound replica's copy of its records (records are
// the same bytes on every replica: the same entry, offsets, timestamps and append time). The
// records arrive in chunks, in index order; each is checked against what this replica knows of
// the segment without reading its damaged file (its checkpoint, its sparse index's terms, its
// tail state) and written to a temporary file beside it. finish() syncs that file and hands it
// to SegmentedLog, which renames it over the damaged one and opens it (rebuilding its index).
// docs/storage.md, "Corruption and repair".
import { open, rm, type FileHandle } from "node:fs/promises";
import {
  corrupt,
  encodeRecordHeader,
  nextOffsetAfter,
  recordSize,
  type LogRecord,
} from "./log-record.js";
import type { Segment } from "./segment.js";
import { assert } from "../common/assert.js";

/** What the replacement of one segment checks its records against. */
export type ReplacedSegment = Pick<
  Segment,
  "baseIndex" | "baseOffset" | "checkpoint" | "lastIndex" | "lastTerm" | "nextOffset" | "termAt"
>;

export class SegmentReplacement {
  private nextIndex: number;
  private lastTerm: number;
  private nextOffset: bigint;
  private bytes = 0;
  private file: FileHandle | undefined;
  private done = false;

  constructor(
    private readonly segment: ReplacedSegment,
    /** The temporary file the records are written to. */
    readonly tmpPath: string,
    private readonly onFinish: (r: SegmentReplacement) => boolean,
  ) {
    this.nextIndex = segment.baseIndex;
    this.lastTerm = segment.checkpoint.term;
    this.nextOffset = segment.baseOffset;
  }

  /** The Raft index of the next record it needs (past lastIndex: it has them all). */
  get needsIndex(): number {
    return this.nextIndex;
  }
  get lastIndex(): number {
    return this.segment.lastIndex();
  }
  get baseIndex(): number {
    return this.segment.baseIndex;
  }
  /** Bytes written so far. */
  get writtenBytes(): number {
    return this.bytes;
  }
  complete(): boolean {
    return this.nextIndex > this.segment.lastIndex();
  }

  /**
   * Checks and writes the next records (from needsIndex on; records past the segment's last
   * index are ignored). A record that does not fit (its index, its term by this replica's own
   * index, its offsets) throws CORRUPT_MESSAGE and nothing of that chunk is written.
   */
  async append(records: readonly LogRecord[]): Promise<void> {
    assert(!this.done, () => `replacement of segment ${this.baseIndex} is over`);
    const parts: Uint8Array[] = [];
    let index = this.nextIndex;
    let term = this.lastTerm;
    let offset = this.nextOffset;
    let bytes = 0;
    for (const r of records) {
      if (index > this.segment.lastIndex()) break;
      const where = `segment ${this.baseIndex}, replacement record of index ${r.index}`;
      if (r.index !== index) throw corrupt(`${where}: index ${index} belongs here`);
      const knownTerm = this.segment.termAt(r.index);
      if (r.term < term || (knownTerm !== undefined && r.term !== knownTerm))
        throw corrupt(`${where}: term ${r.term}, this replica's index says ${knownTerm}`);
      if (r.offsetCount > 0) {
        if (r.baseOffset !== offset)
          throw corrupt(`${where}: base offset ${r.baseOffset}, ${offset} belongs here`);
        offset = nextOffsetAfter(r);
      } else if (r.baseOffset !== -1n) {
        throw corrupt(`${where}: base offset ${r.baseOffset} without offsets`);
      }
      if (r.index === this.segment.lastIndex()) {
        if (r.term !== this.segment.lastTerm() || offset !== this.segment.nextOffset())
          throw corrupt(
            `${where}: ends at term ${r.term}, next offset ${offset}; the segment ends at term ${this.segment.lastTerm()}, next offset ${this.segment.nextOffset()}`,
          );
      }
      parts.push(encodeRecordHeader(r));
      if (r.data.byteLength > 0) parts.push(r.data);
      bytes += recordSize(r);
      term = r.term;
      index++;
    }
    if (parts.length === 0) return;
    try {
      this.file ??= await open(this.tmpPath, "w", 0o600);
      // writev takes at most IOV_MAX buffers at a time.
      for (let i = 0; i < parts.length; i += 1000) await this.file.writev(parts.slice(i, i + 1000));
    } catch (e) {
      // The file may hold part of this chunk now: nothing more goes after it.
      this.done = true;
      throw e;
    }
    this.nextIndex = index;
    this.lastTerm = term;
    this.nextOffset = offset;
    this.bytes += bytes;
  }

  /**
   * Syncs the file and swaps it in for the damaged one. False when the segment is no longer
   * there to replace (retention removed it meanwhile, or the log was reset): nothing changed.
   */
  async finish(): Promise<boolean> {
    assert(
      this.complete(),
      () =>
        `segment ${this.baseIndex}: replacement has records up to ${this.nextIndex - 1} of ${this.lastIndex}`,
    );
    const file = this.file ?? (await open(this.tmpPath, "w", 0o600));
    this.file = undefined;
    try {
      await file.datasync();
    } finally {
      await file.close();
    }
    this.done = true;
    const swapped = this.onFinish(this);
    if (!swapped) await rm(this.tmpPath, { force: true });
    return swapped;
  }

  /** Drops the temporary file (a failed repair). */
  async abort(): Promise<void> {
    this.done = true;
    const file = this.file;
    this.file = undefined;
    await file?.close().catch(() => undefined);
    await rm(this.tmpPath, { force: true });
  }
}
