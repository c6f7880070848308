// One group's log: a MemoryStorage the core reads synchronously, mirrored to level. Every
// change is staged twice, into memory now and into the turn's write batch, so the disk and
// the cache never disagree once the batch lands. The host persists before it sends or applies.
import { assert } from "../common/assert.js";
import { MemoryStorage } from "../raft/memory-storage.js";
import type { ConfState, Entry, HardState, NodeId, Ready, Snapshot } from "../raft/types.js";
import {
  encodeBlobRecord,
  encodeConfStateRecord,
  encodeEntryRunRecord,
  encodeHardStateRecord,
  encodeLogStartRecord,
  encodeSnapshotMetadataRecord,
} from "./disk-codec.js";
import type { JournalRecord } from "./journal-codec.js";
import type { GroupKeys } from "./keys.js";
import type { BatchOp, EntryRun, PersistedGroup } from "./level-store.js";

/** Entry bytes per run record: bounds the rewrite when a conflicting append trims a run. */
const RUN_BYTES_MAX = 1024 * 1024;

export class GroupStorage {
  /**
   * The entry runs on disk (after the batches staged so far land), ascending and contiguous:
   * run i holds [runFirst[i], runLast[i]] under the key of runFirst[i].
   */
  private runFirst: number[] = [];
  private runLast: number[] = [];

  /**
   * journaled: the group's entries go to the process's entry journal (entry-journal.ts) instead
   * of level; hard state, conf state, snapshots and the log start stay in level.
   */
  private constructor(
    readonly keys: GroupKeys,
    readonly memory: MemoryStorage,
    readonly journaled: boolean,
  ) {}

  /**
   * A brand-new group: its first conf state is written with the first batch (and a journaled
   * group's journal history is reset: a group of the same id may have been dropped before).
   */
  static create(
    keys: GroupKeys,
    voters: readonly NodeId[],
    ops: BatchOp[],
    journal?: JournalRecord[],
  ): GroupStorage {
    assert(voters.length > 0, () => `group ${keys.groupId}: no initial voters`);
    const storage = new GroupStorage(keys, new MemoryStorage({ voters }), journal !== undefined);
    const { confState } = storage.memory.initialState();
    ops.push({ type: "put", key: keys.conf, value: encodeConfStateRecord(confState) });
    journal?.push({ kind: "reset", groupId: keys.groupId, index: 0, term: 0 });
    return storage;
  }

  /** Rebuilds the cache from what level (and the journal) held, already checked. */
  static recover(keys: GroupKeys, p: PersistedGroup, journaled = false): GroupStorage {
    const memory = new MemoryStorage({
      voters: p.confState.voters,
      learners: p.confState.learners,
    });
    if (p.logStart.index > 0) {
      // The log starts after a compacted prefix. When the snapshot is newer than the log start
      // (the log keeps a margin of entries below it), seed with a stand-in at the log start first.
      const exact = p.snapshot !== undefined && p.snapshot.metadata.index === p.logStart.index;
      const confState = p.snapshot?.metadata.confState ?? p.confState;
      memory.applySnapshot(
        exact
          ? p.snapshot!
          : {
              metadata: { index: p.logStart.index, term: p.logStart.term, confState },
              data: new Uint8Array(0),
            },
      );
    }
    memory.append(p.entries);
    if (p.snapshot && p.snapshot.metadata.index > p.logStart.index) {
      memory.createSnapshot(
        p.snapshot.metadata.index,
        p.snapshot.metadata.confState,
        p.snapshot.data,
      );
    }
    memory.setConfState(p.confState);
    // A deferred commit-only hard state may lag a snapshot; the snapshot's index is committed.
    const snapIndex = p.snapshot?.metadata.index ?? 0;
    memory.setHardState(
      p.hardState.commit >= snapIndex ? p.hardState : { ...p.hardState, commit: snapIndex },
    );
    const storage = new GroupStorage(keys, memory, journaled);
    for (const run of p.runs) {
      storage.runFirst.push(run.first);
      storage.runLast.push(run.last);
    }
    return storage;
  }

  /** Entry runs on disk (for tests and diagnostics). */
  runs(): EntryRun[] {
    return this.runFirst.map((first, i) => ({ first, last: this.runLast[i]! }));
  }

