// An in-memory RaftStorage with the write methods a host calls while handling a Ready. Used by
// the simulator, by unit tests, and as the reference the durable storage must behave like.
// Layout: ents[0] is a dummy entry at the snapshot's index/term, so term(snapshotIndex) works
// and the log offset is ents[0].index.
import { assert } from "../common/assert.js";
import {
  EntryType,
  LogCompactedError,
  LogUnavailableError,
  NONE,
  entrySizeBytes,
  type ConfState,
  type Entry,
  type HardState,
  type NodeId,
  type RaftStorage,
  type Snapshot,
} from "./types.js";

const EMPTY = new Uint8Array(0);

export interface InitialMembership {
  readonly voters: readonly NodeId[];
  readonly learners?: readonly NodeId[];
}

export class MemoryStorage implements RaftStorage {
  private hardState: HardState = { term: 0, vote: NONE, commit: 0 };
  private confState: ConfState;
  private snap: Snapshot;
  private ents: Entry[];

  /** A brand-new group whose first configuration is `initial` (snapshot at index 0). */
  constructor(initial: InitialMembership) {
    this.confState = {
      voters: [...initial.voters],
      learners: [...(initial.learners ?? [])],
      outgoingVoters: [],
    };
    this.snap = { metadata: { index: 0, term: 0, confState: this.confState }, data: EMPTY };
    this.ents = [dummyEntry(0, 0)];
  }

  initialState(): { hardState: HardState; confState: ConfState } {
    return { hardState: this.hardState, confState: this.confState };
  }

  entries(lo: number, hi: number, maxBytes: number): Entry[] {
    const offset = this.ents[0]!.index;
    if (lo <= offset) throw new LogCompactedError(lo, offset + 1);
    assert(
      hi <= this.lastIndex() + 1,
      () => `entries(${lo}, ${hi}) beyond last index ${this.lastIndex()}`,
    );
    assert(lo <= hi, () => `entries(${lo}, ${hi}): inverted range`);
    const out: Entry[] = [];
    let bytes = 0;
    for (let i = lo; i < hi; i++) {
      const e = this.ents[i - offset]!;
      bytes += entrySizeBytes(e);
      if (out.length > 0 && bytes > maxBytes) break;
      out.push(e);
    }
    return out;
  }

  term(index: number): number {
    const offset = this.ents[0]!.index;
    if (index < offset) throw new LogCompactedError(index, offset + 1);
    if (index - offset >= this.ents.length) throw new LogUnavailableError(index, this.lastIndex());
    return this.ents[index - offset]!.term;
  }

  firstIndex(): number {
    return this.ents[0]!.index + 1;
  }

  lastIndex(): number {
    return this.ents[0]!.index + this.ents.length - 1;
  }

  snapshot(): Snapshot {
    return this.snap;
  }

  hardStateNow(): HardState {
    return this.hardState;
  }

  /** Appends entries; an entry at an existing index replaces it and everything after it. */
  append(entries: readonly Entry[]): void {
    if (entries.length === 0) return;
    const offset = this.ents[0]!.index;
    const last = entries[entries.length - 1]!.index;
    if (last <= offset) return; // wholly compacted already
    let start = 0;
    if (entries[0]!.index <= offset) start = offset + 1 - entries[0]!.index;
    const first = entries[start]!.index;
    assert(
      first <= this.lastIndex() + 1,
      () => `append at ${first} leaves a gap after ${this.lastIndex()}`,
    );
    this.ents.length = first - offset;
    for (let i = start; i < entries.length; i++) {
      const e = entries[i]!;
      assert(e.index === first + i - start, () => `append: entries not contiguous at ${e.index}`);
      this.ents.push(e);
    }
  }

  setHardState(hardState: HardState): void {
    this.hardState = hardState;
  }

  setConfState(confState: ConfState): void {
    this.confState = confState;
  }

  /** Replaces the whole log with a snapshot received from the leader. */
  applySnapshot(snapshot: Snapshot): void {
    const index = snapshot.metadata.index;
    assert(
      index > this.snap.metadata.index,
      () => `applySnapshot: ${index} is not newer than ${this.snap.metadata.index}`,
    );
    this.snap = snapshot;
    this.ents = [dummyEntry(index, snapshot.metadata.term)];
    this.confState = snapshot.metadata.confState;
  }

  /** Records the state machine's snapshot at index (must be applied, <= last index). */
  createSnapshot(index: number, confState: ConfState, data: Uint8Array): Snapshot {
    assert(
      index > this.snap.metadata.index,
      () => `createSnapshot: ${index} is not newer than ${this.snap.metadata.index}`,
    );
    assert(
      index <= this.lastIndex(),
      () => `createSnapshot: ${index} beyond last index ${this.lastIndex()}`,
    );
    this.snap = { metadata: { index, term: this.term(index), confState }, data };
    return this.snap;
  }

  /** An independent copy (entries are immutable and shared); the simulator's crash model uses it. */
  clone(): MemoryStorage {
    const copy = new MemoryStorage({ voters: [] });
    copy.hardState = this.hardState;
    copy.confState = this.confState;
    copy.snap = this.snap;
    copy.ents = this.ents.slice();
    return copy;
  }

  /** Discards entries up to and including index (which must be covered by a snapshot the host keeps). */
  compact(index: number): void {
    const offset = this.ents[0]!.index;
    if (index <= offset) return;
    assert(
      index <= this.lastIndex(),
      () => `compact: ${index} beyond last index ${this.lastIndex()}`,
    );
    const term = this.term(index);
    const rest = this.ents.slice(index - offset + 1);
    this.ents = [dummyEntry(index, term), ...rest];
  }
}

function dummyEntry(index: number, term: number): Entry {
  return { index, term, type: EntryType.Normal, data: EMPTY };
}
