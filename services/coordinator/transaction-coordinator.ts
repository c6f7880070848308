// The request logic of the transaction coordinator (Kafka's TransactionCoordinator with
// transactions V2): InitProducerId, AddPartitionsToTxn / AddOffsetsToTxn, EndTxn, the admin
// requests, the completion (markers, then Complete*) of every decided transaction, and the
// abort of transactions open past their timeout. Partitions, leaderships and loading are the
// TransactionStateManager's (transaction-state-manager.ts); once a leadership has loaded, the
// coordinator resumes the markers of its decided transactions. Every transition of an id is
// made under that id's lock, proposed to Raft, and takes effect only when applied; the answer
// is read from the applied state.
import { assert } from "../../libs/common/assert.js";
import type { SchedulingClock, TimerHandle } from "../../libs/runtime/scheduler.js";
import { TernError, isTernError, type ErrorName } from "../../libs/common/errors.js";
import type { Failpoints } from "../../libs/common/failpoints.js";
import type { Logger } from "../../libs/common/logger.js";
import type { RaftGroup } from "../../libs/raft-host/api.js";
import { internalPartitionOf } from "../../libs/metadata/lookup.js";
import { TRANSACTION_STATE_TOPIC, type ClusterMetadata } from "../../libs/metadata/types.js";
import { encodeEntry, type TxnLogEntry } from "./transaction-log.js";
import type {
  MarkerOutcome,
  TransactionMarkerChannelManager,
} from "./transaction-marker-channel-manager.js";
import { OpenTransactionAges } from "./open-transaction-ages.js";
import {
  addPartitions,
  bumpForInit,
  checkProducer,
  completeEnd,
  initialRecord,
  isComplete,
  isPrepare,
  keptEpoch,
  markerProducer,
  needsRotation,
  partitionKey,
  prepareEnd,
  TXN_PARTITIONS_MAX,
  type EndReason,
  type TopicPartitionRef,
  type TxnRecord,
  type TxnState,
} from "./transaction-metadata.js";
import {
  TransactionStateManager,
  type LeaderChangeSource,
  type TxnLeadership,
  type TxnPartition,
} from "./transaction-state-manager.js";
import { PendingAdds, type TakePartitions } from "./pending-adds.js";
import type { TransactionStateMachine, TxnApplyResult } from "./transaction-state-machine.js";

export interface CoordinatorLimits {
  readonly transactionTimeoutDefaultMs: number;
  readonly transactionTimeoutMaxMs: number;
  /** How long a request waits for the previous transition of its id before CONCURRENT_TRANSACTIONS. */
  readonly completionWaitMs: number;
  /** How long a request waits for its proposal; past it the request is answered REQUEST_TIMED_OUT (outcome unknown). */
  readonly proposeTimeoutMs: number;
  /**
   * How long the id stays locked waiting for the outcome of a proposal its request gave up on.
   * The host settles a proposal when it applies or when this replica loses leadership
   * (check-quorum bounds that), so this bound is only a backstop.
   */
  readonly proposalOutcomeWaitMaxMs: number;
  readonly timeoutCheckIntervalMs: number;
  /** Idle ids are forgotten after this long. */
  readonly transactionalIdExpirationMs: number;
  /** Bound on the transactions one timeout scan aborts. */
  readonly abortsPerScanMax: number;
  /** Bound on a request's wait for its partition's election or load (leadership-waits.ts). */
  readonly leadershipWaitMs: number;
  /** Requests waiting for an election or load at once; past it they are answered at once. */
  readonly leadershipWaitersMax: number;
  /**
   * Bound on the read index that confirms leadership before an answer read from applied state
   * (a verification, an add that writes nothing); past it the request gets NOT_COORDINATOR.
   */
  readonly leadershipConfirmWaitMs: number;
  /**
   * Transactional ids one __transaction_state partition keeps: InitProducerId for a new id is
   * refused (THROTTLING_QUOTA_EXCEEDED) past it, so one client cannot fill the coordinator
   * for everyone; idle ids expire (transactionalIdExpirationMs) and free room.
   */
  readonly transactionalIdsPerPartitionMax: number;
}

export const DEFAULT_LIMITS: CoordinatorLimits = {
  transactionTimeoutDefaultMs: 60_000,
  transactionTimeoutMaxMs: 15 * 60_000,
  completionWaitMs: 5_000,
  proposeTimeoutMs: 5_000,
  proposalOutcomeWaitMaxMs: 10 * 60_000,
  timeoutCheckIntervalMs: 1_000,
  transactionalIdExpirationMs: 7 * 24 * 3600_000,
  abortsPerScanMax: 100,
  // An election here takes 0.1-0.3 s after a crash; a minority replica answers after this.
  leadershipWaitMs: 1_000,
  leadershipWaitersMax: 10_000,
  // A heartbeat round takes milliseconds; a leader cut off from its quorum never confirms.
  leadershipConfirmWaitMs: 1_000,
  transactionalIdsPerPartitionMax: 100_000,
};

export const OFFSETS_TOPIC = "__consumer_offsets";

