// The leader's pipelining window for one follower: the last index of every Append sent but not
// yet acknowledged, in a fixed ring so the window costs no allocation per message.
import { assert } from "../common/assert.js";

export class Inflights {
  private readonly indexes: number[];
  private start = 0;
  private count = 0;

  constructor(readonly capacity: number) {
    assert(capacity > 0, "inflights capacity must be positive");
    this.indexes = new Array<number>(capacity).fill(0);
  }

  full(): boolean {
    return this.count === this.capacity;
  }

  size(): number {
    return this.count;
  }

  add(lastIndex: number): void {
    assert(!this.full(), "inflights: add to a full window");
    this.indexes[(this.start + this.count) % this.capacity] = lastIndex;
    this.count++;
  }

  /** Frees every message whose last index is <= index (acknowledged). */
  freeLE(index: number): void {
    while (this.count > 0 && this.indexes[this.start]! <= index) {
      this.start = (this.start + 1) % this.capacity;
      this.count--;
    }
  }

  freeFirstOne(): void {
    if (this.count === 0) return;
    this.start = (this.start + 1) % this.capacity;
    this.count--;
  }

  reset(): void {
    this.start = 0;
    this.count = 0;
  }
}
