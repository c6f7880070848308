// The core's view of the log: entries persisted in RaftStorage plus an unstable tail (and
// possibly an incoming snapshot) that the next Ready hands to the host for persisting. Tracks
// committed, applying (handed to the host) and applied indexes.
import { assert } from "../common/assert.js";
import {
  LogCompactedError,
  LogUnavailableError,
  entrySizeBytes,
  type Entry,
  type RaftStorage,
  type Snapshot,
} from "./types.js";

/** term() answer for an index that is compacted away or beyond the log. */
export const TERM_UNKNOWN = -1;

export class RaftLog {
  /** Entries not yet persisted; unstable[0] is at index `offset`. */
  private unstable: Entry[] = [];
  private offset: number;
  private unstableSnapshot: Snapshot | undefined;
  committed: number;
  /** Highest index handed to the host in a Ready's committedEntries. */
  applying: number;
  /** Highest index the host has applied (advance()). */
  applied: number;
  /** Last entry the host reported durable (persisted()): what a leader may count for itself. */
  private durable: { index: number; term: number };

  constructor(
    readonly storage: RaftStorage,
    commit: number,
    applied: number,
  ) {
    this.offset = storage.lastIndex() + 1;
    this.committed = commit;
    const floor = storage.firstIndex() - 1;
    this.applied = Math.max(applied, floor);
    assert(
      this.applied <= Math.max(commit, floor),
      () => `applied ${applied} is beyond commit ${commit}`,
    );
    this.committed = Math.max(this.committed, floor);
    this.applying = this.applied;
    // Whatever storage holds at start-up was read back from disk.
    const last = storage.lastIndex();
    this.durable = { index: last, term: this.term(last) };
  }

  firstIndex(): number {
    return this.unstableSnapshot
      ? this.unstableSnapshot.metadata.index + 1
      : this.storage.firstIndex();
  }

  lastIndex(): number {
    if (this.unstable.length > 0) return this.offset + this.unstable.length - 1;
    if (this.unstableSnapshot) return this.unstableSnapshot.metadata.index;
    return this.storage.lastIndex();
  }

  term(index: number): number {
    if (index >= this.offset && index < this.offset + this.unstable.length)
      return this.unstable[index - this.offset]!.term;
    const snap = this.unstableSnapshot;
    if (snap) return index === snap.metadata.index ? snap.metadata.term : TERM_UNKNOWN;
    if (index < this.firstIndex() - 1 || index > this.lastIndex()) return TERM_UNKNOWN;
    try {
      return this.storage.term(index);
    } catch (e) {
      if (e instanceof LogCompactedError || e instanceof LogUnavailableError) return TERM_UNKNOWN;
      throw e;
    }
  }

  lastTerm(): number {
    const t = this.term(this.lastIndex());
    assert(t !== TERM_UNKNOWN, "last term unknown");
    return t;
  }

  matchTerm(index: number, term: number): boolean {
    return this.term(index) === term;
  }

  /** Raft's election restriction: is a candidate's log at least as up-to-date as ours? */
  isUpToDate(lastIndex: number, lastTerm: number): boolean {
    const ourTerm = this.lastTerm();
    return lastTerm > ourTerm || (lastTerm === ourTerm && lastIndex >= this.lastIndex());
  }

  /** Follower side of Append: returns the last new index, or -1 when prev does not match. */
  maybeAppend(
    prevIndex: number,
    prevTerm: number,
    commit: number,
    entries: readonly Entry[],
  ): number {
    if (!this.matchTerm(prevIndex, prevTerm)) return -1;
    const lastNew = prevIndex + entries.length;
    const conflict = this.findConflict(entries);
    if (conflict !== 0) {
      assert(
        conflict > this.committed,
        () => `entry ${conflict} conflicts with committed entry (commit ${this.committed})`,
      );
      this.append(entries, conflict - (prevIndex + 1));
    }
    this.commitTo(Math.min(commit, lastNew));
    return lastNew;
  }

  /** First index whose term differs from ours (or that we lack); 0 when all match. */
  private findConflict(entries: readonly Entry[]): number {
    for (const e of entries) {
      if (!this.matchTerm(e.index, e.term)) return e.index;
    }
    return 0;
  }

  /** Largest index <= index whose term is <= term (the follower's hint on a rejection). */
  findConflictByTerm(index: number, term: number): { index: number; term: number } {
    const floor = this.firstIndex() - 1;
    // Compacted away: the term is unknown, so it may match (etcd's answer).
    if (index < floor) return { index, term: 0 };
    for (let i = index; i >= floor; i--) {
      const t = this.term(i);
      if (t === TERM_UNKNOWN) return { index: i, term: 0 };
      if (t <= term) return { index: i, term: t };
    }
    return { index: floor, term: 0 };
  }

