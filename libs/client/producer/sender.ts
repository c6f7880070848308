// Drains ready batches to partition leaders (Kafka's Sender). One Produce request per leader
// per round, one batch per partition per request, at most maxInFlight batches per partition.
// A retriable failure puts the batch back in sequence order and the partition resends one
// batch at a time from there (later in-flight batches come back out of order and are resent
// behind it). OUT_OF_ORDER_SEQUENCE_NUMBER is retriable for a batch sent behind an unresolved
// earlier one (Kafka's rule: only the next expected batch may call it fatal). NOT_LEADER_OR_FOLLOWER
// and friends refresh metadata at once, and the leader named in the answer is used until a send
// to it fails (controller metadata may lag a Raft election). A batch older than
// deliveryTimeoutMs fails with TimeoutError; in an idempotent producer that gap forces a new
// producer identity once nothing is in flight.
import type { ClientLogger as Logger } from "../../common/client-logger.js";
import type { ErrorName } from "../../common/errors.js";
import { REFRESH_METADATA_CODES, REFUSED_CODES, TernError } from "../../common/errors.js";
import { ClientError, TimeoutError, toClientError } from "../errors.js";
import type { Transport } from "../network/transport.js";
import type { MetadataCache } from "../network/metadata-cache.js";
import { backoffMs } from "../retry/retry.js";
import { SEQUENCE_MAX, type Accumulator, type PartitionQueue } from "./accumulator.js";
import type { ProducerBatch } from "./producer-batch.js";
import type { TransactionManager } from "./transaction-manager.js";
import type { CompressionCodec } from "../../records/compression.js";

export interface SenderOptions {
  readonly acks: -1 | 1;
  readonly lingerMs: number;
  readonly maxInFlight: number;
  readonly requestTimeoutMs: number;
  readonly idempotent: boolean;
  readonly retryBackoffMsMax: number;
  /** Codec of the built batches (Kafka record batch v2) on the wire and in the log. */
  readonly compression: CompressionCodec;
}

/** Longest sleep between rounds while batches wait (linger, backoff, metadata). */
const ROUND_INTERVAL_MS_MAX = 100;

export class Sender {
  private timer: NodeJS.Timeout | undefined;
  private timerAtMs = Infinity;
  private immediate = false;
  /** While > 0 every batch is ready at once (flush, commit, close). */
  flushers = 0;
  private identityResetNeeded = false;
  private stopped = false;
  /** Per leader: settles when the last compressed request has been handed to gRPC (requests leave in the order sent). */
  private readonly sendOrder = new Map<string, Promise<void>>();
  /** Per-batch debug lines (sent, acknowledged, failed) cost allocations: only when asked for. */
  private readonly debug: boolean;

  constructor(
    private readonly opts: SenderOptions,
    private readonly accumulator: Accumulator,
    private readonly txn: TransactionManager,
    private readonly transport: Transport,
    private readonly metadata: MetadataCache,
    private readonly logger: Logger,
  ) {
    this.debug = logger.isLevelEnabled("debug");
  }

