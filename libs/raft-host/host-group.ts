// One Raft group inside a host: the core, its log storage, its state machine and its waiters.
// The host's pipeline (ready-pipeline.ts) calls afterPersist() once the turn's batch is on disk;
// the group then sends, restores/applies, answers waiters, and may stage a local snapshot for the
// next batch. Its log is a GroupLog (pipeline-ports.ts): level in the host, crash storage in libs/sim.
import { assert } from "../common/assert.js";
import { TernError } from "../common/errors.js";
import {
  ConfChangeType,
  EntryType,
  MessageType,
  ProposalDroppedError,
  type HardState,
  type Entry,
  type Message,
  type NodeId,
  type RaftNode,
  type RaftStatus,
  type Ready,
  type Snapshot,
} from "../raft/types.js";
import type { LeaderChange, ProposeResult, RaftGroup } from "./api.js";
import { coalesceAppends } from "./coalesce-appends.js";
import type { BatchOp } from "./level-store.js";
import type { GroupLog } from "./pipeline-ports.js";
import type { RaftHostLimits } from "./limits.js";
import { decodeSnapshotEnvelope, encodeSnapshotEnvelope } from "./snapshot-envelope.js";
import type { SnapshotPoint, StateMachine } from "./state-machine.js";
import type { HeadBudget, HeadHolder } from "./head-budget.js";
import { AppliedWaiters, PendingProposals } from "./waiters.js";

/** What a group needs from its host. */
export interface GroupHostContext {
  readonly nodeId: NodeId;
  readonly limits: RaftHostLimits;
  /** Marks the group as having work and schedules a scheduler turn. */
  wake(group: HostGroup): void;
  send(groupId: string, message: Message): void;
  /**
   * Ops to include in the next batch (local snapshots, compaction); for a journaled group, the
   * index up to which its journal entries are compacted once that batch lands.
   */
  stageForNextBatch(ops: BatchOp[], journalRelease?: { groupId: string; index: number }): void;
  leaderChanged(change: LeaderChange): void;
  onApplied(count: number, bytes: number): void;
  /** The process-wide bound on journaled groups' applied-but-not-snapshotted entries. */
  readonly headBudget: HeadBudget;
  /** A proposal of this group committed and applied here, this long after propose(). */
  onCommitted?(latencyMs: number): void;
  onSnapshot(kind: "taken" | "installed"): void;
  /** The applied log's fsync before a snapshot failed: the snapshot is skipped (the next one retries). */
  onSnapshotSyncFailed?(groupId: string, error: unknown): void;
  nowMs(): number;
  isClosing(): boolean;
}

function notLeader(leader: NodeId, why: string): TernError {
  return new TernError("NOT_LEADER_OR_FOLLOWER", why, { leader });
}

/** A caller of readBarrier() waiting for its read index to be confirmed. */
interface ReadWaiter {
  readonly resolve: () => void;
  readonly reject: (e: Error) => void;
  readonly deadlineMs: number;
}

const NO_RESULT = undefined;
/** Least time between two compactions the entry journal asks for. */
const JOURNAL_COMPACT_INTERVAL_MS = 1_000;
const EARLY_TYPES: ReadonlySet<MessageType> = new Set([
  MessageType.Append,
  MessageType.Heartbeat,
  MessageType.Snapshot,
  MessageType.TimeoutNow,
]);

export class HostGroup implements RaftGroup, HeadHolder {
  private readonly proposals: PendingProposals<ProposeResult<unknown>>;
  private readonly appliedWaiters: AppliedWaiters;
  /**
   * Read barriers asked since the last turn: they share the one read index the turn asks for
   * (issueReads), so concurrent barriers cost one heartbeat round, not one each.
   */
  private readBatch: ReadWaiter[] = [];
  /** Read indexes asked of the core, by context, with the barriers waiting on each. */
  private readonly reads = new Map<string, ReadWaiter[]>();
  private readWaiterCount = 0;
  private readSequence = 0;
  private journalCompactedAtMs = -Infinity;
  private applied: number;
  private leaderId: NodeId = -1;
  private currentTerm: number;
  private leading = false;
  private entriesSinceSnapshot = 0;
  private bytesSinceSnapshot = 0;
  /** A snapshot waits for its applied log's fsync (at most one at a time). */
  private snapshotSyncing = false;
  dropped = false;

