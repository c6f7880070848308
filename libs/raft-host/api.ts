// The contract of libs/raft-host: many Raft groups in one process, on one level database and
// one gRPC transport. Services (controller, broker, coordinator) depend on exactly this file;
// host.ts implements it.
import type { Entry, NodeId, RaftStatus } from "../raft/types.js";
import type { StateMachine } from "./state-machine.js";

export interface GroupOptions {
  /** Unique within the process, e.g. "__controller", "orders/3", "__transaction_state/22". */
  readonly groupId: string;
  /** Voters used only when the group is created for the first time (ignored when reopened from disk). */
  readonly initialVoters: readonly NodeId[];
  readonly stateMachine: StateMachine;
}

export interface ProposeResult<R = unknown> {
  readonly index: number;
  readonly term: number;
  /** What the state machine's apply() returned for this entry on this replica. */
  readonly result: R;
}

export interface RaftGroup {
  readonly groupId: string;
  /**
   * Proposes data; resolves once the entry is committed and applied here, with apply()'s result.
   * Rejects with TernError NOT_LEADER_OR_FOLLOWER (details.leader: NodeId or -1) when this replica
   * is not the leader or loses leadership before the entry commits, THROTTLING_QUOTA_EXCEEDED
   * when the uncommitted limit is reached, REQUEST_TIMED_OUT after timeoutMs.
   */
  propose<R = unknown>(
    data: Uint8Array,
    options?: { timeoutMs?: number },
  ): Promise<ProposeResult<R>>;
  /**
   * Linearizable read barrier: resolves once this replica (the leader) has applied up to a
   * confirmed read index. Barriers asked before the same scheduler turn share one read index
   * (one heartbeat round). Rejects with NOT_LEADER_OR_FOLLOWER when leadership is lost first,
   * REQUEST_TIMED_OUT when no quorum confirms it within timeoutMs.
   */
  readBarrier(options?: { timeoutMs?: number }): Promise<void>;
  /** Resolves once the state machine has applied at least index. */
  waitApplied(index: number, options?: { timeoutMs?: number }): Promise<void>;
  isLeader(): boolean;
  leader(): NodeId;
  term(): number;
  appliedIndex(): number;
  status(): RaftStatus;
  /** Entries still in the log in [lo, hi), for state machines whose log is their data (partitions). */
  readEntries(lo: number, hi: number, maxBytes: number): Entry[];
  firstIndex(): number;
  transferLeadership(to: NodeId): void;
  addVoter(nodeId: NodeId, options?: { timeoutMs?: number }): Promise<void>;
  removeNode(nodeId: NodeId, options?: { timeoutMs?: number }): Promise<void>;
}

export interface LeaderChange {
  readonly groupId: string;
  readonly leader: NodeId;
  readonly term: number;
}

export interface RaftHostApi {
  readonly nodeId: NodeId;
  /** Creates the group, or reopens it from disk (state machine restored from snapshot + log tail). */
  openGroup(options: GroupOptions): Promise<RaftGroup>;
  /** Stops the group and deletes its data from this node. */
  dropGroup(groupId: string): Promise<void>;
  group(groupId: string): RaftGroup | undefined;
  groups(): Iterable<RaftGroup>;
  /** Where peers (same role, by node id) are reached; updated from cluster metadata. */
  setPeerAddress(nodeId: NodeId, address: string): void;
  onLeaderChange(listener: (change: LeaderChange) => void): () => void;
  /** Moves every leadership this node holds to a peer, waiting at most timeoutMs. */
  transferAllLeaderships(timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}
