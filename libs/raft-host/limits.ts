// Every bound of the Raft host in one place (TigerBeetle style: a limit on everything).
import { assert } from "../common/assert.js";

export interface RaftHostLimits {
  /** Core: upper bound on the entry bytes of one Append message. */
  readonly appendBytesMax: number;
  /** Core: unacknowledged Append messages per follower (pipelining window). */
  readonly inflightMessagesMax: number;
  /** Core: proposed but uncommitted entry bytes at a leader. */
  readonly uncommittedBytesMax: number;
  /** Core: committed entry bytes handed out in one Ready. */
  readonly committedBytesPerReadyMax: number;
  /** Proposals waiting for commit, per group. */
  readonly pendingProposalsMax: number;
  /** Read barriers and applied-index waiters, per group. */
  readonly waitersMax: number;
  /** Default timeout of propose(), readBarrier(), waitApplied(), addVoter(). */
  readonly requestTimeoutMs: number;
  /** Groups one process hosts. */
  readonly groupsMax: number;
  /** Entries a group may hold on disk when it is opened (recovery reads them all into memory). */
  readonly logEntriesOnOpenMax: number;
  /** A local snapshot is taken once this many entries were applied since the last one... */
  readonly snapshotEntriesInterval: number;
  /** ...or this many entry bytes. */
  readonly snapshotBytesInterval: number;
  /** Entries kept below a local snapshot so slightly lagging followers catch up from the log. */
  readonly compactionMarginEntries: number;
  /**
   * Entries a group's log keeps for its state machine (retainFromIndex) at most; older retained
   * entries move into the snapshot. Keeps recovery within logEntriesOnOpenMax whatever the
   * retention (a partition of many one-record batches).
   */
  readonly logEntriesRetainedMax: number;
  /** Messages queued for one peer before new ones are dropped (and the peer reported unreachable). */
  readonly peerQueueMessagesMax: number;
  readonly peerQueueBytesMax: number;
  /** Snapshot transfer chunk size and total bound. */
  readonly snapshotChunkBytes: number;
  readonly snapshotBytesMax: number;
  /** Concurrent outgoing snapshot transfers per process. */
  readonly snapshotTransfersMax: number;
  /** Reconnect backoff to a peer: doubles from min to max, with +-20% jitter. */
  readonly reconnectBackoffMsMin: number;
  readonly reconnectBackoffMsMax: number;
  /** HTTP/2 flow-control window (connection and stream); the 64 KiB default caps throughput. */
  readonly flowControlWindowBytes: number;
  /** Largest gRPC message accepted (one RaftBatch frame). */
  readonly grpcMessageBytesMax: number;
}

const MiB = 1024 * 1024;

export const DEFAULT_LIMITS: RaftHostLimits = {
  appendBytesMax: 1 * MiB,
  inflightMessagesMax: 256,
  uncommittedBytesMax: 64 * MiB,
  committedBytesPerReadyMax: 16 * MiB,
  pendingProposalsMax: 16_384,
  waitersMax: 4_096,
  requestTimeoutMs: 10_000,
  groupsMax: 10_000,
  logEntriesOnOpenMax: 2_000_000,
  snapshotEntriesInterval: 20_000,
  snapshotBytesInterval: 64 * MiB,
  compactionMarginEntries: 1_000,
  logEntriesRetainedMax: 1_000_000,
  peerQueueMessagesMax: 65_536,
  peerQueueBytesMax: 128 * MiB,
  snapshotChunkBytes: 1 * MiB,
  snapshotBytesMax: 1024 * MiB,
  snapshotTransfersMax: 4,
  reconnectBackoffMsMin: 50,
  reconnectBackoffMsMax: 2_000,
  flowControlWindowBytes: 32 * MiB,
  grpcMessageBytesMax: 512 * MiB,
};

export function resolveLimits(overrides: Partial<RaftHostLimits> | undefined): RaftHostLimits {
  const limits = { ...DEFAULT_LIMITS, ...overrides };
  for (const [name, value] of Object.entries(limits)) {
    assert(Number.isSafeInteger(value) && value > 0, () => `raft-host limit ${name} must be a positive integer, got ${value}`);
  }
  assert(limits.reconnectBackoffMsMin <= limits.reconnectBackoffMsMax, "reconnect backoff min exceeds max");
  assert(limits.appendBytesMax < limits.grpcMessageBytesMax, "appendBytesMax must fit in one gRPC message");
  assert(limits.compactionMarginEntries < limits.logEntriesRetainedMax, "compactionMarginEntries must be below logEntriesRetainedMax");
  assert(
    limits.logEntriesRetainedMax + limits.snapshotEntriesInterval + limits.compactionMarginEntries < limits.logEntriesOnOpenMax,
    "a log of logEntriesRetainedMax + snapshotEntriesInterval + compactionMarginEntries entries must open within logEntriesOnOpenMax",
  );
  return limits;
}