export interface TransactionCoordinatorOptions {
  readonly logger: Logger;
  /** Time and timers (the system clock in a process, a ManualClock in tests). */
  readonly clock: SchedulingClock;
  /** The raft host's leader changes: leaderships of the registered partitions come from here. */
  readonly leaderChanges: LeaderChangeSource;
  readonly limits?: Partial<CoordinatorLimits>;
  readonly producerIds: { nextProducerId(): Promise<bigint> };
  readonly markers: TransactionMarkerChannelManager;
  /** Validates partitions of AddPartitionsToTxn; undefined = unknown (no metadata yet): accept. */
  readonly partitionExists?: (tp: TopicPartitionRef) => boolean | undefined;
  /**
   * The node's cluster view (ClusterView.current): the partition counts of __transaction_state
   * and __consumer_offsets that transactional ids and group ids hash by.
   */
  readonly metadata: () => ClusterMetadata | undefined;
  /** Observers for metrics (coordinator-metrics.ts). */
  readonly observer?: CoordinatorObserver;
  /** The process's failpoints (ctx.runtime.failpoints); none armed when absent. */
  readonly failpoints?: Failpoints | undefined;
}

export interface CoordinatorObserver {
  /** A Complete* was written: the transaction ran durationMs from its first partition to its end. */
  transactionEnded(commit: boolean, durationMs: number): void;
  /** A __transaction_state partition became servable on a new leadership, loadMs after it was won. */
  partitionLoaded(loadMs: number): void;
}

/** Work that must settle before an id's lock is given back (a completion, a proposal of unknown outcome). */
type KeepLock = (work: Promise<void>) => void;

/** What a request holds while it works on one id: the id's lock, in one leadership. */
interface LockScope {
  readonly hosted: TxnPartition;
  readonly leadership: TxnLeadership;
  readonly keepLock: KeepLock;
}

/** An add, decided from the applied state of its id. */
type AddPlan =
  | { readonly kind: "added" }
  | { readonly kind: "refused"; readonly error: TernError }
  | { readonly kind: "completing"; readonly current: TxnRecord }
  | { readonly kind: "write"; readonly current: TxnRecord };

type ProposalOutcome =
  | { readonly ok: true; readonly result: TxnApplyResult }
  | { readonly ok: false; readonly error: unknown };

export interface InitProducerIdRequest {
  readonly transactionalId: string;
  readonly transactionTimeoutMs: number;
  /** -1n / -1 when the producer holds no identity yet. */
  readonly producerId: bigint;
  readonly producerEpoch: number;
}
export interface ProducerIdentity {
  readonly producerId: bigint;
  readonly producerEpoch: number;
}
export interface TxnRequestBase {
  readonly transactionalId: string;
  readonly producerId: bigint;
  readonly producerEpoch: number;
}
export interface PartitionError {
  readonly tp: TopicPartitionRef;
  readonly error: ErrorName;
  readonly message: string;
}

export interface TransactionDescription {
  readonly transactionalId: string;
  readonly error: ErrorName;
  readonly record?: TxnRecord;
  readonly pendingMarkerPartitions: TopicPartitionRef[];
  readonly coordinatorEpoch: number;
}

export interface TransactionListing {
  readonly transactionalId: string;
  readonly producerId: bigint;
  readonly state: TxnState;
  readonly partition: number;
  readonly startTimeMs: number;
}

export class TransactionCoordinator {
  readonly limits: CoordinatorLimits;
  /** Partitions, leaderships, loading and expiry (Kafka's TransactionStateManager). */
  readonly stateManager: TransactionStateManager;
  private readonly timeoutTimer: TimerHandle;
  /** Per leadership: how long its open transactions have been open, on the monotonic clock. */
  private readonly openAges = new WeakMap<TxnLeadership, OpenTransactionAges>();
  private readonly pendingAdds = new PendingAdds();
  private closed = false;

  constructor(private readonly options: TransactionCoordinatorOptions) {
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    assert(
      this.limits.transactionTimeoutDefaultMs <= this.limits.transactionTimeoutMaxMs,
      "default transaction timeout within the max",
    );
    this.stateManager = new TransactionStateManager({
      logger: options.logger,
      clock: options.clock,
      limits: this.limits,
      leaderChanges: options.leaderChanges,
      onLoaded: (hosted, leadership) => this.onLoaded(hosted, leadership),
      ...(options.observer
        ? { partitionLoaded: (loadMs: number) => options.observer!.partitionLoaded(loadMs) }
        : {}),
    });
    this.timeoutTimer = options.clock.setInterval(
      () => this.abortTimedOutTransactions(),
      this.limits.timeoutCheckIntervalMs,
    );
  }

  // ---- partitions (kept by the state manager) -----------------------------------------

  /** Registers a replica of __transaction_state/N (the partition manager opens them). */
  addPartition(partition: number, group: RaftGroup, sm: TransactionStateMachine): void {
    this.stateManager.addPartition(partition, group, sm);
  }

  removePartition(partition: number): void {
    this.stateManager.removePartition(partition);
  }

  /** The Raft leader of a partition this node replicates, as its own replica knows it (-1 unknown). */
  localLeader(partition: number): number | undefined {
    return this.stateManager.localLeader(partition);
  }

  /** Whether this node serves requests for the partition now (for readiness and tests). */
  isLoaded(partition: number): boolean {
    return this.stateManager.isLoaded(partition);
  }

  /**
   * Waits (bounded) while this node's replica of the partition is between leaders, so that a
   * request arriving during a failover is answered by its outcome, not bounced (leadership-waits.ts).
   */
  settled(partition: number): Promise<void> {
    return this.stateManager.settled(partition);
  }

  /** settled() for the partition of a transactional id (no wait while the partition count is unknown). */
  async settledFor(transactionalId: string): Promise<void> {
    let partition: number;
    try {
      partition = this.partitionOf(transactionalId);
    } catch {
      return;
    }
    await this.stateManager.settled(partition);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.options.clock.clearInterval(this.timeoutTimer);
    this.stateManager.close();
  }