  constructor(
    readonly groupId: string,
    readonly node: RaftNode,
    readonly storage: GroupLog,
    readonly stateMachine: StateMachine,
    private readonly host: GroupHostContext,
    appliedIndex: number,
  ) {
    this.proposals = new PendingProposals(host.limits.pendingProposalsMax);
    this.appliedWaiters = new AppliedWaiters(host.limits.waitersMax);
    this.applied = appliedIndex;
    this.currentTerm = storage.memory.hardStateNow().term;
  }

  // ---- RaftGroup -------------------------------------------------------------------------

  propose<R = unknown>(
    data: Uint8Array,
    options?: { timeoutMs?: number },
  ): Promise<ProposeResult<R>> {
    if (data.byteLength === 0)
      return Promise.reject(
        new TernError(
          "INVALID_REQUEST",
          "a proposal must carry data (empty entries are the leader's no-ops)",
        ),
      );
    return this.proposeWith((node) => node.propose(data), options) as Promise<ProposeResult<R>>;
  }

  private proposeWith(
    submit: (node: RaftNode) => number,
    options?: { timeoutMs?: number },
  ): Promise<ProposeResult<unknown>> {
    const refused = this.refuse();
    if (refused) return Promise.reject(refused);
    if (this.proposals.full())
      return Promise.reject(
        new TernError(
          "THROTTLING_QUOTA_EXCEEDED",
          `${this.proposals.size} proposals already pending on ${this.groupId}`,
        ),
      );
    let index: number;
    try {
      index = submit(this.node);
    } catch (err) {
      return Promise.reject(mapDropped(err, this.groupId));
    }
    const term = this.node.basicStatus().term;
    const startMs = this.host.nowMs();
    const deadlineMs = startMs + (options?.timeoutMs ?? this.host.limits.requestTimeoutMs);
    this.host.wake(this);
    return new Promise((resolve, reject) =>
      this.proposals.add({
        index,
        term,
        deadlineMs,
        reject,
        resolve: (r) => {
          this.host.onCommitted?.(this.host.nowMs() - startMs);
          resolve(r);
        },
      }),
    );
  }

  readBarrier(options?: { timeoutMs?: number }): Promise<void> {
    const refused = this.refuse();
    if (refused) return Promise.reject(refused);
    if (!this.isLeader())
      return Promise.reject(
        notLeader(this.leaderId, `node ${this.host.nodeId} is not the leader of ${this.groupId}`),
      );
    if (this.readWaiterCount >= this.host.limits.waitersMax)
      return Promise.reject(
        new TernError("THROTTLING_QUOTA_EXCEEDED", "too many read barriers pending"),
      );
    const deadlineMs =
      this.host.nowMs() + (options?.timeoutMs ?? this.host.limits.requestTimeoutMs);
    const promise = new Promise<void>((resolve, reject) =>
      this.readBatch.push({ resolve, reject, deadlineMs }),
    );
    this.readWaiterCount += 1;
    this.host.wake(this);
    return promise;
  }

  /**
   * At the start of a turn: one read index for every barrier asked since the last turn. The core
   * records its commit index now, which is at least what it was when each of them was asked, and
   * answers once a quorum acknowledged a heartbeat sent after (etcd-raft's ReadIndex).
   */
  issueReads(): void {
    if (this.readBatch.length === 0) return;
    this.readSequence += 1;
    const key = `r${this.readSequence}`;
    this.reads.set(key, this.readBatch);
    this.readBatch = [];
    this.node.readIndex(new TextEncoder().encode(key));
  }

