// A deterministic state machine for Raft host tests and the benchmark: it records every applied
// payload in order (so replicas can be compared entry by entry) and snapshots the whole record.
import type { AppliedEntry, StateMachine } from "../../../libs/raft-host/state-machine.js";

const decoder = new TextDecoder();
const encoder = new TextEncoder();

export class RecordingStateMachine implements StateMachine<number> {
  /** Payloads in apply order (text), or only their count when recording is off. */
  applied: string[] = [];
  count = 0;
  lastIndex = 0;
  restores = 0;

  constructor(private readonly record = true) {}

  apply(entry: AppliedEntry): number {
    if (entry.index <= this.lastIndex)
      throw new Error(`apply(${entry.index}) after ${this.lastIndex}`);
    this.lastIndex = entry.index;
    this.count += 1;
    if (this.record) this.applied.push(decoder.decode(entry.data));
    return this.count;
  }

  snapshot(): Uint8Array {
    return encoder.encode(
      JSON.stringify({ applied: this.applied, count: this.count, lastIndex: this.lastIndex }),
    );
  }

  restore(data: Uint8Array, index: number): void {
    const s = JSON.parse(decoder.decode(data)) as {
      applied: string[];
      count: number;
      lastIndex: number;
    };
    if (s.lastIndex > index)
      throw new Error(`snapshot at ${index} claims lastIndex ${s.lastIndex}`);
    this.applied = s.applied;
    this.count = s.count;
    this.lastIndex = index;
    this.restores += 1;
  }
}