  snapshotIndex(): number {
    return this.memory.snapshot().metadata.index;
  }

  /**
   * Stages the persistent parts of a Ready: snapshot, entries (with truncation), hard and conf
   * state, into `ops` (must be durable before the host acts on the Ready). A hard state that only
   * moves the commit index goes to `deferred` instead: the commit index is re-learned from the
   * leader after a restart, so it may ride along with a later batch (ordered before that batch's
   * own ops, so it never overwrites a newer hard state).
   */
  stageReady(
    rd: Ready,
    ops: BatchOp[],
    deferred: BatchOp[] = ops,
    journal?: JournalRecord[],
  ): number {
    assert(
      !this.journaled || journal !== undefined,
      () => `group ${this.keys.groupId}: journaled, staged without a journal`,
    );
    let bytes = 0;
    const persisted = this.memory.hardStateNow();
    if (rd.snapshot && rd.snapshot.metadata.index > this.snapshotIndex())
      bytes += this.stageIncomingSnapshot(rd.snapshot, ops, journal);
    if (rd.entries.length > 0) bytes += this.stageEntries(rd.entries, ops, journal);
    if (rd.hardState) {
      // A journaled group's entries go to the journal, so a hard state that only moves the
      // commit index rides along with a later level batch even when the Ready has entries: the
      // commit is re-learned from the leader after a restart (docs/raft-performance.md, rule 3).
      const commitOnly =
        rd.hardState.term === persisted.term &&
        rd.hardState.vote === persisted.vote &&
        !rd.snapshot &&
        (rd.entries.length === 0 || this.journaled) &&
        !rd.confState;
      this.stageHardState(rd.hardState, commitOnly ? deferred : ops);
    }
    if (rd.confState) this.stageConfState(rd.confState, ops);
    return bytes;
  }

  private stageIncomingSnapshot(
    snapshot: Snapshot,
    ops: BatchOp[],
    journal: JournalRecord[] | undefined,
  ): number {
    this.deleteRunsFrom(0, ops);
    if (this.journaled)
      journal!.push({
        kind: "reset",
        groupId: this.keys.groupId,
        index: snapshot.metadata.index,
        term: snapshot.metadata.term,
      });
    this.memory.applySnapshot(snapshot);
    this.putSnapshot(snapshot, ops);
    ops.push({
      type: "put",
      key: this.keys.logStart,
      value: encodeLogStartRecord({ index: snapshot.metadata.index, term: snapshot.metadata.term }),
    });
    ops.push({
      type: "put",
      key: this.keys.conf,
      value: encodeConfStateRecord(snapshot.metadata.confState),
    });
    return snapshot.data.byteLength;
  }

  private stageEntries(
    entries: readonly Entry[],
    ops: BatchOp[],
    journal: JournalRecord[] | undefined,
  ): number {
    this.memory.append(entries);
    const firstIndex = this.memory.firstIndex();
    let from = 0;
    while (from < entries.length && entries[from]!.index < firstIndex) from++; // already compacted away
    if (from === entries.length) return 0;
    // Whatever the disk holds at or after the first new index is replaced (a conflicting append).
    this.trimRunsFrom(entries[from]!.index, ops);
    if (this.journaled) {
      const staged = from === 0 ? entries : entries.slice(from);
      journal!.push({ kind: "entries", groupId: this.keys.groupId, entries: staged });
      let bytes = 0;
      for (const e of staged) bytes += e.data.byteLength;
      return bytes;
    }
    let bytes = 0;
    while (from < entries.length) {
      let to = from + 1;
      let runBytes = entries[from]!.data.byteLength;
      while (to < entries.length && runBytes + entries[to]!.data.byteLength <= RUN_BYTES_MAX)
        runBytes += entries[to++]!.data.byteLength;
      bytes += this.putRun(entries, from, to, ops);
      from = to;
    }
    return bytes;
  }