  /** A leadership loaded: start the markers of every decided transaction before any request is served. */
  private onLoaded(hosted: TxnPartition, leadership: TxnLeadership): void {
    let resumed = 0;
    for (const record of hosted.sm.all()) {
      if (!isPrepare(record.state)) continue;
      const release = leadership.locks.tryAcquire(record.transactionalId);
      assert(release !== undefined, "no lock is held before the partition is loaded");
      void this.runLocked(hosted, leadership, release, async (scope) =>
        scope.keepLock(this.complete(hosted, leadership, record)),
      );
      resumed++;
    }
    if (resumed > 0)
      this.options.logger.info(
        { partition: hosted.partition, term: leadership.term, resumed },
        "transaction log partition: resumed decided transactions",
      );
  }

  /** Runs body under an id's lock; the lock is given back once body and all the work it kept have settled. */
  private async runLocked<T>(
    hosted: TxnPartition,
    leadership: TxnLeadership,
    release: () => void,
    body: (scope: LockScope) => Promise<T>,
  ): Promise<T> {
    const kept: Promise<void>[] = [];
    try {
      return await body({ hosted, leadership, keepLock: (work) => kept.push(work) });
    } finally {
      if (kept.length === 0) release();
      else void Promise.all(kept).finally(release);
    }
  }

  private async withLock<T>(
    transactionalId: string,
    body: (scope: LockScope) => Promise<T>,
  ): Promise<T> {
    const { hosted, leadership, release } = await this.lockFor(transactionalId);
    return this.runLocked(hosted, leadership, release, body);
  }

  /**
   * Starts the markers and Complete* of a decided (Prepare*) record under the caller's lock.
   * Every applied decision must have one running: after load, after a proposal whose request
   * timed out, and after a completion that stopped while this leadership went on.
   */
  private resumeCompletion(scope: LockScope, record: TxnRecord, why: string): void {
    assert(isPrepare(record.state), "only a decision is completed");
    this.options.logger.info(
      {
        partition: scope.hosted.partition,
        transactionalId: record.transactionalId,
        state: record.state,
        why,
      },
      "completing a decided transaction",
    );
    scope.keepLock(this.complete(scope.hosted, scope.leadership, record));
  }

  // ---- routing and proposals ----------------------------------------------------------

  partitionOf(transactionalId: string): number {
    return internalPartitionOf(this.options.metadata(), TRANSACTION_STATE_TOPIC, transactionalId);
  }

  private leaderFor(transactionalId: string): { hosted: TxnPartition; leadership: TxnLeadership } {
    if (this.closed) throw new TernError("NOT_COORDINATOR", "this coordinator is shutting down");
    return this.stateManager.servingLeadership(this.partitionOf(transactionalId));
  }

  private checkLeadership(hosted: TxnPartition, leadership: TxnLeadership): void {
    if (hosted.leadership !== leadership)
      throw new TernError(
        "NOT_COORDINATOR",
        `lost leadership of __transaction_state/${hosted.partition}`,
      );
  }

  /**
   * Confirms, before an answer read from applied state without a write, that this node still
   * leads the partition and has applied everything committed before the request: a read index
   * (a heartbeat round a quorum acknowledged, then applied >= the commit index it recorded). A
   * deposed leader that does not know it yet holds stale state and never gets that quorum: it
   * answers NOT_COORDINATOR, within leadershipConfirmWaitMs. A write needs no such check: a
   * deposed leader's proposal never commits.
   */
  private async confirmLeadership(hosted: TxnPartition, leadership: TxnLeadership): Promise<void> {
    this.checkLeadership(hosted, leadership);
    try {
      await hosted.group.readBarrier({ timeoutMs: this.limits.leadershipConfirmWaitMs });
    } catch (e) {
      throw new TernError(
        "NOT_COORDINATOR",
        `could not confirm leadership of __transaction_state/${hosted.partition}: ${e instanceof Error ? e.message : String(e)}`,
        undefined,
        { cause: e },
      );
    }
    this.checkLeadership(hosted, leadership);
  }