  waitApplied(index: number, options?: { timeoutMs?: number }): Promise<void> {
    if (this.applied >= index) return Promise.resolve();
    const refused = this.refuse();
    if (refused) return Promise.reject(refused);
    if (this.appliedWaiters.full())
      return Promise.reject(
        new TernError("THROTTLING_QUOTA_EXCEEDED", "too many applied-index waiters"),
      );
    const deadlineMs =
      this.host.nowMs() + (options?.timeoutMs ?? this.host.limits.requestTimeoutMs);
    const waiting = new Promise<void>((resolve, reject) =>
      this.appliedWaiters.add({ index, deadlineMs, resolve, reject }),
    );
    this.host.wake(this); // the tick checks its deadline, quiesced or not
    return waiting;
  }

  isLeader(): boolean {
    return this.leading;
  }
  leader(): NodeId {
    return this.leaderId;
  }
  term(): number {
    return this.currentTerm;
  }
  appliedIndex(): number {
    return this.applied;
  }
  status(): RaftStatus {
    return this.node.status();
  }
  firstIndex(): number {
    return this.storage.memory.firstIndex();
  }

  readEntries(lo: number, hi: number, maxBytes: number): Entry[] {
    const first = this.storage.memory.firstIndex();
    if (lo < first)
      throw new TernError(
        "OFFSET_OUT_OF_RANGE",
        `${this.groupId}: index ${lo} is compacted (first index ${first})`,
      );
    const end = Math.min(hi, this.storage.memory.lastIndex() + 1);
    if (lo >= end) return [];
    return this.storage.memory.entries(lo, end, maxBytes);
  }

  transferLeadership(to: NodeId): void {
    this.node.transferLeadership(to);
    this.host.wake(this);
  }

  async addVoter(nodeId: NodeId, options?: { timeoutMs?: number }): Promise<void> {
    await this.proposeWith(
      (node) => node.proposeConfChange({ type: ConfChangeType.AddVoter, nodeId }),
      options,
    );
  }

  async removeNode(nodeId: NodeId, options?: { timeoutMs?: number }): Promise<void> {
    await this.proposeWith(
      (node) => node.proposeConfChange({ type: ConfChangeType.RemoveNode, nodeId }),
      options,
    );
  }

  // ---- driven by the host ----------------------------------------------------------------

  private refuse(): TernError | undefined {
    if (this.host.isClosing())
      return new TernError("SHUTTING_DOWN", `node ${this.host.nodeId} is shutting down`);
    if (this.dropped)
      return new TernError(
        "UNKNOWN_TOPIC_OR_PARTITION",
        `group ${this.groupId} was dropped from node ${this.host.nodeId}`,
      );
    return undefined;
  }

  step(message: Message): void {
    this.node.step(message);
    this.host.wake(this);
  }

  isQuiesced(): boolean {
    return this.node.isQuiesced?.() === true;
  }

  /** Whether callers wait on this group with deadlines (a quiesced group then still ticks). */
  hasWaiters(): boolean {
    return this.proposals.size > 0 || this.appliedWaiters.size > 0 || this.readWaiterCount > 0;
  }

  tick(nowMs: number): void {
    this.node.tick();
    this.proposals.expire(nowMs);
    this.appliedWaiters.expire(nowMs);
    if (this.readWaiterCount === 0) return;
    const expired = (r: ReadWaiter): boolean => r.deadlineMs <= nowMs;
    const late: ReadWaiter[] = this.readBatch.filter(expired);
    this.readBatch = this.readBatch.filter((r) => !expired(r));
    for (const [key, waiters] of this.reads) {
      if (!waiters.some(expired)) continue;
      late.push(...waiters.filter(expired));
      const left = waiters.filter((r) => !expired(r));
      if (left.length === 0) this.reads.delete(key);
      else this.reads.set(key, left);
    }
    this.readWaiterCount -= late.length;
    for (const r of late)
      r.reject(
        new TernError("REQUEST_TIMED_OUT", `read barrier on ${this.groupId} not confirmed in time`),
      );
  }

