// The simulator's GroupLog (raft-host/pipeline-ports.ts): the host's HostGroup and Ready pipeline
// stage into crash storage instead of level. Every change goes to the crash storage's volatile
// view at once (as GroupStorage stages into its MemoryStorage); the op pushed into the batch only
// tells the pipeline that something of this Ready must land before it acts on what waits for it.
import type { BatchOp } from "../raft-host/level-store.js";
import type { GroupLog } from "../raft-host/pipeline-ports.js";
import type { MemoryStorage } from "../raft/memory-storage.js";
import type { ConfState, HardState, Ready } from "../raft/types.js";
import type { CrashStorage } from "./crash-storage.js";

/** The one op the simulator's batches carry: its content is in the crash storage's journal. */
const STAGED: BatchOp = { type: "del", key: new Uint8Array(0) };

export class SimGroupLog implements GroupLog {
  readonly journaled = false;

  constructor(
    private readonly crash: CrashStorage,
    private readonly onHardState: (h: HardState) => void,
  ) {}

  get memory(): MemoryStorage {
    return this.crash.volatile;
  }

  snapshotIndex(): number {
    return this.crash.volatile.snapshot().metadata.index;
  }

  /** As GroupStorage.stageReady: a commit-only hard state goes to `deferred` (carried to a later batch). */
  stageReady(rd: Ready, ops: BatchOp[], deferred: BatchOp[] = ops): number {
    const persisted = this.memory.hardStateNow();
    if (rd.snapshot && rd.snapshot.metadata.index > this.snapshotIndex()) {
      this.crash.applySnapshot(rd.snapshot);
      ops.push(STAGED);
    }
    if (rd.entries.length > 0) {
      this.crash.append(rd.entries);
      ops.push(STAGED);
    }
    if (rd.hardState) {
      const commitOnly =
        rd.hardState.term === persisted.term &&
        rd.hardState.vote === persisted.vote &&
        !rd.snapshot &&
        rd.entries.length === 0 &&
        !rd.confState;
      this.crash.setHardState(rd.hardState);
      this.onHardState(rd.hardState);
      (commitOnly ? deferred : ops).push(STAGED);
    }
    if (rd.confState) {
      this.crash.setConfState(rd.confState);
      ops.push(STAGED);
    }
    return 0;
  }

  stageLocalSnapshot(
    index: number,
    confState: ConfState,
    data: Uint8Array,
    compactIndex: number,
    ops: BatchOp[],
  ): void {
    this.crash.createSnapshot(index, confState, data);
    ops.push(STAGED);
    this.stageCompaction(compactIndex, ops);
  }

  stageCompaction(compactIndex: number, ops: BatchOp[]): boolean {
    if (compactIndex < this.memory.firstIndex()) return false;
    this.crash.compact(compactIndex);
    ops.push(STAGED);
    return true;
  }
}