  /**
   * Proposes a record and returns it as applied; the state machine refusing it is a bug. Past
   * proposeTimeoutMs the request gets REQUEST_TIMED_OUT, but the entry may still commit: keepLock
   * then holds the id's lock until the proposal settles, and a decision it applies gets its
   * completion, so no applied Prepare record is ever left without markers.
   */
  private async propose(
    hosted: TxnPartition,
    leadership: TxnLeadership,
    entry: TxnLogEntry,
    keepLock: KeepLock | undefined,
  ): Promise<TxnApplyResult> {
    this.checkLeadership(hosted, leadership);
    const settled: Promise<ProposalOutcome> = hosted.group
      .propose<TxnApplyResult>(encodeEntry(entry), {
        timeoutMs: this.limits.proposalOutcomeWaitMaxMs,
      })
      .then(
        (r) => ({ ok: true as const, result: r.result }),
        (error: unknown) => ({ ok: false as const, error }),
      );
    let timer: TimerHandle | undefined;
    const late = new Promise<"late">((resolve) => {
      timer = this.options.clock.setTimeout(() => resolve("late"), this.limits.proposeTimeoutMs);
    });
    // A leader that steps down (check-quorum: cut off from its followers) keeps its proposal
    // pending, outcome unknown, until a new leader overwrites or commits it. The client need not
    // wait for proposeTimeoutMs to learn that this node no longer coordinates: answer it now, as
    // a late proposal is answered (the id stays locked here until the proposal settles).
    let onResign: (() => void) | undefined;
    const resigned = new Promise<"resigned">((resolve) => {
      if (leadership.abort.signal.aborted) return resolve("resigned");
      onResign = () => resolve("resigned");
      leadership.abort.signal.addEventListener("abort", onResign, { once: true });
    });
    const outcome = await Promise.race([settled, late, resigned]);
    this.options.clock.clearTimeout(timer);
    if (onResign !== undefined) leadership.abort.signal.removeEventListener("abort", onResign);
    if (outcome === "late" || outcome === "resigned") {
      keepLock?.(this.afterLateProposal(hosted, leadership, settled));
      if (outcome === "resigned")
        throw new TernError(
          "NOT_COORDINATOR",
          `lost leadership of __transaction_state/${hosted.partition} before the transition committed (outcome unknown; retry with the new coordinator)`,
        );
      throw new TernError(
        "REQUEST_TIMED_OUT",
        `__transaction_state/${hosted.partition} did not commit the transition within ${this.limits.proposeTimeoutMs} ms (outcome unknown; retry)`,
      );
    }
    if (!outcome.ok) {
      const e = outcome.error;
      if (isTernError(e, "NOT_LEADER_OR_FOLLOWER"))
        throw new TernError("NOT_COORDINATOR", e.message, e.details, { cause: e });
      throw e;
    }
    const result = outcome.result;
    if (result.kind === "txn" && !result.ok) {
      this.options.logger.error(
        { partition: hosted.partition, reason: result.reason },
        "transaction log refused a proposed transition (bug)",
      );
      throw new TernError("UNKNOWN_SERVER_ERROR", `transition refused: ${result.reason}`);
    }
    return result;
  }

  private async write(
    scope: { hosted: TxnPartition; leadership: TxnLeadership; keepLock: KeepLock },
    record: TxnRecord,
  ): Promise<TxnRecord> {
    const result = await this.propose(
      scope.hosted,
      scope.leadership,
      { kind: "txn", record },
      scope.keepLock,
    );
    assert(result.kind === "txn" && result.ok, "a txn entry applies as a txn");
    return result.record;
  }

  /** Waits for a proposal its request gave up on; completes the decision it applied, if any. Never rejects. */
  private async afterLateProposal(
    hosted: TxnPartition,
    leadership: TxnLeadership,
    settled: Promise<ProposalOutcome>,
  ): Promise<void> {
    const outcome = await settled;
    if (!outcome.ok) {
      // Leadership lost (the next leader resumes what was applied) or the backstop bound passed
      // (the timeout scan resumes a decision that applies later).
      this.options.logger.info(
        { partition: hosted.partition, err: outcome.error },
        "a timed-out transition did not apply here",
      );
      return;
    }
    const result = outcome.result;
    if (
      result.kind !== "txn" ||
      !result.ok ||
      !isPrepare(result.record.state) ||
      hosted.leadership !== leadership
    )
      return;
    this.options.logger.info(
      {
        partition: hosted.partition,
        transactionalId: result.record.transactionalId,
        state: result.record.state,
      },
      "a decision applied after its request timed out: completing it",
    );
    await this.complete(hosted, leadership, result.record);
  }

  private async lockFor(
    transactionalId: string,
  ): Promise<{ hosted: TxnPartition; leadership: TxnLeadership; release: () => void }> {
    const { hosted, leadership } = this.leaderFor(transactionalId);
    const release = await leadership.locks.acquire(transactionalId, this.limits.completionWaitMs);
    try {
      this.checkLeadership(hosted, leadership);
    } catch (e) {
      release();
      throw e;
    }
    return { hosted, leadership, release };
  }

  // ---- InitProducerId -----------------------------------------------------------------

  async initProducerId(request: InitProducerIdRequest): Promise<ProducerIdentity> {
    const timeoutMs =
      request.transactionTimeoutMs === 0
        ? this.limits.transactionTimeoutDefaultMs
        : request.transactionTimeoutMs;
    if (
      !Number.isInteger(timeoutMs) ||
      timeoutMs <= 0 ||
      timeoutMs > this.limits.transactionTimeoutMaxMs
    ) {
      throw new TernError(
        "INVALID_TRANSACTION_TIMEOUT",
        `transaction timeout ${timeoutMs} ms is outside 1..${this.limits.transactionTimeoutMaxMs}`,
      );
    }
    if (request.transactionalId === "") {
      return { producerId: await this.options.producerIds.nextProducerId(), producerEpoch: 0 };
    }
    await this.settledFor(request.transactionalId);
    // Bounded: at most one fence (abort of an open transaction) and then the bump.
    for (let round = 0; round < 3; round++) {
      const answer = await this.initRound(request, timeoutMs);
      if (answer !== undefined) return answer;
    }
    throw new TernError("CONCURRENT_TRANSACTIONS", "the previous transaction is still completing");
  }

