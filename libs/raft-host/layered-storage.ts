// The Raft core's view of a group whose state machine keeps an applied log (applied-log.ts):
// recent entries from the host's in-memory tail (mirrored to level), older ones from the applied
// log. Term lookups never touch the disk (the applied log keeps its terms in memory); entries
// not in memory make the core skip that append (LogUnavailableError) until the read lands.
import {
  LogCompactedError,
  LogUnavailableError,
  type ConfState,
  type Entry,
  type HardState,
  type RaftStorage,
  type Snapshot,
} from "../raft/types.js";
import type { MemoryStorage } from "../raft/memory-storage.js";
import type { AppliedLog } from "./applied-log.js";

export class LayeredStorage implements RaftStorage {
  constructor(
    private readonly memory: MemoryStorage,
    private readonly applied: AppliedLog,
  ) {}

  initialState(): { hardState: HardState; confState: ConfState } {
    return this.memory.initialState();
  }

  /** Whether the applied log reaches the memory tail, so together they form one log. */
  private appliedReachesMemory(): boolean {
    return (
      this.applied.lastIndex() + 1 >= this.memory.firstIndex() &&
      this.applied.firstIndex() < this.memory.firstIndex()
    );
  }

  firstIndex(): number {
    return this.appliedReachesMemory() ? this.applied.firstIndex() : this.memory.firstIndex();
  }

  lastIndex(): number {
    return this.memory.lastIndex();
  }

  term(index: number): number {
    if (index >= this.memory.firstIndex() - 1 || !this.appliedReachesMemory())
      return this.memory.term(index);
    const t = this.applied.term(index);
    if (t === undefined) throw new LogCompactedError(index, this.firstIndex());
    return t;
  }

  entries(lo: number, hi: number, maxBytes: number): Entry[] {
    const memoryFirst = this.memory.firstIndex();
    if (lo >= memoryFirst || !this.appliedReachesMemory())
      return this.memory.entries(lo, hi, maxBytes);
    if (lo < this.applied.firstIndex()) throw new LogCompactedError(lo, this.applied.firstIndex());
    const older = this.applied.cached(lo, Math.min(hi, memoryFirst), maxBytes);
    if (older === undefined) throw new LogUnavailableError(lo, this.lastIndex());
    return older;
  }

  snapshot(): Snapshot {
    return this.appliedReachesMemory()
      ? this.applied.snapshotBeforeFirst()
      : this.memory.snapshot();
  }
}
