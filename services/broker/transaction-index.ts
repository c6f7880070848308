// The aborted-transaction index of a partition (Kafka's .txnindex): for every aborted
// transaction, the producer and the offset range [firstOffset, lastOffset] it covered
// (lastOffset is the ABORT marker). read_committed uses it to drop aborted batches.
import type { Failpoints } from "../../libs/common/failpoints.js";

/** Planted fault: read_committed serves aborted batches (how `tern verify` is shown to catch it). */
export const SERVE_ABORTED_FAULT = "broker.read-committed-serves-aborted";
export interface AbortedTransaction {
  readonly producerId: bigint;
  readonly firstOffset: bigint;
  readonly lastOffset: bigint;
}

export class TransactionIndex {
  /** Ordered by lastOffset (markers are appended in offset order). */
  private entries: AbortedTransaction[] = [];
  private byProducer = new Map<bigint, AbortedTransaction[]>();

  /** `failpoints`: the process's, for the planted SERVE_ABORTED_FAULT; none armed when absent. */
  constructor(private readonly failpoints?: Failpoints) {}

  add(aborted: AbortedTransaction): void {
    const last = this.entries[this.entries.length - 1];
    if (last !== undefined && last.lastOffset >= aborted.lastOffset) {
      throw new Error(
        `aborted transaction index out of order: ${last.lastOffset} then ${aborted.lastOffset}`,
      );
    }
    this.entries.push(aborted);
    const list = this.byProducer.get(aborted.producerId) ?? [];
    list.push(aborted);
    this.byProducer.set(aborted.producerId, list);
  }

  /** Whether a transactional batch of producerId starting at baseOffset was aborted. */
  isAborted(producerId: bigint, baseOffset: bigint): boolean {
    if (this.failpoints?.faultArmed(SERVE_ABORTED_FAULT) === true) return false;
    return this.covers(producerId, baseOffset);
  }

  /**
   * isAborted without the planted fault: what the log cleaner removes and keeps out of its key
   * map by (a fault planted for the read path must never make it clean aborted records in).
   */
  covers(producerId: bigint, baseOffset: bigint): boolean {
    const list = this.byProducer.get(producerId);
    if (list === undefined) return false;
    // A producer has few aborted transactions retained; scan newest first.
    for (let i = list.length - 1; i >= 0; i--) {
      const a = list[i]!;
      if (a.firstOffset <= baseOffset && baseOffset <= a.lastOffset) return true;
      if (a.lastOffset < baseOffset) return false;
    }
    return false;
  }

  /** Forgets transactions that ended before the log start offset. */
  trimBefore(logStartOffset: bigint): void {
    let drop = 0;
    while (drop < this.entries.length && this.entries[drop]!.lastOffset < logStartOffset) drop++;
    if (drop === 0) return;
    const dropped = this.entries.splice(0, drop);
    for (const a of dropped) {
      const list = this.byProducer.get(a.producerId)!;
      list.shift();
      if (list.length === 0) this.byProducer.delete(a.producerId);
    }
  }

  all(): readonly AbortedTransaction[] {
    return this.entries;
  }

  size(): number {
    return this.entries.length;
  }
}
