// What every replicated thing implements: the controller's metadata, a transaction-log
// partition, a topic partition, a consumer-offsets partition. The host applies committed
// entries in log order on every replica, so apply() must be deterministic: no clock, no
// randomness, no I/O; anything time-dependent travels inside the entry.
import type { ConfState } from "../raft/types.js";
import type { AppliedLog } from "./applied-log.js";

/** The Raft term and membership at a snapshot's index. */
export interface SnapshotPoint {
  readonly term: number;
  readonly confState: ConfState;
}

export interface AppliedEntry {
  readonly index: number;
  readonly term: number;
  readonly data: Uint8Array;
  /** The Raft entry type (given to state machines with an appliedLog, which see every entry). */
  readonly type?: number;
}

export interface StateMachine<Result = unknown> {
  /** Applies one committed entry and returns the answer for its proposer (if it is waiting here). */
  apply(entry: AppliedEntry): Result;
  /** Serializes the state as of the last applied entry. */
  snapshot(): Uint8Array;
  /**
   * Replaces the state with a snapshot's at `index`: a local one after a restart, or one
   * installed from the leader. `at` gives the term and membership at that index.
   */
  restore(data: Uint8Array, index: number, at?: SnapshotPoint): void;
  /**
   * Set when the state machine keeps every applied entry itself (a partition's segments): apply()
   * then also gets empty entries and conf changes, and the host serves older entries from it.
   */
  readonly appliedLog?: AppliedLog;
  /** Called on every replica when this replica becomes leader or stops being leader. */
  onRoleChange?(isLeader: boolean, term: number): void;
}
