// One group's log: a MemoryStorage the core reads synchronously, mirrored to level. Every
// change is staged twice, into memory now and into the turn's write batch, so the disk and
// the cache never disagree once the batch lands. The host persists before it sends or applies.
import { assert } from "../common/assert.js";
import { MemoryStorage } from "../raft/memory-storage.js";
import type { ConfState, Entry, HardState, NodeId, Ready, Snapshot } from "../raft/types.js";
import {
  encodeBlobRecord,
  encodeConfStateRecord,
  encodeEntryRecord,
  encodeHardStateRecord,
  encodeLogStartRecord,
  encodeSnapshotMetadataRecord,
} from "./disk-codec.js";
import type { GroupKeys } from "./keys.js";
import type { BatchOp, PersistedGroup } from "./level-store.js";

export class GroupStorage {
  private constructor(readonly keys: GroupKeys, readonly memory: MemoryStorage) {}

  /** A brand-new group: its first conf state is written with the first batch. */
  static create(keys: GroupKeys, voters: readonly NodeId[], ops: BatchOp[]): GroupStorage {
    assert(voters.length > 0, () => `group ${keys.groupId}: no initial voters`);
    const storage = new GroupStorage(keys, new MemoryStorage({ voters }));
    const { confState } = storage.memory.initialState();
    ops.push({ type: "put", key: keys.conf, value: encodeConfStateRecord(confState) });
    return storage;
  }

  /** Rebuilds the cache from what level held (already checked by LevelStore.loadGroup). */
  static recover(keys: GroupKeys, p: PersistedGroup): GroupStorage {
    const memory = new MemoryStorage({ voters: p.confState.voters, learners: p.confState.learners });
    if (p.logStart.index > 0) {
      // The log starts after a compacted prefix. When the snapshot is newer than the log start
      // (the state machine retains older entries), seed with a stand-in at the log start first.
      const exact = p.snapshot !== undefined && p.snapshot.metadata.index === p.logStart.index;
      const confState = p.snapshot?.metadata.confState ?? p.confState;
      memory.applySnapshot(exact ? p.snapshot! : { metadata: { index: p.logStart.index, term: p.logStart.term, confState }, data: new Uint8Array(0) });
    }
    memory.append(p.entries);
    if (p.snapshot && p.snapshot.metadata.index > p.logStart.index) {
      memory.createSnapshot(p.snapshot.metadata.index, p.snapshot.metadata.confState, p.snapshot.data);
    }
    memory.setConfState(p.confState);
    // A deferred commit-only hard state may lag a snapshot; the snapshot's index is committed.
    const snapIndex = p.snapshot?.metadata.index ?? 0;
    memory.setHardState(p.hardState.commit >= snapIndex ? p.hardState : { ...p.hardState, commit: snapIndex });
    return new GroupStorage(keys, memory);
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
  stageReady(rd: Ready, ops: BatchOp[], deferred: BatchOp[] = ops): number {
    let bytes = 0;
    const persisted = this.memory.hardStateNow();
    if (rd.snapshot && rd.snapshot.metadata.index > this.snapshotIndex()) bytes += this.stageIncomingSnapshot(rd.snapshot, ops);
    if (rd.entries.length > 0) bytes += this.stageEntries(rd.entries, ops);
    if (rd.hardState) {
      const commitOnly = rd.hardState.term === persisted.term && rd.hardState.vote === persisted.vote && !rd.snapshot && rd.entries.length === 0 && !rd.confState;
      this.stageHardState(rd.hardState, commitOnly ? deferred : ops);
    }
    if (rd.confState) this.stageConfState(rd.confState, ops);
    return bytes;
  }

  private stageIncomingSnapshot(snapshot: Snapshot, ops: BatchOp[]): number {
    const first = this.memory.firstIndex();
    const last = this.memory.lastIndex();
    for (let i = first; i <= last; i++) ops.push({ type: "del", key: this.keys.entry(i) });
    this.memory.applySnapshot(snapshot);
    this.putSnapshot(snapshot, ops);
    ops.push({ type: "put", key: this.keys.logStart, value: encodeLogStartRecord({ index: snapshot.metadata.index, term: snapshot.metadata.term }) });
    ops.push({ type: "put", key: this.keys.conf, value: encodeConfStateRecord(snapshot.metadata.confState) });
    return snapshot.data.byteLength;
  }

  private stageEntries(entries: readonly Entry[], ops: BatchOp[]): number {
    const lastBefore = this.memory.lastIndex();
    this.memory.append(entries);
    let bytes = 0;
    const firstIndex = this.memory.firstIndex();
    for (const e of entries) {
      if (e.index < firstIndex) continue; // already compacted away
      const value = encodeEntryRecord(e);
      bytes += value.byteLength;
      ops.push({ type: "put", key: this.keys.entry(e.index), value });
    }
    // A conflicting append replaced a suffix: delete what lay beyond the new end.
    const lastAfter = this.memory.lastIndex();
    for (let i = lastAfter + 1; i <= lastBefore; i++) ops.push({ type: "del", key: this.keys.entry(i) });
    return bytes;
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
    ops.push({ type: "put", key: this.keys.snapMeta, value: encodeSnapshotMetadataRecord(snapshot.metadata, snapshot.data.byteLength) });
    ops.push({ type: "put", key: this.keys.snapData, value: encodeBlobRecord(snapshot.data) });
  }

  /**
   * Records a local snapshot of the state machine at `index` (applied) and compacts the log up
   * to compactIndex (<= index), deleting the compacted entries in the same batch.
   */
  stageLocalSnapshot(index: number, confState: ConfState, data: Uint8Array, compactIndex: number, ops: BatchOp[]): void {
    assert(compactIndex <= index, () => `compact ${compactIndex} beyond the snapshot ${index}`);
    const snapshot = this.memory.createSnapshot(index, confState, data);
    this.putSnapshot(snapshot, ops);
    const firstBefore = this.memory.firstIndex();
    if (compactIndex < firstBefore) return;
    const term = this.memory.term(compactIndex);
    this.memory.compact(compactIndex);
    for (let i = firstBefore; i <= compactIndex; i++) ops.push({ type: "del", key: this.keys.entry(i) });
    ops.push({ type: "put", key: this.keys.logStart, value: encodeLogStartRecord({ index: compactIndex, term }) });
  }
}