  wake(): void {
    if (this.stopped || this.immediate) return;
    this.immediate = true;
    setImmediate(() => {
      this.immediate = false;
      this.round();
    });
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private schedule(delayMs: number): void {
    const at = Date.now() + Math.max(1, Math.min(delayMs, ROUND_INTERVAL_MS_MAX));
    if (this.timer && this.timerAtMs <= at) return;
    clearTimeout(this.timer);
    this.timerAtMs = at;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.timerAtMs = Infinity;
      this.round();
    }, at - Date.now());
  }

  private round(): void {
    if (this.stopped) return;
    const now = Date.now();
    this.expire(now);
    if (this.txn.fatalError()) return this.failAll(this.txn.fatalError()!);
    if (this.accumulator.pendingBatches().length === 0) return;
    if (this.identityResetNeeded || !this.identityReady()) return;
    // Bounded staleness: a view older than its max age is refreshed in the background.
    void this.metadata.current().catch(() => undefined);
    const byLeader = new Map<string, Array<{ q: PartitionQueue; batch: ProducerBatch }>>();
    let nextWakeMs = ROUND_INTERVAL_MS_MAX;
    let missingLeader = false;
    let moreReady = false;
    for (const q of this.accumulator.queues.values()) {
      const head = q.batches[0];
      if (!head) continue;
      const limit = q.retrying ? 1 : this.opts.maxInFlight;
      if (q.inFlight.size >= limit || (q.retrying && q.inFlight.size > 0)) continue;
      const readyAt = this.readyAtMs(q, head);
      if (readyAt > now) {
        nextWakeMs = Math.min(nextWakeMs, readyAt - now);
        continue;
      }
      const leader = q.leaderHint ?? this.metadata.leaderAddress(q.topic, q.partition);
      if (!leader) {
        missingLeader = true;
        continue;
      }
      q.batches.shift();
      this.prepare(q, head);
      // The partition leader adds the partition to the transaction (KIP-890 part 2).
      if (this.txn.transactional) this.txn.markSent(q.topic, q.partition);
      let list = byLeader.get(leader);
      if (!list) byLeader.set(leader, (list = []));
      list.push({ q, batch: head });
      // A request carries one batch per partition: another ready batch with a free in-flight
      // slot goes out in the next round, now, not at the next response or timer (without
      // this, a steady stream kept ~1.5 of 4 allowed batches in flight).
      const next = q.batches[0];
      if (next && q.inFlight.size < limit && this.readyAtMs(q, next) <= now) moreReady = true;
    }
    if (missingLeader) {
      this.metadata.invalidate();
      void this.metadata.refresh().then(
        () => this.wake(),
        () => this.schedule(ROUND_INTERVAL_MS_MAX),
      );
    }
    for (const [leader, items] of byLeader) void this.sendTo(leader, items);
    if (moreReady) this.wake();
    else if (this.accumulator.pendingBatches().some((b) => !b.done)) this.schedule(nextWakeMs);
  }

  private readyAtMs(q: PartitionQueue, head: ProducerBatch): number {
    const full = head.closed || q.batches.length > 1 || head.attempts > 0 || this.flushers > 0;
    return Math.max(head.notBeforeMs, full ? 0 : head.createdAtMs + this.opts.lingerMs);
  }

  /** Seals the batch and gives it its identity and sequence (kept across retries). */
  private prepare(q: PartitionQueue, batch: ProducerBatch): void {
    batch.closed = true;
    batch.attempts += 1;
    q.inFlight.add(batch);
    if (batch.baseSequence < 0) {
      batch.producerId = this.opts.idempotent ? this.txn.producerId : -1n;
      batch.producerEpoch = this.opts.idempotent ? this.txn.producerEpoch : -1;
      batch.baseSequence = this.opts.idempotent ? q.nextSequence : 0;
      if (this.opts.idempotent)
        q.nextSequence = (q.nextSequence + batch.records.length) % (SEQUENCE_MAX + 1);
    }
    batch.sentBehind = this.opts.idempotent && this.accumulator.hasEarlierUnresolved(q, batch);
  }

  private identityReady(): boolean {
    if (!this.opts.idempotent || this.txn.hasIdentity) return true;
    void this.txn.ensureIdentity().then(
      () => this.wake(),
      (e) => {
        const ce = toClientError(e, "InitProducerId");
        // Refused by the ACLs (CLUSTER_AUTHORIZATION_FAILED) or bad credentials: the waiting
        // records fail with it, as Kafka's producer fails them, instead of waiting out their
        // delivery timeout. Anything else is retried as before.
        if (ce.code !== undefined && REFUSED_CODES.has(ce.code)) {
          for (const q of this.accumulator.queues.values())
            for (const b of q.batches.splice(0)) this.finish(q, b, ce);
          this.wake();
          return;
        }
        this.logger.warn({ err: String(e) }, "producer id not obtained yet");
        this.schedule(ROUND_INTERVAL_MS_MAX);
      },
    );
    return false;
  }

  private async sendTo(
    leader: string,
    items: Array<{ q: PartitionQueue; batch: ProducerBatch }>,
  ): Promise<void> {
    const request = {
      transactionalId: this.txn.transactionalId ?? "",
      // Transactions V2: the leader adds each partition before its first append (KIP-890 part 2).
      addPartitionsToTxn: this.txn.transactional,
      acks: this.opts.acks,
      timeoutMs: this.opts.requestTimeoutMs,
      partitions: [] as Array<Record<string, unknown>>,
    };
    // Each batch goes as a Kafka record batch v2, built on its first send. Compression is
    // asynchronous: a request then waits for the leader's previous one to be handed to gRPC,
    // so that requests still leave in the order sent (idempotent sequences expect it).
    let handed = (): void => undefined;
    try {
      const built = items.map(({ batch }) =>
        batch.kafkaBatch(this.txn.transactional, this.opts.compression, this.onBatchResized),
      );
      let bytes: Buffer[];
      if (built.every((b): b is Buffer => Buffer.isBuffer(b)) && !this.sendOrder.has(leader))
        bytes = built;
      else {
        const all = Promise.all(built);
        const previous = this.sendOrder.get(leader) ?? Promise.resolve();
        const mine = new Promise<void>(
          (resolve) =>
            (handed = () => {
              if (this.sendOrder.get(leader) === mine) this.sendOrder.delete(leader);
              resolve();
            }),
        );
        this.sendOrder.set(leader, mine);
        await previous;
        bytes = await all;
      }
      request.partitions = items.map(({ batch }, i) => ({
        topic: batch.topic,
        partition: batch.partition,
        batch: { kafkaBatch: bytes[i]! },
      }));
      if (this.debug)
        this.logger.debug(
          {
            leader,
            batches: items.map(({ batch }) => ({
              tp: `${batch.topic}/${batch.partition}`,
              seq: batch.baseSequence,
              n: batch.records.length,
              attempts: batch.attempts,
            })),
          },
          "produce sent",
        );
      const call = this.transport.call(
        "Broker",
        leader,
        "Produce",
        request,
        this.opts.requestTimeoutMs + 5_000,
      );
      handed();
      const res = await call;
      const results = res.partitions ?? [];
      items.forEach((item, i) => {
        const r = results[i];
        if (!r)
          return this.onFailure(
            item.q,
            item.batch,
            new TernError("UNKNOWN_SERVER_ERROR", "missing partition in produce response"),
          );
        if (r.errorCode === "NONE") return this.onSuccess(item.q, item.batch, BigInt(r.baseOffset));
        if (r.errorCode === "DUPLICATE_SEQUENCE_NUMBER")
          return this.onSuccess(item.q, item.batch, -1n);
        const hint =
          typeof r.leader?.address === "string" &&
          r.leader.address.length > 0 &&
          r.leader.address !== leader
            ? r.leader.address
            : undefined;
        this.onFailure(
          item.q,
          item.batch,
          new TernError(r.errorCode as ErrorName, r.errorMessage || undefined),
          hint,
        );
      });
    } catch (e) {
      const err = e instanceof TernError ? e : new TernError("NETWORK_EXCEPTION", String(e));
      for (const item of items) this.onFailure(item.q, item.batch, err);
    } finally {
      handed();
    }
    this.wake();
  }

  private onSuccess(q: PartitionQueue, batch: ProducerBatch, baseOffset: bigint): void {
    if (this.debug)
      this.logger.debug(
        {
          tp: `${batch.topic}/${batch.partition}`,
          seq: batch.baseSequence,
          n: batch.records.length,
          attempts: batch.attempts,
          baseOffset: String(baseOffset),
        },
        "batch acknowledged",
      );
    q.inFlight.delete(batch);
    if (q.retrying && !q.batches.some((b) => b.attempts > 0) && q.inFlight.size === 0)
      q.retrying = false;
    this.finishOk(batch, baseOffset);
  }

  private onFailure(
    q: PartitionQueue,
    batch: ProducerBatch,
    error: TernError,
    leaderHint?: string,
  ): void {
    if (this.debug)
      this.logger.debug(
        {
          tp: `${batch.topic}/${batch.partition}`,
          seq: batch.baseSequence,
          n: batch.records.length,
          attempts: batch.attempts,
          error: error.errorName,
          message: error.message,
          retrying: q.retrying,
          inFlight: q.inFlight.size,
        },
        "batch failed",
      );
    // OUT_OF_ORDER behind an unresolved earlier batch (failed, or still in flight when this one
    // was sent) is retriable: resend in order once the earlier ones resolve. For the first
    // unresolved batch it means the broker lost our sequence: fatal for the partition.
    const resendInOrder =
      this.opts.idempotent &&
      error.errorName === "OUT_OF_ORDER_SEQUENCE_NUMBER" &&
      (batch.sentBehind || this.accumulator.hasEarlierUnresolved(q, batch));
    if (REFRESH_METADATA_CODES.has(error.errorName)) this.onMetadataError(q, leaderHint);
    if ((error.retriable || resendInOrder) && Date.now() < batch.deadlineMs && !this.stopped) {
      batch.notBeforeMs = Date.now() + backoffMs(batch.attempts, 20, this.opts.retryBackoffMsMax);
      this.accumulator.requeue(q, batch);
      this.logger.debug(
        {
          topic: batch.topic,
          partition: batch.partition,
          error: error.errorName,
          attempts: batch.attempts,
        },
        "batch will be retried",
      );
      return;
    }
    q.inFlight.delete(batch);
    const ce =
      Date.now() >= batch.deadlineMs
        ? new TimeoutError(
            `batch for ${batch.topic}/${batch.partition} not acknowledged within deliveryTimeoutMs (last error ${error.errorName})`,
            { cause: error },
          )
        : toClientError(error, `produce to ${batch.topic}/${batch.partition}`);
    this.finish(q, batch, ce);
  }

  /** Prefer the leader the broker named; otherwise forget any hint and refresh metadata now. */
  private onMetadataError(q: PartitionQueue, leaderHint: string | undefined): void {
    q.leaderHint = leaderHint;
    this.metadata.invalidate();
    void this.metadata.refresh().then(
      () => this.wake(),
      (e) => this.logger.debug({ err: String(e) }, "metadata refresh failed"),
    );
  }

  /** A batch failed for good. Its sequence numbers leave a gap that the broker will not skip. */
  private finish(q: PartitionQueue, batch: ProducerBatch, error: ClientError): void {
    this.txn.onError(error);
    if (this.opts.idempotent && !this.txn.transactional && batch.baseSequence >= 0) {
      this.identityResetNeeded = true;
      q.retrying = true;
    }
    this.finishErr(batch, error);
    if (this.identityResetNeeded) this.maybeResetIdentity();
  }

  private maybeResetIdentity(): void {
    if (!this.identityResetNeeded || this.accumulator.inFlightCount() > 0) return;
    this.identityResetNeeded = false;
    this.txn.resetIdentity();
    this.accumulator.resetSequences();
    this.logger.warn("a batch failed for good; starting again with a new producer id");
    this.wake();
  }

  /** Unsent batches past their delivery deadline fail (in-flight ones end with their request). */
  private expire(now: number): void {
    for (const q of this.accumulator.queues.values()) {
      while (q.batches.length > 0 && q.batches[0]!.deadlineMs <= now) {
        const b = q.batches.shift()!;
        this.finish(
          q,
          b,
          new TimeoutError(
            `batch for ${b.topic}/${b.partition} expired after deliveryTimeoutMs without being acknowledged`,
          ),
        );
      }
    }
    this.maybeResetIdentity();
  }

  /** Fails every pending batch (fatal error, close, abort of unsent batches). */
  failAll(error: ClientError, options: { inFlightToo?: boolean } = {}): void {
    for (const q of this.accumulator.queues.values()) {
      for (const b of q.batches.splice(0)) this.finishErr(b, error);
      if (options.inFlightToo)
        for (const b of [...q.inFlight]) {
          q.inFlight.delete(b);
          this.finishErr(b, error);
        }
    }
  }

  onBatchDone: (batch: ProducerBatch) => void = () => {};
  /** A batch's counted bytes changed from its records' estimate to its built size. */
  onBatchResized: (fromBytes: number, toBytes: number) => void = () => {};

  private finishOk(batch: ProducerBatch, baseOffset: bigint): void {
    if (batch.done) return;
    batch.complete(baseOffset);
    this.onBatchDone(batch);
  }

  private finishErr(batch: ProducerBatch, error: Error): void {
    if (batch.done) return;
    batch.fail(error);
    this.onBatchDone(batch);
  }
}
