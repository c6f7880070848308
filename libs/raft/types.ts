// The contract of the Raft core (libs/raft). The core is a pure, synchronous state machine in
// the style of etcd-raft: the host drives it with tick()/step()/propose() and drains its output
// with ready()/advance(). It performs no I/O, reads no clock and draws randomness only from
// the injected Random. libs/raft-host and libs/sim depend on exactly this file.
import type { Random } from "../common/prng.js";

export type NodeId = number;
/** "No node": no vote cast, no known leader. Node ids are >= 0. */
export const NONE: NodeId = -1;

export enum EntryType {
  /** Application data; an empty Normal entry is the leader's no-op at the start of its term. */
  Normal = 0,
  /** data holds an encoded ConfChange (see codec.ts). Takes effect when applied (advance()). */
  ConfChange = 1,
}

export interface Entry {
  readonly term: number;
  readonly index: number;
  readonly type: EntryType;
  readonly data: Uint8Array;
}

export interface HardState {
  readonly term: number;
  readonly vote: NodeId;
  readonly commit: number;
}

/** Membership. outgoingVoters is non-empty only inside a joint configuration. */
export interface ConfState {
  readonly voters: readonly NodeId[];
  readonly learners: readonly NodeId[];
  readonly outgoingVoters: readonly NodeId[];
}

export enum ConfChangeType {
  AddVoter = 0,
  AddLearner = 1,
  RemoveNode = 2,
}

export interface ConfChange {
  readonly type: ConfChangeType;
  readonly nodeId: NodeId;
}

export interface SnapshotMetadata {
  readonly index: number;
  readonly term: number;
  readonly confState: ConfState;
}

export interface Snapshot {
  readonly metadata: SnapshotMetadata;
  /** The state machine's serialized state at metadata.index (opaque to the core). */
  readonly data: Uint8Array;
}

export enum MessageType {
  Vote = 0,
  VoteResponse = 1,
  PreVote = 2,
  PreVoteResponse = 3,
  Append = 4,
  AppendResponse = 5,
  Heartbeat = 6,
  HeartbeatResponse = 7,
  Snapshot = 8,
  /** Leader to transferee: start an election now, ignoring the lease. */
  TimeoutNow = 9,
  /** Follower forwards a read-index request to the leader. */
  ReadIndex = 10,
  ReadIndexResponse = 11,
  /** Follower forwards a leadership-transfer request to the leader. */
  TransferLeader = 12,
}

export interface Message {
  readonly type: MessageType;
  readonly from: NodeId;
  readonly to: NodeId;
  readonly term: number;
  /** Append: term of the entry at index. Vote/PreVote: candidate's last log term. */
  readonly logTerm: number;
  /** Append: index preceding entries. Vote/PreVote: candidate's last index. Responses: match/hint index. */
  readonly index: number;
  readonly entries: readonly Entry[];
  readonly commit: number;
  readonly reject: boolean;
  /** On a rejected Append: the follower's hint of where to retry. */
  readonly rejectHint: number;
  readonly snapshot?: Snapshot;
  /** Read-index request id; heartbeat context for read-index confirmation. */
  readonly context?: Uint8Array;
  /** Heartbeat only: the group is idle; the follower stops its election clock until something happens (Raft.quiesce). */
  readonly quiesce?: boolean;
}

export interface SoftState {
  readonly leader: NodeId;
  readonly role: RaftRole;
}

export type RaftRole = "follower" | "pre-candidate" | "candidate" | "leader";

/** The answer to a readIndex(context) request: reads are linearizable once applied >= index. */
export interface ReadState {
  readonly index: number;
  readonly context: Uint8Array;
}