  /** One attempt under the lock: an answer, or undefined after fencing an open transaction. */
  private async initRound(
    request: InitProducerIdRequest,
    timeoutMs: number,
  ): Promise<ProducerIdentity | undefined> {
    return this.withLock(request.transactionalId, async (scope) => {
      const current = scope.hosted.sm.get(request.transactionalId);
      const nowMs = this.options.clock.nowMs();
      if (current === undefined) {
        const max = this.limits.transactionalIdsPerPartitionMax;
        if (scope.hosted.sm.size() >= max)
          throw new TernError(
            "THROTTLING_QUOTA_EXCEEDED",
            `__transaction_state/${scope.hosted.partition} already keeps ${max} transactional ids, the most it holds: reuse a transactional id, or retry once idle ones expire`,
          );
        const producerId = await this.options.producerIds.nextProducerId();
        return identity(
          await this.write(
            scope,
            initialRecord(request.transactionalId, producerId, timeoutMs, nowMs),
          ),
        );
      }
      const presented = request.producerId >= 0n;
      if (presented) {
        // The previous identity is accepted only as the same instance's retry: never after a
        // fence (it is the fenced instance's) and never when the bump was for a new instance
        // (bumpForInit then keeps no last epoch).
        const isLast =
          request.producerId === current.lastProducerId &&
          request.producerEpoch === current.lastProducerEpoch &&
          current.endReason !== "fence";
        if (isLast && current.state === "Empty") return identity(current); // retry of a succeeded InitProducerId
        const isCurrent =
          request.producerId === current.producerId &&
          request.producerEpoch === current.producerEpoch;
        if (!isCurrent && !isLast)
          throw new TernError(
            "PRODUCER_FENCED",
            `producer ${request.producerId}/${request.producerEpoch} is not the current instance of ${request.transactionalId}`,
          );
      }
      if (current.state === "Ongoing") {
        // KIP-360: the instance holding the open transaction's identity re-initialises to
        // recover from an abortable error. Its transaction ends as its own abort (bumped, so
        // its late batches are fenced); the next round finds that identity as the last one
        // and bumps once more for it. Anyone else fences the open transaction's instance.
        const own =
          presented &&
          request.producerId === current.producerId &&
          request.producerEpoch === current.producerEpoch;
        scope.keepLock(
          (await this.beginEnd(scope, current, false, own ? "client" : "fence")).completion,
        );
        return undefined;
      }
      if (isPrepare(current.state)) {
        this.resumeCompletion(scope, current, "init found a decision without its completion");
        return undefined;
      }
      const nextProducerId = needsRotation(current.producerEpoch)
        ? await this.options.producerIds.nextProducerId()
        : undefined;
      return identity(
        await this.write(scope, bumpForInit(current, timeoutMs, nowMs, nextProducerId, presented)),
      );
    });
  }

  // ---- AddPartitionsToTxn / AddOffsetsToTxn -------------------------------------------

  async addPartitionsToTxn(
    request: TxnRequestBase & {
      readonly partitions: readonly TopicPartitionRef[];
      readonly verifyOnly: boolean;
    },
  ): Promise<PartitionError[]> {
    validatePartitions(request.partitions);
    await this.settledFor(request.transactionalId);
    if (request.verifyOnly) return this.verifyPartitions(request);
    // Per partition, never all or nothing: a broker's request carries the partitions of several
    // produce requests (add-partitions-batcher.ts), and one of them must not fail the others.
    // A partition missing from this node's metadata view may only be missing here (a view that
    // lags the controller's): its refusal is retriable, and the others are added.
    const unknownKeys = new Set(
      request.partitions
        .filter((tp) => this.options.partitionExists?.(tp) === false)
        .map(partitionKey),
    );
    const known = request.partitions.filter((tp) => !unknownKeys.has(partitionKey(tp)));
    if (known.length > 0) await this.addToTransaction(request, known);
    return request.partitions.map((tp) =>
      unknownKeys.has(partitionKey(tp))
        ? {
            tp,
            error: "UNKNOWN_TOPIC_OR_PARTITION",
            message: `${partitionKey(tp)} is not in this coordinator's metadata (yet)`,
          }
        : { tp, error: "NONE", message: "" },
    );
  }

  /** Adds the group's __consumer_offsets partition; answers its number. */
  async addOffsetsToTxn(request: TxnRequestBase & { readonly groupId: string }): Promise<number> {
    if (request.groupId === "") throw new TernError("INVALID_GROUP_ID", "group id is empty");
    const partition = internalPartitionOf(this.options.metadata(), OFFSETS_TOPIC, request.groupId);
    await this.settledFor(request.transactionalId);
    await this.addToTransaction(request, [{ topic: OFFSETS_TOPIC, partition }]);
    return partition;
  }

  /** Requests of one id waiting for its lock together share one write (pending-adds.ts). */
  private addToTransaction(
    request: TxnRequestBase,
    partitions: readonly TopicPartitionRef[],
  ): Promise<void> {
    return this.pendingAdds.join(
      request.transactionalId,
      request.producerId,
      request.producerEpoch,
      partitions,
      TXN_PARTITIONS_MAX,
      (take) => this.addUnderLock(request, take),
    );
  }

  private async addUnderLock(request: TxnRequestBase, take: TakePartitions): Promise<void> {
    await this.withLock(request.transactionalId, async (scope) => {
      const partitions = take();
      if (partitions === undefined) return; // written by the previous transaction's completion
      let plan = this.planAdd(scope.hosted, request, partitions);
      // Any answer but a write is read from applied state, which a deposed leader holds stale
      // (a transaction the new leader aborted still Ongoing, an epoch it bumped still current):
      // confirm leadership first, then decide on what is current.
      if (plan.kind !== "write") {
        await this.confirmLeadership(scope.hosted, scope.leadership);
        plan = this.planAdd(scope.hosted, request, partitions);
      }
      switch (plan.kind) {
        case "added":
          return;
        case "refused":
          throw plan.error;
        case "completing":
          this.resumeCompletion(scope, plan.current, "add found a decision without its completion");
          throw new TernError(
            "CONCURRENT_TRANSACTIONS",
            `the previous transaction of ${request.transactionalId} is still completing`,
          );
        case "write":
          await this.write(
            scope,
            addPartitions(plan.current, partitions, this.options.clock.nowMs()),
          );
      }
    });
  }

