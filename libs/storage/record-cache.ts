// The one bounded cache of log records per process, shared by every partition replica. Each log
// keeps up to two windows in it: its tail (the records it appended last, for tailing consumers
// and followers one step behind) and a read-ahead window (records loaded from its files for a
// lagging follower or a fetch of older data). When the total passes the budget, the window
// holding the most bytes (other than the one growing) gives up its oldest records first.
import type { LogRecord } from "./log-record.js";

/** A view into a much larger buffer is copied, so a cached record never pins a whole frame. */
const VIEW_SLACK_BYTES = 4096;

export class CacheWindow {
  /** Slots before head are dropped records, cleared so that they pin no memory. */
  private records: Array<LogRecord | undefined> = [];
  private head = 0;
  bytes = 0;

  constructor(private readonly cache: RecordCache) {}

  first(): LogRecord | undefined {
    return this.records[this.head];
  }
  last(): LogRecord | undefined {
    return this.records.length > this.head ? this.records[this.records.length - 1] : undefined;
  }
  size(): number {
    return this.records.length - this.head;
  }

  /** Appends a record (the next index after the window's last, or the window restarts). */
  push(r: LogRecord): void {
    const last = this.last();
    if (last !== undefined && last.index + 1 !== r.index) this.clear();
    const record = unpinned(r);
    this.records.push(record);
    const n = record.data.byteLength;
    this.bytes += n;
    this.cache.charged(n, this);
  }

  /** Records with index in [lo, hi), at most about maxBytes (at least one); undefined if lo is not here. */
  slice(lo: number, hi: number, maxBytes: number): LogRecord[] | undefined {
    const first = this.first();
    if (first === undefined || lo < first.index || lo > this.last()!.index) return undefined;
    const out: LogRecord[] = [];
    let bytes = 0;
    for (let i = this.head + (lo - first.index); i < this.records.length; i++) {
      const r = this.records[i]!;
      if (r.index >= hi) break;
      bytes += r.data.byteLength;
      if (out.length > 0 && bytes > maxBytes) break;
      out.push(r);
    }
    return out;
  }

  /** Position (from head) of the first record whose offsets end after offset; undefined if not covered. */
  findOffset(offset: bigint): number | undefined {
    let lo = this.head;
    let hi = this.records.length;
    // The first offset-bearing record must start at or before offset for the window to cover it.
    let firstWithOffsets: LogRecord | undefined;
    for (let i = this.head; i < this.records.length && i < this.head + 64; i++) {
      if (this.records[i]!.offsetCount > 0) {
        firstWithOffsets = this.records[i];
        break;
      }
    }
    if (firstWithOffsets === undefined || firstWithOffsets.baseOffset > offset) return undefined;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const r = this.records[mid]!;
      const end =
        r.offsetCount > 0
          ? r.baseOffset + BigInt(r.offsetCount)
          : endBefore(this.records, this.head, mid);
      if (end <= offset) lo = mid + 1;
      else hi = mid;
    }
    return lo - this.head;
  }

  at(position: number): LogRecord | undefined {
    return this.records[this.head + position];
  }

  dropFirst(): number {
    const r = this.records[this.head];
    if (r === undefined) return 0;
    // The array keeps its prefix until it is compacted below: without clearing the slot, up to
    // 1024 dropped records (64 MiB of 64 KiB entries) per window stayed alive past the budget.
    this.records[this.head] = undefined;
    this.head++;
    this.bytes -= r.data.byteLength;
    if (this.head > 1024 && this.head * 2 > this.records.length) {
      this.records = this.records.slice(this.head);
      this.head = 0;
    }
    return r.data.byteLength;
  }

  /** Drops records after index (a truncated log). */
  dropAfter(index: number): void {
    let freed = 0;
    while (this.records.length > this.head && this.records[this.records.length - 1]!.index > index)
      freed += this.records.pop()!.data.byteLength;
    this.bytes -= freed;
    this.cache.released(freed);
  }

  /** Drops records before index (retention). */
  dropBefore(index: number): void {
    let freed = 0;
    while (this.size() > 0 && this.first()!.index < index) freed += this.dropFirst();
    this.cache.released(freed);
  }

  clear(): void {
    this.cache.released(this.bytes);
    this.records = [];
    this.head = 0;
    this.bytes = 0;
  }
}

/** The offsets end of the nearest offset-bearing record in [head, position) (for records that took none). */
function endBefore(
  records: ReadonlyArray<LogRecord | undefined>,
  head: number,
  position: number,
): bigint {
  for (let i = position - 1; i >= head; i--) {
    const r = records[i]!;
    if (r.offsetCount > 0) return r.baseOffset + BigInt(r.offsetCount);
  }
  return -1n;
}

function unpinned(r: LogRecord): LogRecord {
  const d = r.data;
  if (d.buffer.byteLength <= 2 * d.byteLength + VIEW_SLACK_BYTES) return r;
  const copy = new Uint8Array(d.byteLength);
  copy.set(d);
  return { ...r, data: copy };
}

export class RecordCache {
  private used = 0;
  private readonly windows = new Set<CacheWindow>();

  constructor(readonly bytesMax: number) {}

  window(): CacheWindow {
    const w = new CacheWindow(this);
    this.windows.add(w);
    return w;
  }

  forget(w: CacheWindow): void {
    w.clear();
    this.windows.delete(w);
  }

  usedBytes(): number {
    return this.used;
  }

  charged(bytes: number, from: CacheWindow): void {
    this.used += bytes;
    while (this.used > this.bytesMax) {
      // Other windows give way first (the one growing is about to be used), the largest first.
      let largest: CacheWindow | undefined;
      for (const w of this.windows)
        if (w !== from && w.size() > 0 && (largest === undefined || w.bytes > largest.bytes))
          largest = w;
      if (largest === undefined) {
        // Only the growing window is left: it drops its oldest, but keeps the record just added.
        if (from.size() <= 1) break;
        largest = from;
      }
      this.used -= largest.dropFirst();
    }
  }

  released(bytes: number): void {
    this.used -= bytes;
  }
}
