// The retained records of a partition, in memory, indexed by offset. Offsets are dense:
// every record and every control marker takes one. Retention drops whole batches from the
// front and advances the log start offset. A batch is kept as its entry bytes only, not as
// record objects: a retained partition of millions of records would otherwise be millions of
// long-lived objects for every garbage collection to trace (readers decode on demand).
import type { ControlKind } from "./partition-entry.js";

export interface StoredBatch {
  /** The Raft log index of the entry that appended it: where its bytes are after a restart. */
  readonly index: number;
  readonly baseOffset: bigint;
  /** Inclusive. */
  readonly lastOffset: bigint;
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly baseSequence: number;
  readonly isTransactional: boolean;
  /** Set for a control marker (then records is empty and baseOffset === lastOffset). */
  readonly control: ControlKind | null;
  readonly appendTimeMs: number;
  readonly maxTimestampMs: number;
  readonly sizeBytes: number;
  /**
   * The batch's entry bytes (the Raft log keeps the same entry while the batch is retained):
   * the records decode from them on demand. Empty for markers.
   */
  readonly raw: Uint8Array;
}

/** Array with a moving head: dropping from the front is O(1) amortized. */
export class PartitionLog {
  private batches: StoredBatch[] = [];
  private head = 0;
  private retainedBytes = 0;
  private startOffset: bigint;
  private endOffset: bigint;

  constructor(startOffset = 0n) {
    this.startOffset = startOffset;
    this.endOffset = startOffset;
  }

  logStartOffset(): bigint { return this.startOffset; }
  /** One past the last offset: the high watermark, since only committed entries are applied. */
  logEndOffset(): bigint { return this.endOffset; }
  sizeBytes(): number { return this.retainedBytes; }
  batchCount(): number { return this.batches.length - this.head; }

  append(batch: StoredBatch): void {
    if (batch.baseOffset !== this.endOffset) throw new Error(`append at ${batch.baseOffset}, log end is ${this.endOffset}`);
    this.batches.push(batch);
    this.retainedBytes += batch.sizeBytes;
    this.endOffset = batch.lastOffset + 1n;
  }

  first(): StoredBatch | undefined { return this.batches[this.head]; }

  at(position: number): StoredBatch | undefined { return this.batches[this.head + position]; }

  /** Position (0-based from the oldest retained batch) of the batch holding offset, or of the first batch after it. */
  positionOf(offset: bigint): number {
    let lo = this.head;
    let hi = this.batches.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.batches[mid]!.lastOffset < offset) lo = mid + 1;
      else hi = mid;
    }
    return lo - this.head;
  }

  /** Drops batches from the front while keep(batch) is false; returns how many. */
  dropWhile(drop: (batch: StoredBatch, retainedBytes: number) => boolean): number {
    let dropped = 0;
    while (this.head < this.batches.length && drop(this.batches[this.head]!, this.retainedBytes)) {
      const b = this.batches[this.head]!;
      this.retainedBytes -= b.sizeBytes;
      this.startOffset = b.lastOffset + 1n;
      this.head++;
      dropped++;
    }
    if (this.head > 1024 && this.head * 2 > this.batches.length) {
      this.batches = this.batches.slice(this.head);
      this.head = 0;
    }
    return dropped;
  }

  *iterate(): Generator<StoredBatch> {
    for (let i = this.head; i < this.batches.length; i++) yield this.batches[i]!;
  }

  /** Rebuilds from a snapshot. */
  static from(startOffset: bigint, endOffset: bigint, batches: StoredBatch[]): PartitionLog {
    const log = new PartitionLog(startOffset);
    log.endOffset = batches[0]?.baseOffset ?? endOffset;
    for (const b of batches) log.append(b);
    log.endOffset = endOffset;
    return log;
  }
}
