// The leader's pipelining window for one follower: the last index and entry bytes of every
// Append sent but not yet acknowledged, in a fixed ring so the window costs no allocation per
// message. Full at `capacity` messages, or (bytesMax > 0) once the bytes in flight reach
// bytesMax: a follower catching up then holds at most that much of the leader's memory in
// queued Appends, not capacity times the largest message (etcd-raft's MaxInflightBytes).
import { assert } from "../common/assert.js";

export class Inflights {
  private readonly indexes: number[];
  private readonly sizes: number[];
  private start = 0;
  private count = 0;
  private bytesInFlight = 0;

  constructor(
    readonly capacity: number,
    readonly bytesMax = 0,
  ) {
    assert(capacity > 0, "inflights capacity must be positive");
    assert(bytesMax >= 0, "inflights bytesMax must not be negative");
    this.indexes = new Array<number>(capacity).fill(0);
    this.sizes = new Array<number>(capacity).fill(0);
  }

  full(): boolean {
    return (
      this.count === this.capacity || (this.bytesMax > 0 && this.bytesInFlight >= this.bytesMax)
    );
  }

  bytes(): number {
    return this.bytesInFlight;
  }

  size(): number {
    return this.count;
  }

  add(lastIndex: number, bytes = 0): void {
    assert(!this.full(), "inflights: add to a full window");
    const at = (this.start + this.count) % this.capacity;
    this.indexes[at] = lastIndex;
    this.sizes[at] = bytes;
    this.bytesInFlight += bytes;
    this.count++;
  }

  /** Frees every message whose last index is <= index (acknowledged). */
  freeLE(index: number): void {
    while (this.count > 0 && this.indexes[this.start]! <= index) this.freeFirstOne();
  }

  freeFirstOne(): void {
    if (this.count === 0) return;
    this.bytesInFlight -= this.sizes[this.start]!;
    this.start = (this.start + 1) % this.capacity;
    this.count--;
  }

  reset(): void {
    this.start = 0;
    this.count = 0;
    this.bytesInFlight = 0;
  }
}
