// RawNode: the RaftNode the host drives. Wraps the Raft state machine with the Ready/advance
// protocol: ready() hands out everything to persist, send and apply since the last Ready;
// advance() tells the core the host did it. At most one Ready is outstanding: hasReady() is
// false until advance(), while tick/step/propose keep working (their output waits for the next
// Ready, which is how group commit batches naturally).
import { assert } from "../common/assert.js";
import type { Random } from "../common/prng.js";
import { validateConfig } from "./config-validate.js";
import { Raft } from "./raft.js";
import {
  EntryType,
  type ConfChange,
  type ConfState,
  type Entry,
  type HardState,
  type Message,
  type NodeId,
  type PeerProgress,
  type RaftConfig,
  type RaftNode,
  type RaftRole,
  type RaftStatus,
  type RaftStorage,
  type Ready,
  type SoftState,
} from "./types.js";

interface Outstanding {
  readonly lastEntry?: { index: number; term: number };
  readonly snapshot?: { index: number; term: number };
  readonly committed: readonly Entry[];
}

export class RawNode implements RaftNode {
  private readonly raft: Raft;
  private prevSoft: SoftState;
  private prevHard: HardState;
  private outstanding: Outstanding | undefined;

  constructor(
    private readonly config: RaftConfig,
    storage: RaftStorage,
    random: Random,
  ) {
    validateConfig(config);
    this.raft = new Raft(config, storage, random);
    this.prevSoft = this.softState();
    this.prevHard = this.hardState();
  }

  tick(): void {
    this.raft.tick();
  }

  step(message: Message): void {
    assert(
      message.to === this.raft.id,
      () => `message for ${message.to} stepped into node ${this.raft.id}`,
    );
    this.raft.step(message);
  }

  propose(data: Uint8Array): number {
    return this.raft.propose(EntryType.Normal, data);
  }

  proposeConfChange(change: ConfChange): number {
    return this.raft.proposeConfChange(change);
  }

  campaign(): void {
    this.raft.hup("election");
  }

  transferLeadership(to: NodeId): void {
    this.raft.transferLeadership(to);
  }

  readIndex(context: Uint8Array): void {
    this.raft.readIndex(context);
  }

  hasReady(): boolean {
    if (this.outstanding !== undefined) return false;
    const r = this.raft;
    r.flushProposals();
    if (r.msgs.length > 0 || r.readStates.length > 0 || r.confStateChanged) return true;
    if (r.log.pendingSnapshot() !== undefined || r.log.hasNextCommittedEntries()) return true;
    if (r.log.hasUnstableEntries()) return true;
    // Field by field: hasReady() runs for every group on every tick, so no allocation here.
    if (r.lead !== this.prevSoft.leader || r.role !== this.prevSoft.role) return true;
    const h = this.prevHard;
    return r.term !== h.term || r.vote !== h.vote || r.log.committed !== h.commit;
  }

  ready(): Ready {
    assert(this.outstanding === undefined, "ready() called again before advance()");
    const r = this.raft;
    r.flushProposals();
    const entries = r.log.unstableEntries();
    const snapshot = r.log.pendingSnapshot();
    const committedEntries = r.log.nextCommittedEntries(this.maxCommittedBytes());
    r.reduceUncommittedSize(committedEntries);
    const hard = this.hardState();
    const soft = this.softState();
    const hardChanged = !hardStateEqual(hard, this.prevHard);
    const mustSync =
      entries.length > 0 ||
      snapshot !== undefined ||
      hard.term !== this.prevHard.term ||
      hard.vote !== this.prevHard.vote;
    const rd: { -readonly [K in keyof Ready]: Ready[K] } = {
      entries,
      committedEntries,
      messages: r.msgs,
      readStates: r.readStates,
      mustSync,
    };
    if (hardChanged) rd.hardState = hard;
    if (soft.leader !== this.prevSoft.leader || soft.role !== this.prevSoft.role)
      rd.softState = soft;
    if (r.confStateChanged) rd.confState = r.confState();
    if (snapshot) rd.snapshot = snapshot;
    r.msgs = [];
    r.readStates = [];
    r.confStateChanged = false;
    this.prevHard = hard;
    this.prevSoft = soft;
    const last = entries[entries.length - 1];
    this.outstanding = {
      ...(last ? { lastEntry: { index: last.index, term: last.term } } : {}),
      ...(snapshot
        ? { snapshot: { index: snapshot.metadata.index, term: snapshot.metadata.term } }
        : {}),
      committed: committedEntries,
    };
    return rd;
  }

