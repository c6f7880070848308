// How the Readies of a node's groups are persisted, sent, applied and advanced: the raft host's
// turn / write / landed loop, behind ports (pipeline-ports.ts) so that the simulator runs this
// same code over its crash storage and simulated network.
//
// A "turn" (scheduled whenever a group has work) drains the Ready of every group that was
// touched and stages all of them into the next batch (group commit; fsync when any Ready needs
// it). Turns do not wait for the disk (async storage writes, as etcd-raft's AsyncStorageWrites):
// a leader's Appends leave at once, committed entries are applied and waiters answered at once,
// and the Ready is accepted (advanceAsync) so the next one can follow. At most one batch is on
// its way to disk; everything staged meanwhile forms the next one, written when it lands, which
// is what batches the fsyncs. What needs local durability waits for the batch holding it:
// responses and votes are sent, and the core is told persisted(), only then. Readies that change
// term or vote or carry a snapshot wait whole.
import type { NodeId, Ready } from "../raft/types.js";
import type { JournalRelease } from "./entry-journal.js";
import type { HostGroup } from "./host-group.js";
import type { JournalRecord } from "./journal-codec.js";
import type { BatchOp } from "./level-store.js";
import type { HostMetrics } from "./metrics.js";
import type { BatchNetwork, BatchStore, TurnScheduler } from "./pipeline-ports.js";

const TRACE = process.env.TERN_RAFT_TRACE === "1";
/** Wall-clock ms for traces: comparable across processes on one machine. */
const traceMs = (): string => (performance.timeOrigin + performance.now()).toFixed(2);
/** Deferred commit-only hard states kept before they force a write of their own. */
const CARRY_OPS_MAX = 4_096;
/**
 * Collection rounds of one turn: after applying, the waiters' continuations (microtasks) may
 * propose again; a second round takes those proposals into the same turn, so a leader's commit
 * and its next entries leave in one frame per peer and a follower handles them in one turn.
 */
const TURN_ROUNDS_MAX = 3;

export interface TurnStats {
  turns: number;
  writes: number;
  fsyncs: number;
  opsWritten: number;
  readiesPersisted: number;
}

/** What the pipeline tells its owner, and asks of it. */
export interface PipelineHooks {
  readonly nodeId: NodeId;
  readonly metrics?: HostMetrics;
  /** A turn or a write failed: the pipeline has stopped (the host stops the process). */
  failed(err: Error): void;
  /** Each Ready as it is taken from its core (the simulator's safety checker; none in production). */
  readonly readyTaken?: (group: HostGroup, rd: Ready) => void;
}

/** One batch: assembled while the previous one is on its way to disk. */
export interface PendingWrite {
  ops: BatchOp[];
  sync: boolean;
  /** Entries (and resets) of journaled groups, written after ops. */
  journal: JournalRecord[];
  /** Journal entries compacted by this batch's ops, released once it lands. */
  releases: JournalRelease[];
  /** What waits for this batch to be durable, in staging order. */
  waiting: WriteWaiter[];
}

/** A Ready whose unsent messages and durability report (or, when whole, everything) wait for a batch. */
interface WriteWaiter {
  readonly group: HostGroup;
  readonly rd: Ready;
  /** Term/vote change or snapshot: not yet acted on nor advanced; the group waits with it. */
  readonly whole: boolean;
  readonly sentEarly: boolean;
}

export function newPendingWrite(): PendingWrite {
  return { ops: [], sync: false, waiting: [], journal: [], releases: [] };
}

export class ReadyPipeline {
  readonly turnStats: TurnStats = {
    turns: 0,
    writes: 0,
    fsyncs: 0,
    opsWritten: 0,
    readiesPersisted: 0,
  };
  /** Groups with work for the next turn. */
  readonly active = new Set<HostGroup>();
  /**
   * Ops for a later level batch: deferred commit-only hard states (at most one per group: a
   * newer one replaces the older in place), new groups. They ride along with the next batch that
   * writes level anyway; a batch of journal records alone does not write them.
   */
  carryOps: BatchOp[] = [];
  /** Where each carried key (by identity: a group's GroupKeys are fixed) sits in carryOps. */
  private carriedAt = new Map<Uint8Array, number>();
  /** carryOps holds something (a new group) that should be written soon, not just piggyback. */
  carryUrgent = false;
  /** The batch being assembled by turns; written once the one in flight lands. */
  nextWrite: PendingWrite = newPendingWrite();
  /** The batch on its way to disk (at most one: batches must land in staging order). */
  inFlight: PendingWrite | undefined;
  /** No more turns (the host is closing); writes already asked for still land. */
  closing = false;
  failure: Error | undefined;
  private scheduled = false;
  /** A turn waits for microtasks before its next collection round (see TURN_ROUNDS_MAX). */
  private turnOpen = false;
  private readonly scheduledTurn = (): void => {
    this.scheduled = false;
    this.runTurn(0);
  };

