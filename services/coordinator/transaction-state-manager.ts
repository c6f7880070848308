// The __transaction_state/N partitions this node replicates and its leaderships of them (Kafka's
// TransactionStateManager): registration, leadership (onElection / onResignation, driven by the
// Raft host's leader-change signal), per-partition loading (our own first entry of the term
// applied, then the partition serves), and the expiry of idle transactional ids. The records
// themselves live in each partition's TransactionStateMachine; the request logic is in
// transaction-coordinator.ts.
import { assert } from "../../libs/common/assert.js";
import type { SchedulingClock, TimerHandle } from "../../libs/runtime/scheduler.js";
import { TernError } from "../../libs/common/errors.js";
import type { Logger } from "../../libs/common/logger.js";
import type { LeaderChange, RaftGroup } from "../../libs/raft-host/api.js";
import { encodeEntry, EXPIRE_IDS_MAX } from "./transaction-log.js";
import { isExpired, type TxnRecord } from "./transaction-metadata.js";
import type { TransactionStateMachine, TxnApplyResult } from "./transaction-state-machine.js";
import { TxnLocks } from "./txn-locks.js";
import { LeadershipWaits } from "./leadership-waits.js";
import { NONE } from "../../libs/raft/types.js";

/** A failed load is tried again after this long while this replica still leads. */
const LOAD_RETRY_DELAY_MS = 200;

export interface StateManagerLimits {
  /** Bound on the wait for the load entry to apply. */
  readonly proposeTimeoutMs: number;
  /** Period of the idle-id expiration pass. */
  readonly timeoutCheckIntervalMs: number;
  /** Idle ids are forgotten after this long. */
  readonly transactionalIdExpirationMs: number;
  /** Bound on a request's wait for a partition between leaders (leadership-waits.ts). */
  readonly leadershipWaitMs: number;
  /** Requests waiting for a leadership at once; past it they are answered at once. */
  readonly leadershipWaitersMax: number;
}

/** Where leader changes of the host's Raft groups come from (the raft host; a fake in tests). */
export interface LeaderChangeSource {
  onLeaderChange(listener: (change: LeaderChange) => void): () => void;
}

/** One leadership of one partition: everything in it stops when the leadership ends. */
export interface TxnLeadership {
  readonly term: number;
  readonly abort: AbortController;
  readonly locks: TxnLocks;
  loaded: boolean;
  /** The coordinator epoch: the term in which our first entry was applied. */
  coordinatorEpoch: number;
  loadRetry: TimerHandle | undefined;
}

export interface TxnPartition {
  readonly partition: number;
  readonly group: RaftGroup;
  readonly sm: TransactionStateMachine;
  leadership: TxnLeadership | undefined;
}

export interface TransactionStateManagerOptions {
  readonly logger: Logger;
  readonly clock: SchedulingClock;
  readonly limits: StateManagerLimits;
  readonly leaderChanges: LeaderChangeSource;
  /** A partition became servable on a new leadership, loadMs after it was won (metrics). */
  readonly partitionLoaded?: (loadMs: number) => void;
  /** Called once per loaded leadership, before any request is served in it (the coordinator resumes decided transactions). */
  readonly onLoaded: (hosted: TxnPartition, leadership: TxnLeadership) => void;
}

export class TransactionStateManager {
  private readonly partitions = new Map<number, TxnPartition>();
  private readonly byGroupId = new Map<string, TxnPartition>();
  private readonly unsubscribe: () => void;
  private readonly expirationTimer: TimerHandle;
  private readonly waits: LeadershipWaits;
  private closed = false;

  constructor(private readonly options: TransactionStateManagerOptions) {
    this.waits = new LeadershipWaits(options.clock, options.limits.leadershipWaitersMax);
    this.unsubscribe = options.leaderChanges.onLeaderChange((change) =>
      this.onLeaderChange(change),
    );
    this.expirationTimer = options.clock.setInterval(
      () => this.removeExpiredTransactionalIds(),
      options.limits.timeoutCheckIntervalMs,
    );
  }

  // ---- registration and leadership ----------------------------------------------------