/** Everything the host must do, in order: persist, then send, then apply, then advance(). */
export interface Ready {
  /** Present when changed. */
  readonly softState?: SoftState;
  /** Present when changed: persist before sending messages. */
  readonly hardState?: HardState;
  /** Present when changed (membership applied): persist with the hard state. */
  readonly confState?: ConfState;
  /** Append to stable storage; an entry at an existing index replaces it and everything after. */
  readonly entries: readonly Entry[];
  /** An incoming snapshot to persist and restore into the state machine. */
  readonly snapshot?: Snapshot;
  /** Committed entries to apply to the state machine, in order. */
  readonly committedEntries: readonly Entry[];
  /** Send after persisting entries and hard state. */
  readonly messages: readonly Message[];
  readonly readStates: readonly ReadState[];
  /** True when entries or hard state (term/vote) must be fsynced before messages are sent. */
  readonly mustSync: boolean;
}

export interface RaftConfig {
  readonly id: NodeId;
  /** Ticks without hearing from a leader before campaigning; randomized in [electionTick, 2*electionTick). */
  readonly electionTick: number;
  readonly heartbeatTick: number;
  /**
   * Heartbeat interval of an idle leader (every follower has the whole log, everything is
   * committed, no read or transfer pending): in [heartbeatTick, electionTick); defaults to
   * heartbeatTick. Idle groups are most groups of a process, so this sets its idle cost.
   */
  readonly idleHeartbeatTick?: number;
  /**
   * Quiescence: an idle leader whose voters all answered recently sends one quiesce heartbeat
   * and stops ticking; its followers stop their election clocks. Any message, proposal or
   * local request wakes a group. The host MUST then report node liveness: reportNodeDown(id)
   * when it has not heard from node id for an election timeout, or id restarted. Default false.
   */
  readonly quiesce?: boolean;
  /** Upper bound on the bytes of entries in one Append message. */
  readonly maxSizePerMsg: number;
  /** Upper bound on unacknowledged Append messages per follower (pipelining window). */
  readonly maxInflightMsgs: number;
  /**
   * Upper bound on the entry bytes of unacknowledged Appends per follower (0 or absent: none but
   * maxInflightMsgs). Bounds what a lagging follower's catch-up holds at the leader.
   */
  readonly maxInflightBytes?: number;
  /** Upper bound on bytes of proposed but uncommitted entries at the leader; proposals beyond are dropped. */
  readonly maxUncommittedEntriesSize: number;
  /** Upper bound on committed entry bytes handed out in one Ready. */
  readonly maxCommittedSizePerReady: number;
  readonly preVote: boolean;
  readonly checkQuorum: boolean;
  /** Index already applied by the state machine at restart (usually the snapshot index). */
  readonly applied: number;
}

/** Read side of the log; writes come from Ready through the host (see MemoryStorage). */
export interface RaftStorage {
  initialState(): { hardState: HardState; confState: ConfState };
  /** Entries in [lo, hi), stopping once maxBytes is exceeded (always at least one entry). */
  entries(lo: number, hi: number, maxBytes: number): Entry[];
  /** Term of the entry at index; the snapshot's index answers with the snapshot's term. */
  term(index: number): number;
  firstIndex(): number;
  lastIndex(): number;
  snapshot(): Snapshot;
}

export interface PeerProgress {
  readonly match: number;
  readonly next: number;
  readonly state: "probe" | "replicate" | "snapshot";
  readonly recentActive: boolean;
  readonly isLearner: boolean;
}

export interface RaftStatus {
  readonly id: NodeId;
  readonly term: number;
  readonly vote: NodeId;
  readonly commit: number;
  readonly applied: number;
  readonly leader: NodeId;
  readonly role: RaftRole;
  readonly confState: ConfState;
  readonly leadTransferee: NodeId;
  /** Leader only. */
  readonly progress: ReadonlyMap<NodeId, PeerProgress>;
}

/** Raised by propose() and friends when the proposal cannot be accepted here and now. */
export class ProposalDroppedError extends Error {
  constructor(
    readonly reason:
      "not-leader" | "transferring" | "uncommitted-limit" | "conf-change-pending" | "too-large",
    readonly leader: NodeId,
  ) {
    super(`proposal dropped: ${reason}`);
    this.name = "ProposalDroppedError";
  }
}