  private putRun(entries: readonly Entry[], from: number, to: number, ops: BatchOp[]): number {
    const first = entries[from]!.index;
    const last = entries[to - 1]!.index;
    const n = this.runFirst.length;
    assert(
      n === 0 || this.runLast[n - 1]! + 1 === first,
      () =>
        `group ${this.keys.groupId}: run ${first}..${last} does not follow the run ending at ${this.runLast[n - 1]}`,
    );
    const value = encodeEntryRunRecord(entries, from, to);
    ops.push({ type: "put", key: this.keys.entry(first), value });
    this.runFirst.push(first);
    this.runLast.push(last);
    return value.byteLength;
  }

  /** Removes every entry at or after index from disk: later runs deleted, a straddling run rewritten shorter. */
  private trimRunsFrom(index: number, ops: BatchOp[]): void {
    let i = this.runFirst.length;
    while (i > 0 && this.runFirst[i - 1]! >= index) i--;
    this.deleteRunsFrom(i, ops);
    if (i === 0 || this.runLast[i - 1]! < index) return;
    // Run i-1 straddles index: rewrite its prefix (still in memory: the append kept it).
    const first = Math.max(this.runFirst[i - 1]!, this.memory.firstIndex());
    this.deleteRunsFrom(i - 1, ops);
    if (first < index)
      this.putRun(
        this.memory.entries(first, index, Number.MAX_SAFE_INTEGER),
        0,
        index - first,
        ops,
      );
  }

  private deleteRunsFrom(i: number, ops: BatchOp[]): void {
    for (let j = i; j < this.runFirst.length; j++)
      ops.push({ type: "del", key: this.keys.entry(this.runFirst[j]!) });
    this.runFirst.length = i;
    this.runLast.length = i;
  }

  private stageHardState(h: HardState, ops: BatchOp[]): void {
    this.memory.setHardState(h);
    ops.push({ type: "put", key: this.keys.hard, value: encodeHardStateRecord(h) });
  }

  private stageConfState(c: ConfState, ops: BatchOp[]): void {
    this.memory.setConfState(c);
    ops.push({ type: "put", key: this.keys.conf, value: encodeConfStateRecord(c) });
  }

  private putSnapshot(snapshot: Snapshot, ops: BatchOp[]): void {
    ops.push({
      type: "put",
      key: this.keys.snapMeta,
      value: encodeSnapshotMetadataRecord(snapshot.metadata, snapshot.data.byteLength),
    });
    ops.push({ type: "put", key: this.keys.snapData, value: encodeBlobRecord(snapshot.data) });
  }

  /**
   * Records a local snapshot of the state machine at `index` (applied) and compacts the log up
   * to compactIndex (<= index), deleting the compacted entries in the same batch.
   */
  stageLocalSnapshot(
    index: number,
    confState: ConfState,
    data: Uint8Array,
    compactIndex: number,
    ops: BatchOp[],
  ): void {
    assert(compactIndex <= index, () => `compact ${compactIndex} beyond the snapshot ${index}`);
    const snapshot = this.memory.createSnapshot(index, confState, data);
    this.putSnapshot(snapshot, ops);
    this.stageCompaction(compactIndex, ops);
  }

  /**
   * Compacts the log up to compactIndex (at most the snapshot's index), deleting the compacted
   * entries from level in the same batch. False when there is nothing to compact.
   */
  stageCompaction(compactIndex: number, ops: BatchOp[]): boolean {
    assert(
      compactIndex <= this.snapshotIndex(),
      () => `compact ${compactIndex} beyond the snapshot ${this.snapshotIndex()}`,
    );
    const firstBefore = this.memory.firstIndex();
    if (compactIndex < firstBefore) return false;
    const term = this.memory.term(compactIndex);
    this.memory.compact(compactIndex);
    // Runs wholly compacted are deleted; one straddling compactIndex stays (recovery skips its
    // entries at or below the log start).
    let n = 0;
    while (n < this.runFirst.length && this.runLast[n]! <= compactIndex) {
      ops.push({ type: "del", key: this.keys.entry(this.runFirst[n]!) });
      n++;
    }
    this.runFirst.splice(0, n);
    this.runLast.splice(0, n);
    ops.push({
      type: "put",
      key: this.keys.logStart,
      value: encodeLogStartRecord({ index: compactIndex, term }),
    });
    return true;
  }
}