  /** Registers a replica of __transaction_state/N; its leaderships come from the host's leader changes. */
  addPartition(partition: number, group: RaftGroup, sm: TransactionStateMachine): void {
    assert(!this.partitions.has(partition), () => `partition ${partition} registered twice`);
    assert(sm.partition === partition, "state machine of the same partition");
    const hosted: TxnPartition = { partition, group, sm, leadership: undefined };
    this.partitions.set(partition, hosted);
    this.byGroupId.set(group.groupId, hosted);
    // Leadership won before registration raised no event here.
    if (group.isLeader()) this.onElection(partition, group.term());
  }

  removePartition(partition: number): void {
    const hosted = this.partitions.get(partition);
    if (hosted === undefined) return;
    this.onResignation(partition);
    this.partitions.delete(partition);
    this.byGroupId.delete(hosted.group.groupId);
  }

  /** This replica leads the partition in term: load it (once per term). */
  onElection(partition: number, term: number): void {
    const hosted = this.partitions.get(partition);
    if (hosted === undefined || this.closed) return;
    if (hosted.leadership !== undefined && hosted.leadership.term === term) return;
    this.onResignation(partition);
    const leadership: TxnLeadership = {
      term,
      abort: new AbortController(),
      locks: new TxnLocks(this.options.clock),
      loaded: false,
      coordinatorEpoch: term,
      loadRetry: undefined,
    };
    hosted.leadership = leadership;
    void this.load(hosted, leadership);
  }

  /** This replica stopped leading the partition: everything of that leadership stops. */
  onResignation(partition: number): void {
    const hosted = this.partitions.get(partition);
    const leadership = hosted?.leadership;
    if (hosted === undefined || leadership === undefined) return;
    hosted.leadership = undefined;
    leadership.abort.abort();
    this.options.clock.clearTimeout(leadership.loadRetry);
    this.options.logger.info(
      { partition, term: leadership.term },
      "transaction log partition: leadership ended",
    );
  }

  private onLeaderChange(change: LeaderChange): void {
    const hosted = this.byGroupId.get(change.groupId);
    if (hosted === undefined) return;
    // The group's own view, updated before the host reports the change.
    if (hosted.group.isLeader()) this.onElection(hosted.partition, hosted.group.term());
    else this.onResignation(hosted.partition);
    this.waits.changed(hosted.partition);
  }

  close(): void {
    this.closed = true;
    this.unsubscribe();
    this.options.clock.clearInterval(this.expirationTimer);
    for (const partition of this.partitions.keys()) this.onResignation(partition);
    this.waits.close();
  }

  // ---- loading ------------------------------------------------------------------------

  /** Applies our own first entry of the term, then serves and hands the decided transactions to the coordinator. */
  private async load(hosted: TxnPartition, leadership: TxnLeadership): Promise<void> {
    const { clock, limits, logger } = this.options;
    const log = logger.child({ partition: hosted.partition, term: leadership.term });
    const startMs = clock.monotonicMs();
    try {
      const result = await hosted.group.propose<TxnApplyResult>(
        encodeEntry({ kind: "noop", nowMs: clock.nowMs() }),
        { timeoutMs: limits.proposeTimeoutMs },
      );
      if (hosted.leadership !== leadership) return;
      leadership.coordinatorEpoch = result.term;
      leadership.loaded = true;
    } catch (e) {
      log.info({ err: e }, "transaction log partition: load failed (leadership changed?)");
      // Still leader: try again a little later rather than spinning.
      if (hosted.leadership === leadership && hosted.group.isLeader()) {
        leadership.loadRetry = clock.setTimeout(() => {
          leadership.loadRetry = undefined;
          if (hosted.leadership === leadership) void this.load(hosted, leadership);
        }, LOAD_RETRY_DELAY_MS);
      }
      return;
    }
    this.options.onLoaded(hosted, leadership);
    this.waits.changed(hosted.partition);
    const loadMs = clock.monotonicMs() - startMs;
    this.options.partitionLoaded?.(loadMs);
    log.info(
      { ids: hosted.sm.size(), loadMs: Math.round(loadMs) },
      "transaction log partition: loaded, serving",
    );
  }

  // ---- lookups ------------------------------------------------------------------------