/** The core's public surface (implemented by RawNode in raw-node.ts). */
export interface RaftNode {
  tick(): void;
  step(message: Message): void;
  /** Leader only: appends data and returns its index; throws ProposalDroppedError otherwise. */
  propose(data: Uint8Array): number;
  proposeConfChange(change: ConfChange): number;
  campaign(): void;
  transferLeadership(to: NodeId): void;
  /** Asks for a linearizable read point; the answer comes as a ReadState with this context. */
  readIndex(context: Uint8Array): void;
  hasReady(): boolean;
  ready(): Ready;
  /** The host has persisted (durably), sent and applied the last Ready. */
  advance(): void;
  /**
   * Async storage writes: the last Ready is in storage (readable, not yet durable) and applied;
   * the next Ready may be handed out. The host then calls persisted() for its last entry once
   * that write (and every earlier one) is durable, and sends the Ready's messages other than a
   * leader's Append/Heartbeat/Snapshot/TimeoutNow only after that. A leader never counts its
   * own copy of an entry towards the commit before persisted() covers it.
   */
  advanceAsync(): void;
  /** The host's disk holds the log through (index, term); writes land in the order staged. */
  persisted(index: number, term: number): void;
  status(): RaftStatus;
  /**
   * A snapshot from the leader is restored in the core but not yet handed over and accepted
   * (ready(), advance()): until then the core's membership is the snapshot's, newer than what
   * the host has applied, so the host must not take a snapshot of its own.
   */
  hasPendingSnapshot(): boolean;
  /** Cheap view of term and role for hot paths (status() copies the membership and progress). */
  basicStatus(): { term: number; role: RaftRole; leader: NodeId; commit: number; applied: number };
  reportUnreachable(id: NodeId): void;
  reportSnapshot(id: NodeId, ok: boolean): void;
  /** Node id has been silent for an election timeout, or restarted: wakes quiesced groups that depend on it. */
  reportNodeDown?(id: NodeId): void;
  /**
   * The host's connections to node id broke hard (reset or refused, not a timeout): followers
   * of id campaign within a few ticks instead of an election timeout. Timing only: a spurious
   * or late call never affects safety, and a live leader keeps its group (pre-vote, leases).
   */
  reportNodeLost?(id: NodeId): void;
  /**
   * A group just created here, with this replica its preferred leader: campaign after `ticks`
   * rather than a randomized election timeout. Timing only; no effect once a leader is known.
   */
  campaignSoon?(ticks: number): void;
  /** The group is quiesced (its clock is stopped): ticking it is a no-op. */
  isQuiesced?(): boolean;
  /**
   * Leader: sends appends that storage could not serve before (it answered LogUnavailableError
   * while it read older entries asynchronously). The host calls it when such a read lands.
   */
  retryAppends?(): void;
}

export type CreateRaftNode = (config: RaftConfig, storage: RaftStorage, random: Random) => RaftNode;

/** Storage: the requested index lies before the first retained entry (compacted into a snapshot). */
export class LogCompactedError extends Error {
  constructor(
    readonly index: number,
    readonly firstIndex: number,
  ) {
    super(`log index ${index} is compacted (first index ${firstIndex})`);
    this.name = "LogCompactedError";
  }
}

/**
 * Storage: the requested entries are not in memory right now (beyond the last entry, or held on
 * disk and being read asynchronously). A leader skips that append; retryAppends() resends it.
 */
export class LogUnavailableError extends Error {
  constructor(
    readonly index: number,
    readonly lastIndex: number,
  ) {
    super(`log index ${index} is unavailable (last index ${lastIndex})`);
    this.name = "LogUnavailableError";
  }
}

/** Bytes an entry counts for in every size limit (maxSizePerMsg, maxUncommittedEntriesSize, ...). */
export const ENTRY_OVERHEAD_BYTES = 21;
export function entrySizeBytes(entry: Entry): number {
  return entry.data.byteLength + ENTRY_OVERHEAD_BYTES;
}