  /**
   * A leader may replicate entries while it persists them itself (Raft thesis 10.2.1): its
   * Append/Heartbeat/Snapshot/TimeoutNow messages may leave before the batch lands, unless the
   * Ready changes term or vote. Safe because the core counts the leader's own copy towards the
   * commit only once the host reports it durable (RaftNode.persisted). Responses and votes
   * always wait for the disk.
   */
  canSendEarly(rd: Ready, persisted: HardState): boolean {
    if (rd.messages.length === 0) return false;
    if (
      rd.hardState &&
      (rd.hardState.term !== persisted.term || rd.hardState.vote !== persisted.vote)
    )
      return false;
    for (const m of rd.messages) if (!EARLY_TYPES.has(m.type)) return false;
    return true;
  }

  sendMessages(rd: Ready): void {
    for (const m of coalesceAppends(rd.messages, this.host.limits.appendBytesMax)) {
      this.host.send(this.groupId, m);
    }
  }

  /** After the batch holding rd is durable: send (unless sent early), then handle the rest. */
  afterPersist(rd: Ready, sentEarly: boolean): void {
    if (!sentEarly) this.sendMessages(rd);
    this.handleReady(rd);
  }

  /**
   * Role, snapshot restore, committed entries, read states and waiters of a Ready. Needs no
   * local durability: committed entries are durable on a quorum (the core never counts a
   * leader's own undurable copy), and the state machine is rebuilt from disk after a crash.
   */
  handleReady(rd: Ready): void {
    if (rd.softState || rd.hardState) this.noteRole(rd);
    if (rd.snapshot && rd.snapshot.metadata.index > this.applied) this.restore(rd.snapshot);
    if (rd.committedEntries.length > 0) this.applyEntries(rd.committedEntries);
    for (const rs of rd.readStates) this.confirmRead(rs.index, rs.context);
    if (!this.leading && this.proposals.size > 0) this.rejectOverwritten();
    this.appliedWaiters.release(this.applied);
  }

  private noteRole(rd: Ready): void {
    const term = rd.hardState?.term ?? this.currentTerm;
    const leader = rd.softState?.leader ?? this.leaderId;
    const leading = rd.softState ? rd.softState.role === "leader" : this.leading;
    const changed = leader !== this.leaderId || term !== this.currentTerm;
    const roleFlipped = leading !== this.leading;
    this.currentTerm = term;
    this.leaderId = leader;
    this.leading = leading;
    if (roleFlipped) {
      this.stateMachine.onRoleChange?.(leading, term);
      if (!leading)
        this.rejectReads(() =>
          notLeader(leader, `${this.groupId}: leadership lost before the read was confirmed`),
        );
    }
    if (changed || roleFlipped) this.host.leaderChanged({ groupId: this.groupId, leader, term });
  }

  private restore(snapshot: Snapshot): void {
    const { index, term, confState } = snapshot.metadata;
    restoreFromSnapshot(this.stateMachine, snapshot.data, index, { term, confState });
    this.host.onSnapshot("installed");
    this.applied = index;
    this.entriesSinceSnapshot = 0;
    this.letHeadGo();
    this.proposals.rejectUpTo(index, () =>
      notLeader(
        this.leaderId,
        `${this.groupId}: replaced by a snapshot at ${index}; outcome unknown`,
      ),
    );
  }