  constructor(
    private readonly store: BatchStore,
    private readonly network: BatchNetwork,
    private readonly scheduler: TurnScheduler,
    private readonly hooks: PipelineHooks,
  ) {}

  wake(g: HostGroup): void {
    if (g.dropped) return;
    this.active.add(g);
    this.schedule();
  }

  /** Ops (local snapshots, compaction) for the next batch, in staging order with the Readies'. */
  stage(ops: readonly BatchOp[], journalRelease?: JournalRelease): void {
    // In staging order with the Readies' ops: compaction never precedes the entries it deletes.
    for (const op of ops) this.nextWrite.ops.push(op);
    if (journalRelease) this.nextWrite.releases.push(journalRelease);
    this.schedule();
  }

  schedule(): void {
    if (this.scheduled || this.turnOpen || this.closing || this.failure) return;
    this.scheduled = true;
    this.scheduler.soon(this.scheduledTurn);
  }

  private runTurn(round: number): void {
    this.turnOpen = false;
    if (this.closing || this.failure) return;
    try {
      this.turn(round);
    } catch (err) {
      this.fail(err as Error);
    }
  }

  private fail(err: Error): void {
    // A failed write leaves disk and memory apart: stop this node rather than guess.
    if (this.failure) return;
    this.failure = err;
    this.hooks.failed(err);
  }

  /**
   * One turn: collect the Readies of every touched group and stage them into the next batch. A
   * Ready that changes neither term nor vote and holds no snapshot is acted on now (leader
   * messages sent, committed entries applied, advanceAsync); its other messages and its
   * persisted() report wait for the batch. Any other Ready waits whole, and its group with it.
   */
  private turn(round: number): void {
    const candidates = [...this.active];
    this.active.clear();
    const w = this.nextWrite;
    const deferred: BatchOp[] = [];
    const taken: WriteWaiter[] = [];
    const readyTaken = this.hooks.readyTaken;
    let committed = 0;
    for (const g of candidates) {
      if (g.dropped) continue;
      g.issueReads();
      if (!g.node.hasReady()) continue;
      const rd = g.node.ready();
      if (readyTaken !== undefined) readyTaken(g, rd);
      const before = g.storage.memory.hardStateNow();
      const whole =
        rd.snapshot !== undefined ||
        (rd.hardState !== undefined &&
          (rd.hardState.term !== before.term || rd.hardState.vote !== before.vote));
      const sentEarly = !whole && g.canSendEarly(rd, before);
      if (sentEarly) g.sendMessages(rd);
      committed += rd.committedEntries.length;
      taken.push({ group: g, rd, whole, sentEarly });
    }
    // A leader's Appends leave before its own entries are encoded and staged, unless this round
    // applies entries: then the proposals this unblocks join them in the next round's frame.
    if (committed === 0) this.network.flush();
    const readies = taken.length;
    if (TRACE && readies > 0)
      process.stderr.write(
        `TRACE ${this.hooks.nodeId} turn t=${traceMs()} round=${round} readies=${readies} committed=${committed} entries=${taken.reduce((n, t) => n + t.rd.entries.length, 0)} inFlight=${this.inFlight !== undefined}\n`,
      );
    let applied = 0;
    for (const { group: g, rd, whole, sentEarly } of taken) {
      const opsBefore = w.ops.length;
      const journalBefore = w.journal.length;
      g.storage.stageReady(rd, w.ops, deferred, g.storage.journaled ? w.journal : undefined);
      // A journaled group's entries are synced by the journal's write; level syncs the rest.
      if (rd.mustSync && (!g.storage.journaled || whole || rd.confState !== undefined))
        w.sync = true;
      const staged = w.ops.length > opsBefore || w.journal.length > journalBefore;
      if (whole) {
        w.waiting.push({ group: g, rd, whole: true, sentEarly: false });
        continue;
      }
      g.handleReady(rd);
      applied += rd.committedEntries.length;
      g.node.advanceAsync();
      this.active.add(g); // more may be ready (bounded committed entries, a snapshot staged)
      if (staged || rd.entries.length > 0) {
        w.waiting.push({ group: g, rd, whole: false, sentEarly });
      } else if (!sentEarly && rd.messages.length > 0) {
        // Nothing of its own to write, but a response may acknowledge what is still on its way.
        const latest = w.ops.length > 0 || !this.inFlight ? w : this.inFlight;
        latest.waiting.push({ group: g, rd, whole: false, sentEarly: false });
      }
    }
    for (const op of deferred) this.carry(op);
    this.turnStats.readiesPersisted += readies;
    if (applied > 0 && round + 1 < TURN_ROUNDS_MAX) {
      // A tick queued from a microtask runs once the microtask queue is empty, i.e. after the
      // continuations of the waiters just answered (and the proposals they make).
      this.turnOpen = true;
      this.scheduler.afterMicrotasks(() => this.runTurn(round + 1));
      return;
    }
    this.turnStats.turns += 1;
    this.network.flush();
    this.maybeStartWrite();
  }

