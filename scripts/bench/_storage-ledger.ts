// Which records the storage benchmark had acknowledged and which it read back: every value
// carries its record id in its first 4 bytes, so the read-back checks each acknowledged record
// by id (lost, duplicated, or written without an acknowledgement) rather than by count alone.
import { RECORD_BYTES } from "./_storage-plan.js";

const ID_BYTES = 4;
/** Bound on ids (2^32 would not fit the 4 bytes); 4 GB of 1 KiB records is ~3.9 million. */
export const LEDGER_IDS_MAX = 2 ** 31;

export interface LedgerSummary {
  readonly acked: number;
  readonly read: number;
  /** Acknowledged and not read back. */
  readonly lost: number;
  /** Read more than once (a retried send both landed). */
  readonly duplicates: number;
  /** Read but never acknowledged (in flight at a kill, or failed at the client): not a loss. */
  readonly unackedRead: number;
  /** Read values that carry no id this run handed out. */
  readonly foreign: number;
}

class BitSet {
  private bits = new Uint8Array(1024);
  has(i: number): boolean {
    return i >> 3 < this.bits.length && (this.bits[i >> 3]! & (1 << (i & 7))) !== 0;
  }
  set(i: number): void {
    if (i >> 3 >= this.bits.length) {
      const grown = new Uint8Array(Math.max(this.bits.length * 2, (i >> 3) + 1));
      grown.set(this.bits);
      this.bits = grown;
    }
    this.bits[i >> 3]! |= 1 << (i & 7);
  }
}

export class RecordLedger {
  private nextId = 0;
  private readonly ackedIds = new BitSet();
  private readonly readIds = new BitSet();
  private ackedCount = 0;
  private readCount = 0;
  private duplicateCount = 0;
  private foreignCount = 0;
  private readonly template = Buffer.alloc(RECORD_BYTES, 120);

  get acked(): number {
    return this.ackedCount;
  }

  /** A fresh id and its 1 KiB value. */
  next(): { id: number; value: Buffer } {
    if (this.nextId >= LEDGER_IDS_MAX) throw new RangeError(`more than ${LEDGER_IDS_MAX} records`);
    const id = this.nextId++;
    const value = Buffer.allocUnsafe(RECORD_BYTES);
    this.template.copy(value);
    value.writeUInt32BE(id, 0);
    return { id, value };
  }

  ack(id: number): void {
    if (this.ackedIds.has(id)) return;
    this.ackedIds.set(id);
    this.ackedCount += 1;
  }

  /** One record read back. */
  read(value: Buffer | null): void {
    this.readCount += 1;
    if (value === null || value.length < ID_BYTES) {
      this.foreignCount += 1;
      return;
    }
    const id = value.readUInt32BE(0);
    if (id >= this.nextId) this.foreignCount += 1;
    else if (this.readIds.has(id)) this.duplicateCount += 1;
    else this.readIds.set(id);
  }

  summary(): LedgerSummary {
    let lost = 0;
    let unackedRead = 0;
    for (let id = 0; id < this.nextId; id++) {
      const acked = this.ackedIds.has(id);
      const read = this.readIds.has(id);
      if (acked && !read) lost += 1;
      if (!acked && read) unackedRead += 1;
    }
    return {
      acked: this.ackedCount,
      read: this.readCount,
      lost,
      duplicates: this.duplicateCount,
      unackedRead,
      foreign: this.foreignCount,
    };
  }
}
