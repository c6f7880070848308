// The simulator's deterministic state machine: a hash chain over every entry HostGroup applies
// (normal entries with data), so two replicas that applied the same sequence agree on
// (index, hash) and any divergence shows. onApply lets the simulation see each one (acks).
import { assert } from "../common/assert.js";
import type { AppliedEntry, StateMachine } from "../raft-host/state-machine.js";
import { bytesHash } from "./trace-hash.js";

export class HashChainStateMachine implements StateMachine<void> {
  /** Index of the last entry applied (entries without data are not given to apply). */
  index = 0;
  hash = 0;

  constructor(private readonly onApply: (entry: AppliedEntry) => void = () => {}) {}

  apply(entry: AppliedEntry): void {
    assert(
      entry.index > this.index,
      () => `state machine: applied ${entry.index} after ${this.index}`,
    );
    let h = Math.imul(this.hash ^ entry.index, 0x01000193);
    h = Math.imul(h ^ entry.term, 0x01000193);
    this.hash = Math.imul(h ^ bytesHash(entry.data), 0x01000193) >>> 0;
    this.index = entry.index;
    this.onApply(entry);
  }

  snapshot(): Uint8Array {
    const b = new Uint8Array(12);
    const v = new DataView(b.buffer);
    v.setUint32(0, Math.floor(this.index / 4294967296));
    v.setUint32(4, this.index >>> 0);
    v.setUint32(8, this.hash);
    return b;
  }

  restore(data: Uint8Array, index: number): void {
    if (data.byteLength === 0) {
      assert(index === 0, "empty snapshot data above index 0");
      this.index = 0;
      this.hash = 0;
      return;
    }
    assert(data.byteLength === 12, "state machine snapshot must be 12 bytes");
    const v = new DataView(data.buffer, data.byteOffset, data.byteLength);
    this.index = v.getUint32(0) * 4294967296 + v.getUint32(4);
    this.hash = v.getUint32(8);
    assert(
      this.index <= index,
      () => `snapshot data at ${this.index} beyond its metadata index ${index}`,
    );
  }
}