  /** Appends entries[from..], replacing any suffix at or after the first one's index. */
  append(entries: readonly Entry[], from = 0): void {
    if (from >= entries.length) return;
    const after = entries[from]!.index;
    assert(
      after > this.committed,
      () => `append at ${after} would overwrite committed ${this.committed}`,
    );
    if (after === this.offset + this.unstable.length) {
      // common case: extend the tail
    } else if (after <= this.offset) {
      this.offset = after;
      this.unstable = [];
    } else {
      this.unstable.length = after - this.offset;
    }
    for (let i = from; i < entries.length; i++) this.unstable.push(entries[i]!);
  }

  /** Entries in [lo, hi) bounded by maxBytes (at least one). Throws LogCompactedError below firstIndex. */
  slice(lo: number, hi: number, maxBytes: number): Entry[] {
    if (lo >= hi) return [];
    const first = this.firstIndex();
    if (lo < first) throw new LogCompactedError(lo, first);
    assert(hi <= this.lastIndex() + 1, () => `slice(${lo}, ${hi}) beyond last ${this.lastIndex()}`);
    let out: Entry[] = [];
    let bytes = 0;
    if (lo < this.offset) {
      out = this.storage.entries(lo, Math.min(hi, this.offset), maxBytes);
      for (const e of out) bytes += entrySizeBytes(e);
      if (out.length < Math.min(hi, this.offset) - lo || bytes >= maxBytes) return out;
    }
    for (let i = Math.max(lo, this.offset); i < hi; i++) {
      const e = this.unstable[i - this.offset]!;
      bytes += entrySizeBytes(e);
      if (out.length > 0 && bytes > maxBytes) break;
      out.push(e);
    }
    return out;
  }

  commitTo(commit: number): void {
    if (commit <= this.committed) return;
    assert(
      commit <= this.lastIndex(),
      () => `commit ${commit} is beyond last index ${this.lastIndex()}`,
    );
    this.committed = commit;
  }

  /** Leader: commit maxIndex if it is from the current term (Raft §5.4.2). */
  maybeCommit(maxIndex: number, term: number): boolean {
    if (maxIndex > this.committed && this.term(maxIndex) === term) {
      this.commitTo(maxIndex);
      return true;
    }
    return false;
  }

  hasUnstableEntries(): boolean {
    return this.unstable.length > 0;
  }

  unstableEntries(): Entry[] {
    return this.unstable.slice();
  }

  pendingSnapshot(): Snapshot | undefined {
    return this.unstableSnapshot;
  }

  hasNextCommittedEntries(): boolean {
    return (
      this.unstableSnapshot === undefined &&
      this.committed > this.applying &&
      this.applying + 1 >= this.firstIndex()
    );
  }

  /** The next committed entries to apply, bounded by maxBytes (at least one); marks them applying. */
  nextCommittedEntries(maxBytes: number): Entry[] {
    if (!this.hasNextCommittedEntries()) return [];
    const entries = this.slice(this.applying + 1, this.committed + 1, maxBytes);
    if (entries.length > 0) this.applying = entries[entries.length - 1]!.index;
    return entries;
  }

  /** The host persisted entries up to (index, term). */
  stableTo(index: number, term: number): void {
    if (index < this.offset || index >= this.offset + this.unstable.length) return;
    if (this.unstable[index - this.offset]!.term !== term) return;
    this.unstable = this.unstable.slice(index + 1 - this.offset);
    this.offset = index + 1;
  }

  /** The host's disk holds the log through (index, term), writes landing in order. */
  durableTo(index: number, term: number): void {
    this.durable = { index, term };
  }

  /**
   * Highest index known durable that is still part of the log. By Log Matching, a matching
   * (index, term) means the whole prefix on disk equals ours; after a truncation it does not
   * match, and 0 waits for the write of the replacement to be reported.
   */
  durableIndex(): number {
    const d = this.durable;
    return d.index <= this.lastIndex() && this.term(d.index) === d.term ? d.index : 0;
  }

  stableSnapshotTo(index: number): void {
    if (this.unstableSnapshot?.metadata.index === index) this.unstableSnapshot = undefined;
  }

  appliedTo(index: number): void {
    if (index <= this.applied) return;
    assert(index <= this.committed, () => `applied ${index} beyond commit ${this.committed}`);
    this.applied = index;
    if (this.applying < index) this.applying = index;
  }

  /** Replaces the log with an incoming snapshot (follower). */
  restore(snapshot: Snapshot): void {
    this.committed = snapshot.metadata.index;
    this.unstable = [];
    this.offset = snapshot.metadata.index + 1;
    this.unstableSnapshot = snapshot;
  }

  snapshot(): Snapshot {
    return this.unstableSnapshot ?? this.storage.snapshot();
  }
}