  /** What an add does, from the applied state of its id (under the id's lock). */
  private planAdd(
    hosted: TxnPartition,
    request: TxnRequestBase,
    partitions: readonly TopicPartitionRef[],
  ): AddPlan {
    let current: TxnRecord;
    try {
      current = this.currentRecord(hosted, request);
    } catch (e) {
      if (!isTernError(e)) throw e;
      return { kind: "refused", error: e };
    }
    if (current.state === "Ongoing") {
      const known = new Set(current.partitions.map(partitionKey));
      if (partitions.every((tp) => known.has(partitionKey(tp)))) return { kind: "added" };
      if (known.size + partitions.length > TXN_PARTITIONS_MAX)
        return {
          kind: "refused",
          error: new TernError(
            "INVALID_REQUEST",
            `a transaction spans at most ${TXN_PARTITIONS_MAX} partitions`,
          ),
        };
    }
    if (isPrepare(current.state)) return { kind: "completing", current };
    return { kind: "write", current };
  }

  /** The record of a request's id, with its producer checked. */
  private currentRecord(hosted: TxnPartition, request: TxnRequestBase): TxnRecord {
    const current = hosted.sm.get(request.transactionalId);
    if (current === undefined)
      throw new TernError(
        "INVALID_PRODUCER_ID_MAPPING",
        `transactional id ${request.transactionalId} is not initialised`,
      );
    const error = checkProducer(current, request.producerId, request.producerEpoch);
    if (error !== undefined)
      throw new TernError(
        error,
        `${error} for ${request.transactionalId} (${request.producerId}/${request.producerEpoch}; current ${current.producerId}/${current.producerEpoch})`,
      );
    return current;
  }

  /** KIP-890: was each partition added to the ongoing transaction of this exact producer? Read-only. */
  private async verifyPartitions(
    request: TxnRequestBase & { readonly partitions: readonly TopicPartitionRef[] },
  ): Promise<PartitionError[]> {
    const { hosted, leadership } = this.leaderFor(request.transactionalId);
    // The answer lets a batch into the transaction: never from a deposed leader's stale state.
    await this.confirmLeadership(hosted, leadership);
    let current: TxnRecord;
    try {
      current = this.currentRecord(hosted, request);
    } catch (e) {
      // In the body: the broker turns these into the producer's answer without retrying.
      if (!isTernError(e)) throw e;
      return request.partitions.map((tp) => ({ tp, error: e.errorName, message: e.message }));
    }
    const added = new Set(current.state === "Ongoing" ? current.partitions.map(partitionKey) : []);
    return request.partitions.map((tp) =>
      added.has(partitionKey(tp))
        ? { tp, error: "NONE", message: "" }
        : {
            tp,
            error: "INVALID_TXN_STATE",
            message: `${partitionKey(tp)} is not part of the ongoing transaction`,
          },
    );
  }

  // ---- EndTxn -------------------------------------------------------------------------

  /** keepEpoch: a V1 end (Kafka clients' EndTxn below v5; prepareEnd). */
  async endTxn(
    request: TxnRequestBase & { readonly committed: boolean; readonly keepEpoch?: boolean },
  ): Promise<ProducerIdentity> {
    await this.settledFor(request.transactionalId);
    const { hosted } = this.leaderFor(request.transactionalId);
    // A retry of an EndTxn that already decided is answered from the applied state at once,
    // without waiting for its markers.
    const retried = endTxnRetryAnswer(hosted.sm.get(request.transactionalId), request);
    if (retried !== undefined) return retried;
    return this.withLock(request.transactionalId, async (scope) => {
      const again = endTxnRetryAnswer(scope.hosted.sm.get(request.transactionalId), request);
      if (again !== undefined) return again;
      const current = this.currentRecord(scope.hosted, request);
      if (isPrepare(current.state)) {
        this.resumeCompletion(scope, current, "end found a decision without its completion");
        throw new TernError(
          "CONCURRENT_TRANSACTIONS",
          `the previous transaction of ${request.transactionalId} is still completing`,
        );
      }
      scope.keepLock(
        (
          await this.beginEnd(
            scope,
            current,
            request.committed,
            "client",
            request.keepEpoch === true,
          )
        ).completion,
      );
      const decided = scope.hosted.sm.get(request.transactionalId)!;
      this.options.failpoints?.crash("coordinator.before-end-txn-response");
      return identity(decided);
    });
  }

  /** Writes the decision (Prepare*) and starts its completion; the caller keeps the lock until it settles. */
  private async beginEnd(
    scope: LockScope,
    current: TxnRecord,
    commit: boolean,
    reason: EndReason,
    keepEpoch = false,
  ): Promise<{ completion: Promise<void> }> {
    const rotate = reason === "client" && !keepEpoch && needsRotation(current.producerEpoch);
    const nextProducerId = rotate ? await this.options.producerIds.nextProducerId() : undefined;
    const prepared = await this.write(
      scope,
      prepareEnd(current, commit, reason, this.options.clock.nowMs(), nextProducerId, keepEpoch),
    );
    this.options.logger.debug(
      {
        transactionalId: prepared.transactionalId,
        state: prepared.state,
        reason,
        partitions: prepared.partitions.length,
      },
      "transaction decided",
    );
    // Wrapped: awaiting a bare promise of a promise would wait for the markers too.
    return { completion: this.complete(scope.hosted, scope.leadership, prepared) };
  }