  /** Carries a deferred op; one already carried for the same key (an older hard state) is replaced. */
  private carry(op: BatchOp): void {
    const at = this.carriedAt.get(op.key);
    if (at !== undefined) {
      this.carryOps[at] = op;
      return;
    }
    this.carriedAt.set(op.key, this.carryOps.length);
    this.carryOps.push(op);
  }

  /** Drops the carried ops `drop` names (a dropped group's keys); the others keep their order. */
  dropCarried(drop: (op: BatchOp) => boolean): void {
    this.carryOps = this.carryOps.filter((op) => !drop(op));
    this.carriedAt.clear();
    this.carryOps.forEach((op, i) => this.carriedAt.set(op.key, i));
  }

  /** Starts writing the assembled batch unless one is in flight (it is started when that lands). */
  maybeStartWrite(): void {
    if (this.inFlight || this.failure) return;
    const w = this.nextWrite;
    // Level is written when the batch has ops of its own or carried ops are urgent or many; a
    // batch of journal records alone leaves the carried ops for later (one write, not two).
    const levelToo = w.ops.length > 0 || this.carryUrgent || this.carryOps.length > CARRY_OPS_MAX;
    if (!levelToo && w.journal.length === 0) {
      if (w.waiting.length > 0) {
        // Nothing ahead of them is still on its way to disk.
        this.nextWrite = newPendingWrite();
        this.landed(w);
      }
      return;
    }
    // Carried commit-only hard states go first: an older one never overwrites a newer state.
    let ops: BatchOp[] = [];
    if (levelToo) {
      ops = this.carryOps.length > 0 ? this.carryOps.concat(w.ops) : w.ops;
      this.carryOps = [];
      this.carriedAt.clear();
      this.carryUrgent = false;
    }
    this.nextWrite = newPendingWrite();
    this.inFlight = w;
    const startMs = performance.now();
    if (TRACE)
      process.stderr.write(
        `TRACE ${this.hooks.nodeId} write-start t=${traceMs()} ops=${ops.length} sync=${w.sync}\n`,
      );
    this.store.write(
      ops,
      w,
      () => {
        this.turnStats.writes += 1;
        this.turnStats.opsWritten += ops.length;
        if (w.sync) this.turnStats.fsyncs += 1;
        this.hooks.metrics?.observeWrite(ops.length, w.sync);
        if (TRACE)
          process.stderr.write(
            `TRACE ${this.hooks.nodeId} write-landed t=${traceMs()} readies=${w.waiting.length} writeMs=${(performance.now() - startMs).toFixed(1)}\n`,
          );
        this.inFlight = undefined;
        this.landed(w);
        this.maybeStartWrite();
      },
      (err: Error) => this.fail(err),
    );
  }

  /** The batch holding these Readies is durable (and every earlier one): what waited for it goes. */
  private landed(w: PendingWrite): void {
    for (const { group: g, rd, whole, sentEarly } of w.waiting) {
      if (g.dropped) continue;
      if (whole) {
        g.afterPersist(rd, false);
        g.node.advance();
      } else {
        if (!sentEarly) g.sendMessages(rd);
        const last = rd.entries[rd.entries.length - 1];
        if (last) g.node.persisted(last.index, last.term);
      }
      this.active.add(g);
    }
    this.network.flush();
    if (this.active.size > 0 || this.carryUrgent) this.schedule();
  }
}
