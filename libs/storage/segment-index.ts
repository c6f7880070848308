// The sparse index of one segment, in memory as typed columns and on disk as fixed 40-byte
// entries appended beside the segment (<base>.index). An entry names a record start: its Raft
// index and term, the next offset at that point, its file position, and the largest record
// timestamp before it. One entry per indexIntervalBytes of records, plus one at every term
// change, so term(i) is answered from the index alone. The file is derived: when it is missing,
// short, or disagrees with the segment it is rebuilt by scanning the segment. Only a sealed
// segment's file is ever read (the active one is scanned whole on open), so the file is written
// when the segment is sealed (persist()), not per entry: a new partition creates no index file.
import { closeSync, existsSync, openSync, readFileSync, writeSync } from "node:fs";

export const INDEX_ENTRY_BYTES = 40;
const INITIAL_CAPACITY = 64;

export interface IndexEntry {
  readonly index: number;
  readonly term: number;
  readonly offset: number;
  readonly position: number;
  readonly maxTimestampMs: number;
}

export class SegmentIndex {
  private idx: Float64Array = new Float64Array(INITIAL_CAPACITY);
  private term: Float64Array = new Float64Array(INITIAL_CAPACITY);
  private off: Float64Array = new Float64Array(INITIAL_CAPACITY);
  private pos: Float64Array = new Float64Array(INITIAL_CAPACITY);
  private ts: Float64Array = new Float64Array(INITIAL_CAPACITY);
  private n = 0;
  /** Entries the file holds as they are in memory (-1: the file may differ). */
  private fileEntries = -1;

  constructor(readonly path: string) {}

  get length(): number {
    return this.n;
  }

  at(i: number): IndexEntry {
    return {
      index: this.idx[i]!,
      term: this.term[i]!,
      offset: this.off[i]!,
      position: this.pos[i]!,
      maxTimestampMs: this.ts[i]!,
    };
  }

  last(): IndexEntry | undefined {
    return this.n === 0 ? undefined : this.at(this.n - 1);
  }

  /** Adds an entry in memory (the file follows at persist()). */
  add(e: IndexEntry): void {
    this.push(e);
  }

  /** Writes the file when it lacks entries in memory (not synced: the file is derived). */
  persist(): void {
    if (this.fileEntries !== this.n) this.rewrite();
  }

  private push(e: IndexEntry): void {
    if (this.n === this.idx.length) this.grow();
    this.idx[this.n] = e.index;
    this.term[this.n] = e.term;
    this.off[this.n] = e.offset;
    this.pos[this.n] = e.position;
    this.ts[this.n] = e.maxTimestampMs;
    this.n++;
  }

  private grow(): void {
    const cap = this.idx.length * 2;
    const grown = (a: Float64Array): Float64Array => {
      const b = new Float64Array(cap);
      b.set(a);
      return b;
    };
    this.idx = grown(this.idx);
    this.term = grown(this.term);
    this.off = grown(this.off);
    this.pos = grown(this.pos);
    this.ts = grown(this.ts);
  }

  /** Last entry whose column value is <= v (the columns are non-decreasing); -1 when none. */
  private floor(col: Float64Array, v: number): number {
    let lo = 0;
    let hi = this.n;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (col[mid]! <= v) lo = mid + 1;
      else hi = mid;
    }
    return lo - 1;
  }

  floorByIndex(index: number): number {
    return this.floor(this.idx, index);
  }
  floorByOffset(offset: number): number {
    return this.floor(this.off, offset);
  }
  /** Last entry with maxTimestamp strictly below ts: a record at or after ts lies after its position. */
  floorBelowTimestamp(ts: number): number {
    return this.floor(this.ts, ts - 1);
  }

  termAt(index: number): number | undefined {
    const i = this.floorByIndex(index);
    return i < 0 ? undefined : this.term[i]!;
  }

  /** Keeps only entries at positions below `position` (a truncation of the segment); rewrites the file. */
  truncateAtPosition(position: number): void {
    let keep = this.n;
    while (keep > 0 && this.pos[keep - 1]! >= position) keep--;
    if (keep === this.n) return;
    this.n = keep;
    this.rewrite();
  }

  /** Replaces the file with the entries in memory (after a rebuild or a truncation). */
  rewrite(): void {
    const buf = Buffer.allocUnsafe(this.n * INDEX_ENTRY_BYTES);
    for (let i = 0; i < this.n; i++) writeEntry(buf, i * INDEX_ENTRY_BYTES, this.at(i));
    const fd = openSync(this.path, "w");
    try {
      writeSync(fd, buf);
    } finally {
      closeSync(fd);
    }
    this.fileEntries = this.n;
  }

  clear(): void {
    this.n = 0;
    this.fileEntries = -1;
  }

  /**
   * Loads the file: the longest prefix of well-formed, increasing entries below segmentBytes.
   * Returns false when the file is missing or any part of it had to be dropped.
   */
  load(segmentBytes: number): boolean {
    this.n = 0;
    if (!existsSync(this.path)) return false;
    const buf = readFileSync(this.path);
    const whole = buf.byteLength % INDEX_ENTRY_BYTES === 0;
    let previous: IndexEntry | undefined;
    for (let at = 0; at + INDEX_ENTRY_BYTES <= buf.byteLength; at += INDEX_ENTRY_BYTES) {
      const e = readEntry(buf, at);
      const ordered =
        previous === undefined ||
        (e.index > previous.index &&
          e.term >= previous.term &&
          e.offset >= previous.offset &&
          e.position > previous.position &&
          e.maxTimestampMs >= previous.maxTimestampMs);
      if (!ordered || e.position >= segmentBytes || !Number.isSafeInteger(e.index)) return false;
      this.push(e);
      previous = e;
    }
    if (whole) this.fileEntries = this.n;
    return whole;
  }
}

/** Entries as the index file holds them (the cleaner writes a cleaned segment's index with it). */
export function encodeIndexEntries(entries: readonly IndexEntry[]): Buffer {
  const buf = Buffer.allocUnsafe(entries.length * INDEX_ENTRY_BYTES);
  for (let i = 0; i < entries.length; i++) writeEntry(buf, i * INDEX_ENTRY_BYTES, entries[i]!);
  return buf;
}

function writeEntry(buf: Buffer, at: number, e: IndexEntry): void {
  buf.writeBigUInt64BE(BigInt(e.index), at);
  buf.writeBigUInt64BE(BigInt(e.term), at + 8);
  buf.writeBigInt64BE(BigInt(e.offset), at + 16);
  buf.writeBigUInt64BE(BigInt(e.position), at + 24);
  buf.writeBigInt64BE(BigInt(Math.trunc(e.maxTimestampMs)), at + 32);
}

function readEntry(buf: Buffer, at: number): IndexEntry {
  return {
    index: Number(buf.readBigUInt64BE(at)),
    term: Number(buf.readBigUInt64BE(at + 8)),
    offset: Number(buf.readBigInt64BE(at + 16)),
    position: Number(buf.readBigUInt64BE(at + 24)),
    maxTimestampMs: Number(buf.readBigInt64BE(at + 32)),
  };
}