  /**
   * Markers, then Complete*. Never rejects; stops quietly when the leadership ends. A stop while
   * this leadership goes on (marker queue full, a fenced answer, Complete* not written) leaves
   * the decision to the timeout scan, which starts it again.
   */
  private async complete(
    hosted: TxnPartition,
    leadership: TxnLeadership,
    prepared: TxnRecord,
  ): Promise<void> {
    this.options.failpoints?.crash("coordinator.after-prepare-before-markers");
    const { producerId, producerEpoch } = markerProducer(prepared);
    let outcome: MarkerOutcome;
    try {
      outcome = await this.options.markers.send(
        {
          transactionalId: prepared.transactionalId,
          producerId,
          producerEpoch,
          coordinatorEpoch: leadership.coordinatorEpoch,
          commit: prepared.state === "PrepareCommit",
          epochBumped: !keptEpoch(prepared),
          partitions: prepared.partitions,
        },
        leadership.abort.signal,
      );
    } catch (e) {
      this.options.logger.error(
        { err: e, transactionalId: prepared.transactionalId },
        "marker fan-out failed",
      );
      return;
    }
    if (outcome !== "done" || hosted.leadership !== leadership) {
      const resumedBy = hosted.leadership === leadership ? "the timeout scan" : "the next leader";
      this.options.logger.info(
        { transactionalId: prepared.transactionalId, outcome },
        `markers stopped before completion; ${resumedBy} resumes them`,
      );
      return;
    }
    const current = hosted.sm.get(prepared.transactionalId);
    assert(
      current !== undefined &&
        current.state === prepared.state &&
        current.producerEpoch === prepared.producerEpoch,
      "the decided state is unchanged while its lock is held",
    );
    const kept: Promise<void>[] = [];
    // The next transaction's first adds, waiting for this lock, go into the same record: the
    // producer's first batches wait at their leaders for one Raft write less. Every marker is
    // acknowledged, so the record may open the next transaction as a Complete* would have.
    const next = this.pendingAdds.claim(
      current.transactionalId,
      current.producerId,
      current.producerEpoch,
    );
    try {
      const nowMs = this.options.clock.nowMs();
      const completed = completeEnd(current, nowMs);
      await this.write(
        { hosted, leadership, keepLock: (work) => kept.push(work) },
        next === undefined ? completed : addPartitions(completed, next.partitions, nowMs),
      );
      next?.settle();
      if (current.txnStartTimeMs > 0)
        this.options.observer?.transactionEnded(
          current.state === "PrepareCommit",
          Math.max(0, nowMs - current.txnStartTimeMs),
        );
    } catch (e) {
      next?.settle(e);
      this.options.logger.info(
        { err: e, transactionalId: prepared.transactionalId },
        "could not write Complete; it is resumed later",
      );
    }
    // A Complete* of unknown outcome keeps the lock until it settles.
    await Promise.all(kept);
  }

  // ---- timeouts ----------------------------------------------------------------------

  /**
   * On every loaded partition: aborts transactions open past their timeout (fencing their
   * producer) and restarts the completion of any decision found without one, at most
   * abortsPerScanMax per partition and pass. Ids locked by a request or completion are skipped.
   */
  private abortTimedOutTransactions(): void {
    for (const hosted of this.stateManager.hostedPartitions()) {
      const leadership = hosted.leadership;
      if (leadership?.loaded === true) this.abortTimedOutOf(hosted, leadership);
    }
  }

  private abortTimedOutOf(hosted: TxnPartition, leadership: TxnLeadership): void {
    const ages = this.agesOf(leadership);
    const ids = new Set<string>();
    let started = 0;
    for (const record of hosted.sm.all()) {
      ids.add(record.transactionalId);
      // Every record is looked at, past the cap too: a transaction is timed from its first sight.
      if (!ages.timedOut(record) && !isPrepare(record.state)) continue;
      if (started >= this.limits.abortsPerScanMax) continue;
      const release = leadership.locks.tryAcquire(record.transactionalId);
      if (release === undefined) continue;
      started++;
      void this.runLocked(hosted, leadership, release, (scope) =>
        this.finishDue(scope, record.transactionalId),
      );
    }
    ages.retain(ids);
  }

  /** The open transactions' ages under one leadership (a new leadership times them afresh). */
  private agesOf(leadership: TxnLeadership): OpenTransactionAges {
    let ages = this.openAges.get(leadership);
    if (ages === undefined) {
      ages = new OpenTransactionAges(this.options.clock, this.limits.timeoutCheckIntervalMs);
      this.openAges.set(leadership, ages);
    }
    return ages;
  }

  /** Under the id's lock: abort it if it timed out, or complete its decision. Never rejects. */
  private async finishDue(scope: LockScope, transactionalId: string): Promise<void> {
    const current = scope.hosted.sm.get(transactionalId);
    if (current === undefined) return;
    if (isPrepare(current.state)) {
      this.resumeCompletion(scope, current, "found by the timeout scan");
      return;
    }
    if (!this.agesOf(scope.leadership).timedOut(current)) return;
    try {
      this.options.logger.info(
        {
          transactionalId,
          producerId: current.producerId.toString(),
          epoch: current.producerEpoch,
        },
        "transaction timed out: aborting and fencing its producer",
      );
      scope.keepLock((await this.beginEnd(scope, current, false, "timeout")).completion);
    } catch (e) {
      this.options.logger.info(
        { err: e, transactionalId },
        "timeout abort failed; retried on the next scan",
      );
    }
  }