  private applyEntries(entries: readonly Entry[]): void {
    let bytes = 0;
    let count = 0;
    for (const e of entries) {
      if (e.index <= this.applied) continue;
      assert(
        e.index === this.applied + 1,
        () => `${this.groupId}: applying ${e.index} after ${this.applied}`,
      );
      let result: unknown = NO_RESULT;
      if (this.stateMachine.appliedLog !== undefined) {
        result = this.stateMachine.apply({
          index: e.index,
          term: e.term,
          data: e.data,
          type: e.type,
        });
      } else if (e.type === EntryType.Normal && e.data.byteLength > 0) {
        result = this.stateMachine.apply({ index: e.index, term: e.term, data: e.data });
      }
      this.applied = e.index;
      bytes += e.data.byteLength;
      count += 1;
      const p = this.proposals.take(e.index);
      if (p) {
        if (p.term === e.term) p.resolve({ index: e.index, term: e.term, result });
        else
          p.reject(
            notLeader(
              this.leaderId,
              `${this.groupId}: entry ${e.index} was replaced by term ${e.term}`,
            ),
          );
      }
    }
    this.entriesSinceSnapshot += count;
    this.bytesSinceSnapshot += bytes;
    const budget = this.storage.journaled ? this.host.headBudget : undefined;
    budget?.applied(bytes);
    this.host.onApplied(count, bytes);
    this.maybeSnapshot(false, entries);
    if (budget?.overBudget()) budget.enforce(holdsConfChange(entries) ? this : undefined);
  }

  private confirmRead(index: number, context: Uint8Array): void {
    const key = new TextDecoder().decode(context);
    const waiters = this.reads.get(key);
    if (!waiters) return;
    this.reads.delete(key);
    this.readWaiterCount -= waiters.length;
    for (const r of waiters) {
      if (this.applied >= index) r.resolve();
      else
        this.appliedWaiters.add({
          index,
          deadlineMs: r.deadlineMs,
          resolve: r.resolve,
          reject: r.reject,
        });
    }
  }

  private rejectReads(error: () => Error): void {
    const all = [...this.readBatch, ...[...this.reads.values()].flat()];
    this.readBatch = [];
    this.reads.clear();
    this.readWaiterCount = 0;
    for (const r of all) r.reject(error());
  }

  private rejectOverwritten(): void {
    const memory = this.storage.memory;
    this.proposals.rejectOverwritten(
      (i) => (i >= memory.firstIndex() && i <= memory.lastIndex() ? memory.term(i) : undefined),
      () =>
        notLeader(this.leaderId, `${this.groupId}: the proposal was overwritten by a new leader`),
    );
  }

  /**
   * The entry journal asks this group to let go of its oldest entries: a snapshot now (cheap for
   * a group with an applied log: metadata only), or a compaction up to the last one.
   */
  compactForJournal(): void {
    // Asked after every journal write while the journal is long: act at most once a second.
    const nowMs = this.host.nowMs();
    if (nowMs - this.journalCompactedAtMs < JOURNAL_COMPACT_INTERVAL_MS) return;
    this.journalCompactedAtMs = nowMs;
    if (this.applied > this.storage.snapshotIndex()) return this.maybeSnapshot(true);
    if (this.snapshotSyncing || !this.storage.journaled) return;
    const ops: BatchOp[] = [];
    if (this.storage.stageCompaction(this.storage.snapshotIndex(), ops))
      this.host.stageForNextBatch(ops, {
        groupId: this.groupId,
        index: this.storage.snapshotIndex(),
      });
  }

