// The cleaner's key→offset map (Kafka's SkimpyOffsetMap): for each key of the range being
// cleaned, the offset of its latest record. Open addressing with linear probing in one buffer
// allocated once: a slot is the key's MD5 (16 bytes) and the offset (8 bytes, +1 so that 0
// means empty), so the memory is the budget and nothing else. Filled to at most loadFactor of
// its slots; past that put() refuses and the clean stops at the last whole segment mapped
// (docs/storage.md, "Compaction"). Two keys with the same MD5 would share a slot (the older one's
// records then go as if superseded): 2^-128 per pair, the risk Kafka takes too.
import { createHash } from "node:crypto";
import { assert } from "../common/assert.js";

const HASH_BYTES = 16;
export const OFFSET_MAP_SLOT_BYTES = HASH_BYTES + 8;
/** Kafka's log.cleaner.io.buffer.load.factor. */
const LOAD_FACTOR = 0.9;

export class OffsetMap {
  private readonly slots: Buffer;
  private readonly capacity: number;
  private readonly maxEntries: number;
  private entries = 0;
  /** The latest offset put, whatever its key. */
  private latest = -1n;

  constructor(readonly budgetBytes: number) {
    this.capacity = Math.floor(budgetBytes / OFFSET_MAP_SLOT_BYTES);
    this.maxEntries = Math.min(this.capacity - 1, Math.floor(this.capacity * LOAD_FACTOR));
    assert(this.maxEntries >= 1, () => `an offset map of ${budgetBytes} bytes holds no entry`);
    this.slots = Buffer.alloc(this.capacity * OFFSET_MAP_SLOT_BYTES);
  }

  get size(): number {
    return this.entries;
  }
  /** The fraction of the usable slots in use (the utilisation metric). */
  utilisation(): number {
    return this.entries / this.maxEntries;
  }
  latestOffset(): bigint {
    return this.latest;
  }

  clear(): void {
    // Untouched pages stay untouched (a map never filled costs no resident memory).
    if (this.entries > 0) this.slots.fill(0);
    this.entries = 0;
    this.latest = -1n;
  }

  /**
   * Records that key's latest record is at offset (offsets are put in increasing order). False,
   * and nothing changed, when the key is new and the map is full.
   */
  put(key: Uint8Array, offset: bigint): boolean {
    const hash = digest(key);
    const at = this.find(hash);
    if (this.slots.readBigInt64BE(at + HASH_BYTES) === 0n) {
      if (this.entries >= this.maxEntries) return false;
      this.slots.set(hash, at);
      this.entries++;
    }
    this.slots.writeBigInt64BE(offset + 1n, at + HASH_BYTES);
    if (offset > this.latest) this.latest = offset;
    return true;
  }

  /** The offset of key's latest record in the mapped range, or undefined. */
  get(key: Uint8Array): bigint | undefined {
    const at = this.find(digest(key));
    const stored = this.slots.readBigInt64BE(at + HASH_BYTES);
    return stored === 0n ? undefined : stored - 1n;
  }

  /** The slot holding hash, or the empty slot where it would go. */
  private find(hash: Buffer): number {
    let slot = hash.readUInt32BE(0) % this.capacity;
    // The load factor keeps a free slot, so the probe ends.
    for (;;) {
      const at = slot * OFFSET_MAP_SLOT_BYTES;
      if (this.slots.readBigInt64BE(at + HASH_BYTES) === 0n) return at;
      if (this.slots.compare(hash, 0, HASH_BYTES, at, at + HASH_BYTES) === 0) return at;
      slot = slot + 1 === this.capacity ? 0 : slot + 1;
    }
  }
}

function digest(key: Uint8Array): Buffer {
  return createHash("md5").update(key).digest();
}
