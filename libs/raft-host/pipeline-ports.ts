// The ports of the Ready pipeline (ready-pipeline.ts): what it needs from a group's log, from the
// disk and from the network and event loop. The raft host plugs in level, the entry journal,
// gRPC and setImmediate; the simulator (libs/sim) plugs in its crash storage, its simulated
// network and its own step loop, so both run the same turn / write / landed code.
import type { MemoryStorage } from "../raft/memory-storage.js";
import type { ConfState, Ready } from "../raft/types.js";
import type { JournalRecord } from "./journal-codec.js";
import type { BatchOp } from "./level-store.js";
import type { JournalRelease } from "./entry-journal.js";

/**
 * One group's log: a MemoryStorage the core reads synchronously, mirrored into the batches the
 * pipeline writes. group-storage.ts on level (and the entry journal); the simulator's crash storage.
 */
export interface GroupLog {
  readonly memory: MemoryStorage;
  /** Entries go to the entry journal (DiskBatch.journal), not to ops. */
  readonly journaled: boolean;
  snapshotIndex(): number;
  /** Stages a Ready's snapshot, entries, hard and conf state (GroupStorage.stageReady). */
  stageReady(rd: Ready, ops: BatchOp[], deferred?: BatchOp[], journal?: JournalRecord[]): number;
  stageLocalSnapshot(
    index: number,
    confState: ConfState,
    data: Uint8Array,
    compactIndex: number,
    ops: BatchOp[],
  ): void;
  stageCompaction(compactIndex: number, ops: BatchOp[]): boolean;
}

/** What one pipeline batch asks of the disk (ready-pipeline.ts's PendingWrite adds who waits for it). */
export interface DiskBatch {
  readonly ops: BatchOp[];
  readonly sync: boolean;
  /** Entries (and resets) of journaled groups, written after ops. */
  readonly journal: JournalRecord[];
  /** Journal entries compacted by this batch's ops, released once it lands. */
  readonly releases: JournalRelease[];
}

/** Where the pipeline's batches go. At most one write is in flight; batches land in order. */
export interface BatchStore {
  /**
   * Writes `ops` (carried ops first, then the batch's) and the batch's journal records; calls
   * landed() once all of it is durable (as durable as batch.sync asks), failed() otherwise.
   */
  write(ops: BatchOp[], batch: DiskBatch, landed: () => void, failed: (err: Error) => void): void;
}

/** Sends what the groups queued (sendMessages goes through the group's host context). */
export interface BatchNetwork {
  /** Sends the messages queued since the last flush (not the deferred heartbeats). */
  flush(): void;
}

/** When turns run: the event loop in the host, the simulator's step loop in libs/sim. */
export interface TurnScheduler {
  /** Runs `turn` soon, after the current event-loop task (setImmediate). */
  soon(turn: () => void): void;
  /** Runs `turn` once the microtasks queued so far (waiters' continuations) have run. */
  afterMicrotasks(turn: () => void): void;
}