  // ---- admin --------------------------------------------------------------------------

  async abortTransaction(transactionalId: string): Promise<TxnState> {
    return this.withLock(transactionalId, async (scope) => {
      const current = scope.hosted.sm.get(transactionalId);
      if (current === undefined)
        throw new TernError(
          "TRANSACTIONAL_ID_NOT_FOUND",
          `transactional id ${transactionalId} is not known`,
        );
      if (current.state !== "Ongoing")
        throw new TernError(
          "INVALID_TXN_STATE",
          `transactional id ${transactionalId} has no open transaction (${current.state})`,
        );
      scope.keepLock((await this.beginEnd(scope, current, false, "admin")).completion);
      return scope.hosted.sm.get(transactionalId)!.state;
    });
  }

  describeTransactions(transactionalIds: readonly string[]): TransactionDescription[] {
    return transactionalIds.map((transactionalId) => {
      let hosted: TxnPartition;
      let leadership: TxnLeadership;
      try {
        ({ hosted, leadership } = this.leaderFor(transactionalId));
      } catch (e) {
        assert(isTernError(e), "leaderFor throws TernError");
        return {
          transactionalId,
          error: e.errorName,
          pendingMarkerPartitions: [],
          coordinatorEpoch: -1,
        };
      }
      const record = hosted.sm.get(transactionalId);
      if (record === undefined)
        return {
          transactionalId,
          error: "TRANSACTIONAL_ID_NOT_FOUND",
          pendingMarkerPartitions: [],
          coordinatorEpoch: leadership.coordinatorEpoch,
        };
      const pending = isPrepare(record.state)
        ? (this.options.markers.pendingPartitions(transactionalId) ?? [...record.partitions])
        : [];
      return {
        transactionalId,
        error: "NONE",
        record,
        pendingMarkerPartitions: pending,
        coordinatorEpoch: leadership.coordinatorEpoch,
      };
    });
  }

  listTransactions(filter: {
    states: readonly TxnState[];
    producerIds: readonly bigint[];
    minDurationMs: number;
  }): { transactions: TransactionListing[]; unavailablePartitions: number[] } {
    const nowMs = this.options.clock.nowMs();
    const transactions: TransactionListing[] = [];
    const unavailablePartitions: number[] = [];
    for (const hosted of this.stateManager.hostedPartitions()) {
      if (hosted.leadership?.loaded !== true) {
        if (hosted.leadership !== undefined) unavailablePartitions.push(hosted.partition);
        continue;
      }
      for (const record of hosted.sm.all()) {
        if (filter.states.length > 0 && !filter.states.includes(record.state)) continue;
        if (filter.producerIds.length > 0 && !filter.producerIds.includes(record.producerId))
          continue;
        if (
          filter.minDurationMs > 0 &&
          (record.txnStartTimeMs === 0 || nowMs - record.txnStartTimeMs < filter.minDurationMs)
        )
          continue;
        transactions.push({
          transactionalId: record.transactionalId,
          producerId: record.producerId,
          state: record.state,
          partition: hosted.partition,
          startTimeMs: record.txnStartTimeMs,
        });
      }
    }
    transactions.sort((a, b) =>
      a.transactionalId < b.transactionalId ? -1 : a.transactionalId > b.transactionalId ? 1 : 0,
    );
    return { transactions, unavailablePartitions: unavailablePartitions.sort((a, b) => a - b) };
  }
}

function identity(record: TxnRecord): ProducerIdentity {
  return { producerId: record.producerId, producerEpoch: record.producerEpoch };
}

/**
 * The answer to a retried EndTxn (same producer id and epoch as the one that decided), or
 * undefined when the request is not such a retry. Throws for a retry that cannot succeed.
 */
export function endTxnRetryAnswer(
  record: TxnRecord | undefined,
  request: TxnRequestBase & { readonly committed: boolean },
): ProducerIdentity | undefined {
  if (record === undefined || !(isPrepare(record.state) || isComplete(record.state)))
    return undefined;
  if (
    request.producerId !== record.lastProducerId ||
    request.producerEpoch !== record.lastProducerEpoch
  )
    return undefined;
  if (record.endReason === "timeout")
    throw new TernError(
      "TRANSACTION_TIMED_OUT",
      `the transaction of ${record.transactionalId} was aborted on timeout`,
    );
  if (record.endReason !== "client")
    throw new TernError(
      "PRODUCER_FENCED",
      `the transaction of ${record.transactionalId} was aborted by a newer instance or an admin`,
    );
  const committed = record.state === "PrepareCommit" || record.state === "CompleteCommit";
  if (committed !== request.committed) {
    throw new TernError(
      "INVALID_TXN_STATE",
      `the transaction was already ${committed ? "committed" : "aborted"}`,
    );
  }
  return identity(record);
}

function validatePartitions(partitions: readonly TopicPartitionRef[]): void {
  if (partitions.length === 0) throw new TernError("INVALID_REQUEST", "no partitions given");
  if (partitions.length > TXN_PARTITIONS_MAX)
    throw new TernError("INVALID_REQUEST", `at most ${TXN_PARTITIONS_MAX} partitions per request`);
  for (const tp of partitions) {
    if (tp.topic === "" || !Number.isInteger(tp.partition) || tp.partition < 0)
      throw new TernError("INVALID_REQUEST", `invalid partition ${JSON.stringify(tp)}`);
  }
}