  advance(): void {
    const done = this.accept();
    const durable =
      done.lastEntry ??
      (done.snapshot ? { index: done.snapshot.index, term: done.snapshot.term } : undefined);
    if (durable) this.raft.persistedTo(durable.index, durable.term);
  }

  advanceAsync(): void {
    this.accept();
  }

  persisted(index: number, term: number): void {
    this.raft.persistedTo(index, term);
  }

  /** The Ready is in storage (not necessarily durable) and applied: the next one may follow. */
  private accept(): Outstanding {
    const done = this.outstanding;
    assert(done !== undefined, "advance() without an outstanding ready()");
    this.outstanding = undefined;
    const log = this.raft.log;
    if (done.snapshot !== undefined) {
      log.stableSnapshotTo(done.snapshot.index);
      log.appliedTo(done.snapshot.index);
    }
    if (done.lastEntry) log.stableTo(done.lastEntry.index, done.lastEntry.term);
    for (const e of done.committed) {
      // Conf changes take effect once the host has applied (and will persist) them.
      if (e.type === EntryType.ConfChange) this.raft.applyCommittedConfChange(e);
    }
    const lastCommitted = done.committed[done.committed.length - 1];
    if (lastCommitted) log.appliedTo(lastCommitted.index);
    return done;
  }

  status(): RaftStatus {
    const r = this.raft;
    const progress = new Map<NodeId, PeerProgress>();
    if (r.role === "leader") {
      for (const [id, pr] of r.prs) {
        progress.set(id, {
          match: pr.match,
          next: pr.next,
          state: pr.state,
          recentActive: pr.recentActive,
          isLearner: pr.isLearner,
        });
      }
    }
    return {
      id: r.id,
      term: r.term,
      vote: r.vote,
      commit: r.log.committed,
      applied: r.log.applied,
      leader: r.lead,
      role: r.role,
      confState: r.confState(),
      leadTransferee: r.leadTransferee,
      progress,
    };
  }

  hasPendingSnapshot(): boolean {
    return this.raft.log.pendingSnapshot() !== undefined;
  }

  /** Cheap view of the role for hot loops (status() builds the progress map). */
  basicStatus(): { term: number; role: RaftRole; leader: NodeId; commit: number; applied: number } {
    const r = this.raft;
    return {
      term: r.term,
      role: r.role,
      leader: r.lead,
      commit: r.log.committed,
      applied: r.log.applied,
    };
  }

  /** Term of the entry at index in the core's log (persisted or not); -1 when unknown. */
  termAt(index: number): number {
    return this.raft.log.term(index);
  }

  firstIndex(): number {
    return this.raft.log.firstIndex();
  }

  lastIndex(): number {
    return this.raft.log.lastIndex();
  }

  /** The membership as the core currently applies it. */
  confState(): ConfState {
    return this.raft.confState();
  }

  reportUnreachable(id: NodeId): void {
    this.raft.reportUnreachable(id);
  }

  reportSnapshot(id: NodeId, ok: boolean): void {
    this.raft.reportSnapshot(id, ok);
  }

  reportNodeDown(id: NodeId): void {
    this.raft.reportNodeDown(id);
  }

  reportNodeLost(id: NodeId): void {
    this.raft.reportNodeLost(id);
  }

  campaignSoon(ticks: number): void {
    this.raft.campaignSoon(ticks);
  }

  retryAppends(): void {
    this.raft.retryAppends();
  }

  isQuiesced(): boolean {
    return this.raft.quiesced;
  }

  private maxCommittedBytes(): number {
    return this.config.maxCommittedSizePerReady;
  }

  private softState(): SoftState {
    return { leader: this.raft.lead, role: this.raft.role };
  }

  private hardState(): HardState {
    return { term: this.raft.term, vote: this.raft.vote, commit: this.raft.log.committed };
  }
}

function hardStateEqual(a: HardState, b: HardState): boolean {
  return a.term === b.term && a.vote === b.vote && a.commit === b.commit;
}

export function createRaftNode(config: RaftConfig, storage: RaftStorage, random: Random): RawNode {
  return new RawNode(config, storage, random);
}