  /** applying: the committed entries of the Ready being handled, which the core has not accepted yet. */
  private maybeSnapshot(force = false, applying?: readonly Entry[]): void {
    const limits = this.host.limits;
    if (
      !force &&
      this.entriesSinceSnapshot < limits.snapshotEntriesInterval &&
      this.bytesSinceSnapshot < limits.snapshotBytesInterval
    )
      return;
    const index = this.applied;
    if (index <= this.storage.snapshotIndex()) return;
    // The core takes a conf change into its membership only when the Ready is accepted (advance),
    // after this: a snapshot now would record the old membership at an index past the change,
    // and a node restored from it would have lost the change (simulator seed 100002). The next
    // Ready's entries take the snapshot instead.
    if (applying !== undefined && holdsConfChange(applying)) return;
    // Likewise a leader's snapshot stepped into the core but not yet restored here: the core's
    // membership is already the snapshot's (a budget release or journal compaction asks from
    // outside this group's Ready).
    if (this.node.hasPendingSnapshot()) return;
    // Keep a tail for slightly lagging followers so they catch up from the log, not a snapshot.
    // A state machine with an appliedLog serves older entries itself (layered-storage.ts): its
    // journaled entries are compacted up to the snapshot, so the journal can let them go.
    const margin = this.storage.journaled ? 0 : Math.min(limits.compactionMarginEntries, index);
    const compactIndex = index - margin;
    if (this.snapshotSyncing) return;
    const data = encodeSnapshotEnvelope(this.stateMachine.snapshot(), index);
    const confState = this.node.status().confState;
    this.entriesSinceSnapshot = 0;
    this.letHeadGo();
    const stage = (): void => {
      // An installed snapshot may have overtaken this one while the applied log synced.
      if (this.dropped || index <= this.storage.snapshotIndex()) return;
      const ops: BatchOp[] = [];
      this.storage.stageLocalSnapshot(index, confState, data, compactIndex, ops);
      this.host.stageForNextBatch(
        ops,
        this.storage.journaled ? { groupId: this.groupId, index: compactIndex } : undefined,
      );
      this.host.onSnapshot("taken");
    };
    const appliedLog = this.stateMachine.appliedLog;
    if (appliedLog === undefined) return stage();
    // The snapshot lets the host delete its copy of the entries: the applied log must hold them
    // durably first. Its fsync runs in the thread pool; the event loop goes on meanwhile.
    this.snapshotSyncing = true;
    appliedLog
      .sync()
      .then(stage, (e: unknown) => this.host.onSnapshotSyncFailed?.(this.groupId, e))
      .finally(() => {
        this.snapshotSyncing = false;
      });
  }

  /** The process's head budget asks for a snapshot now (head-budget.ts). */
  releaseHead(): void {
    this.maybeSnapshot(true);
  }

  /** The entries since the last snapshot are on their way out of memory (snapshot taken or installed). */
  private letHeadGo(): void {
    if (this.storage.journaled) this.host.headBudget.released(this.bytesSinceSnapshot);
    this.bytesSinceSnapshot = 0;
  }

  /** Applied entry bytes since the last snapshot (what a journaled group holds in memory beyond its log). */
  headBytes(): number {
    return this.bytesSinceSnapshot;
  }

  /** Fails every waiter (group dropped or host closing). */
  failAll(error: () => Error): void {
    this.proposals.rejectAll(error);
    this.appliedWaiters.rejectAll(error);
    this.rejectReads(error);
  }
}

function holdsConfChange(entries: readonly Entry[]): boolean {
  for (const e of entries) if (e.type === EntryType.ConfChange) return true;
  return false;
}

/** Restores a state machine from the host's snapshot data (snapshot-envelope.ts) at `index`. */
export function restoreFromSnapshot(
  stateMachine: StateMachine,
  data: Uint8Array,
  index: number,
  at: SnapshotPoint,
): void {
  stateMachine.restore(decodeSnapshotEnvelope(data), index, at);
}

function mapDropped(err: unknown, groupId: string): Error {
  if (!(err instanceof ProposalDroppedError)) return err as Error;
  switch (err.reason) {
    case "not-leader":
    case "transferring":
      return notLeader(err.leader, `${groupId}: ${err.message}`);
    case "too-large":
      return new TernError("MESSAGE_TOO_LARGE", `${groupId}: ${err.message}`);
    case "uncommitted-limit":
    case "conf-change-pending":
      return new TernError("THROTTLING_QUOTA_EXCEEDED", `${groupId}: ${err.message}`);
  }
}
