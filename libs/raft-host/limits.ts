// Every bound of the Raft host in one place (TigerBeetle style: a limit on everything). The
// message bound comes from libs/common/limits.ts: peers' servers accept no more than that.
import { assert } from "../common/assert.js";
import {
  atMost,
  checkLimitRelations,
  GRPC_MESSAGE_BYTES_MAX,
  KiB,
  type LimitRelation,
} from "../common/limits.js";

export interface RaftHostLimits {
  /** Core: upper bound on the entry bytes of one Append message. */
  readonly appendBytesMax: number;
  /** Core: unacknowledged Append messages per follower (pipelining window). */
  readonly inflightMessagesMax: number;
  /**
   * Core: entry bytes of unacknowledged Appends per follower. What a lagging follower's catch-up
   * holds at the leader (queued messages keep their entries alive): without it, up to
   * inflightMessagesMax x appendBytesMax, bounded only by the peer queue.
   */
  readonly inflightBytesMax: number;
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
  /**
   * Applied entry bytes that all journaled groups (partition replicas) together keep in memory
   * until their snapshots let them go (head-budget.ts); past it, the largest take a snapshot.
   */
  readonly journaledHeadBytesMax: number;
  /** Entries kept below a local snapshot so slightly lagging followers catch up from the log. */
  readonly compactionMarginEntries: number;
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
  /**
   * Largest gRPC message sent or accepted: the transport splits a peer's queue into RaftBatch
   * frames no larger than this (at most GRPC_MESSAGE_BYTES_MAX, what every peer's server accepts).
   */
  readonly grpcMessageBytesMax: number;
}

/**
 * Room in a frame or a snapshot chunk for everything but entry or chunk bytes: the frame's and
 * envelopes' fields, group ids, a message's fixed fields and entry headers, chunk metadata.
 */
export const MESSAGE_ENVELOPE_BYTES_MAX = 64 * KiB;

const MiB = 1024 * 1024;

export const DEFAULT_LIMITS: RaftHostLimits = {
  appendBytesMax: 1 * MiB,
  inflightMessagesMax: 256,
  inflightBytesMax: 8 * MiB,
  uncommittedBytesMax: 64 * MiB,
  committedBytesPerReadyMax: 16 * MiB,
  pendingProposalsMax: 16_384,
  waitersMax: 4_096,
  requestTimeoutMs: 10_000,
  groupsMax: 20_000,
  logEntriesOnOpenMax: 2_000_000,
  snapshotEntriesInterval: 20_000,
  snapshotBytesInterval: 64 * MiB,
  journaledHeadBytesMax: 32 * MiB,
  compactionMarginEntries: 1_000,
  peerQueueMessagesMax: 65_536,
  peerQueueBytesMax: 128 * MiB,
  snapshotChunkBytes: 1 * MiB,
  snapshotBytesMax: 1024 * MiB,
  snapshotTransfersMax: 4,
  reconnectBackoffMsMin: 50,
  reconnectBackoffMsMax: 2_000,
  flowControlWindowBytes: 32 * MiB,
  grpcMessageBytesMax: GRPC_MESSAGE_BYTES_MAX,
};

export function resolveLimits(overrides: Partial<RaftHostLimits> | undefined): RaftHostLimits {
  const limits = { ...DEFAULT_LIMITS, ...overrides };
  for (const [name, value] of Object.entries(limits)) {
    assert(
      Number.isSafeInteger(value) && value > 0,
      () => `raft-host limit ${name} must be a positive integer, got ${value}`,
    );
  }
  checkLimitRelations("raft-host", raftLimitRelations(limits));
  return limits;
}

/** What must hold between the Raft host's limits, and with the cross-process message bound. */
export function raftLimitRelations(limits: RaftHostLimits): LimitRelation[] {
  return [
    atMost(
      "reconnectBackoffMsMin",
      limits.reconnectBackoffMsMin,
      "reconnectBackoffMsMax",
      limits.reconnectBackoffMsMax,
    ),
    // A peer's server (libs/grpc/grpc-options.ts) refuses a larger frame and the stream breaks.
    atMost(
      "grpcMessageBytesMax",
      limits.grpcMessageBytesMax,
      "GRPC_MESSAGE_BYTES_MAX (what every peer accepts)",
      GRPC_MESSAGE_BYTES_MAX,
    ),
    // One Append message of appendBytesMax entry bytes, and one snapshot chunk, go in one frame.
    atMost(
      "appendBytesMax + MESSAGE_ENVELOPE_BYTES_MAX",
      limits.appendBytesMax + MESSAGE_ENVELOPE_BYTES_MAX,
      "grpcMessageBytesMax",
      limits.grpcMessageBytesMax,
    ),
    atMost(
      "snapshotChunkBytes + MESSAGE_ENVELOPE_BYTES_MAX",
      limits.snapshotChunkBytes + MESSAGE_ENVELOPE_BYTES_MAX,
      "grpcMessageBytesMax",
      limits.grpcMessageBytesMax,
    ),
    // The core refuses a byte window smaller than one Append.
    atMost("appendBytesMax", limits.appendBytesMax, "inflightBytesMax", limits.inflightBytesMax),
    // A group's log holds the margin below its last snapshot, the entries applied since (up to
    // snapshotEntriesInterval) and the few not yet applied.
    {
      holds:
        limits.snapshotEntriesInterval + limits.compactionMarginEntries <
        limits.logEntriesOnOpenMax,
      what: "a log of snapshotEntriesInterval + compactionMarginEntries entries must open within logEntriesOnOpenMax",
    },
  ];
}