  /**
   * Waits, at most leadershipWaitMs, while this node's replica of the partition is between
   * leaders: it knows no leader (an election is under way), or it leads and has not loaded yet.
   * Resolves either way; the request then reads the state as it is (leadership-waits.ts).
   */
  async settled(partition: number): Promise<void> {
    const { clock, limits } = this.options;
    const deadlineMs = clock.monotonicMs() + limits.leadershipWaitMs;
    while (!this.closed && this.betweenLeaders(partition)) {
      const change = this.waits.nextChange(partition, deadlineMs - clock.monotonicMs());
      if (change === undefined) return;
      await change;
    }
  }

  private betweenLeaders(partition: number): boolean {
    const hosted = this.partitions.get(partition);
    if (hosted === undefined) return false;
    if (hosted.leadership !== undefined) return !hosted.leadership.loaded;
    return hosted.group.leader() === NONE;
  }

  /** The partition and its loaded leadership; NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS otherwise. */
  servingLeadership(partition: number): { hosted: TxnPartition; leadership: TxnLeadership } {
    if (this.closed) throw new TernError("NOT_COORDINATOR", "this coordinator is shutting down");
    const hosted = this.partitions.get(partition);
    const leadership = hosted?.leadership;
    if (hosted === undefined || leadership === undefined) {
      throw new TernError(
        "NOT_COORDINATOR",
        `this node is not the leader of __transaction_state/${partition}`,
        { partition },
      );
    }
    if (!leadership.loaded)
      throw new TernError(
        "COORDINATOR_LOAD_IN_PROGRESS",
        `__transaction_state/${partition} is loading`,
        { partition },
      );
    return { hosted, leadership };
  }

  /** Every registered partition (loaded or not). */
  hostedPartitions(): IterableIterator<TxnPartition> {
    return this.partitions.values();
  }

  /** The Raft leader of a partition this node replicates, as its own replica knows it (-1 unknown). */
  localLeader(partition: number): number | undefined {
    return this.partitions.get(partition)?.group.leader();
  }

  /** Every transactional id's record on the partitions this node leads and has loaded (metrics). */
  *ledRecords(): IterableIterator<TxnRecord> {
    for (const hosted of this.partitions.values())
      if (hosted.leadership?.loaded === true) yield* hosted.sm.all();
  }

  /** How many __transaction_state partitions this node leads and serves. */
  loadedPartitions(): number {
    let n = 0;
    for (const hosted of this.partitions.values()) if (hosted.leadership?.loaded === true) n += 1;
    return n;
  }

  /** Whether this node serves requests for the partition now (for readiness and tests). */
  isLoaded(partition: number): boolean {
    return this.partitions.get(partition)?.leadership?.loaded === true;
  }

  // ---- expiration ---------------------------------------------------------------------

  /** Forgets ids idle past transactionalIdExpirationMs on every loaded partition (at most EXPIRE_IDS_MAX each per pass). */
  private removeExpiredTransactionalIds(): void {
    for (const hosted of this.partitions.values()) {
      const leadership = hosted.leadership;
      if (leadership?.loaded === true) void this.expireIdle(hosted, leadership);
    }
  }

  private async expireIdle(hosted: TxnPartition, leadership: TxnLeadership): Promise<void> {
    const { clock, limits, logger } = this.options;
    const nowMs = clock.nowMs();
    const expired: string[] = [];
    for (const record of hosted.sm.all()) {
      if (expired.length >= EXPIRE_IDS_MAX) break;
      // A locked id has a request or completion in flight: not idle.
      if (
        isExpired(record, nowMs, limits.transactionalIdExpirationMs) &&
        !leadership.locks.isLocked(record.transactionalId)
      )
        expired.push(record.transactionalId);
    }
    if (expired.length === 0 || hosted.leadership !== leadership) return;
    // Applied only if each id is still expired then; the outcome matters to no one waiting.
    await hosted.group
      .propose(
        encodeEntry({
          kind: "expire",
          nowMs,
          expirationMs: limits.transactionalIdExpirationMs,
          transactionalIds: expired,
        }),
        { timeoutMs: limits.proposeTimeoutMs },
      )
      .catch((e: unknown) =>
        logger.info(
          { err: e, partition: hosted.partition },
          "expiring idle transactional ids failed",
        ),
      );
  }
}
