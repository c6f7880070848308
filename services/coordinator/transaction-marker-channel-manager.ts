// Writes the COMMIT/ABORT markers of decided transactions (Kafka's
// TransactionMarkerChannelManager). Markers are queued per partition, batched per broker (at
// most one request in flight per broker), and retried with capped exponential backoff plus
// jitter until every partition acknowledged. Partition results fall in three buckets:
// retriable (retry, re-resolving the leader), fenced (a newer coordinator or producer epoch
// exists: drop the whole transaction, its new coordinator finishes it), fatal (a bug: logged
// loudly, counted, retried at the slowest rate; see docs/transactions.md).
import { Counter, Gauge, type Registry } from "prom-client";
import { assert } from "../../libs/common/assert.js";
import type { Scheduler, TimerHandle } from "../../libs/runtime/scheduler.js";
import { ERRORS, FENCED_CODES, RETRIABLE_CODES, type ErrorName } from "../../libs/common/errors.js";
import { fromGrpcError } from "../../libs/common/grpc-errors.js";
import type { Logger } from "../../libs/common/logger.js";
import type { Random } from "../../libs/common/prng.js";
import type { Failpoints } from "../../libs/common/failpoints.js";
import { partitionKey, type TopicPartitionRef } from "./transaction-metadata.js";

/** One decided transaction whose markers must be written. */
export interface MarkerJob {
  readonly transactionalId: string;
  readonly producerId: bigint;
  readonly producerEpoch: number;
  /** The Raft term of the __transaction_state partition this coordinator leads. */
  readonly coordinatorEpoch: number;
  readonly commit: boolean;
  /** producerEpoch is one above the transaction's data: false only for a V1 end (keptEpoch). */
  readonly epochBumped: boolean;
  readonly partitions: readonly TopicPartitionRef[];
}

export type MarkerOutcome = "done" | "fenced" | "cancelled";

/** tern.v1.WriteTxnMarkersRequest as proto-loader objects (int64 as decimal strings). */
export interface WireTxnMarker {
  producerId: string;
  producerEpoch: number;
  controlType: "COMMIT" | "ABORT";
  coordinatorEpoch: number;
  transactionalId: string;
  epochBumped: boolean;
  partitions: Array<{ topic: string; partition: number }>;
}
export interface WireWriteTxnMarkersResponse {
  results: Array<{
    producerId: string;
    partitions: Array<{
      topicPartition: { topic: string; partition: number } | null;
      errorCode: string | number;
      errorMessage: string;
    }>;
  }>;
}

/** Sends one WriteTxnMarkers request to a broker; rejects on a whole-request failure. */
export type MarkerTransport = (
  address: string,
  markers: WireTxnMarker[],
  timeoutMs: number,
) => Promise<WireWriteTxnMarkersResponse>;

/**
 * Where a partition's leader is, in this node's (possibly stale) view: an address, "no-leader"
 * (retry later) or "no-topic" (absent from the view: maybe deleted, maybe not seen yet).
 */
export type LeaderLookup = (
  tp: TopicPartitionRef,
) => { address: string } | "no-leader" | "no-topic";

/**
 * A definitive answer to "is this partition gone?" (a linearizable read of the controller's
 * metadata): true only when it does not exist. A marker is skipped only on that answer.
 */
export type PartitionGoneCheck = (tp: TopicPartitionRef) => Promise<boolean>;

export interface MarkerChannelOptions {
  readonly transport: MarkerTransport;
  readonly leaderOf: LeaderLookup;
  readonly confirmGone: PartitionGoneCheck;
  readonly logger: Logger;
  readonly random: Random;
  /** Timers of the retry backoffs and flush hops (the process runtime's; a ManualClock in tests). */
  readonly scheduler: Scheduler;
  readonly metrics?: Registry;
  readonly backoffInitialMs?: number;
  readonly backoffMaxMs?: number;
  readonly requestTimeoutMs?: number;
  /** Bound on the partitions of one WriteTxnMarkers request. */
  readonly partitionsPerRequestMax?: number;
  /** Bound on partitions queued or in flight across all transactions. */
  readonly partitionsQueuedMax?: number;
  /** The process's failpoints (ctx.runtime.failpoints); none armed when absent. */
  readonly failpoints?: Failpoints | undefined;
}

export type MarkerBucket = "acked" | "retriable" | "fenced" | "fatal";

export function classifyMarkerError(name: string): MarkerBucket {
  if (name === "NONE") return "acked";
  // Every retriable code, and an unknown error too (the broker may have failed mid-append).
  if (name === "UNKNOWN_SERVER_ERROR" || RETRIABLE_CODES.has(name as ErrorName)) return "retriable";
  if (FENCED_CODES.has(name as ErrorName)) return "fenced";
  return "fatal";
}

interface InFlightTxn {
  readonly job: MarkerJob;
  readonly remaining: Map<string, TopicPartitionRef>;
  readonly attempts: Map<string, number>;
  readonly resolve: (outcome: MarkerOutcome) => void;
  finished: boolean;
  detach: () => void;
}

interface QueuedItem {
  readonly txn: InFlightTxn;
  readonly tp: TopicPartitionRef;
}

export class TransactionMarkerChannelManager {
  private readonly byTxn = new Map<string, InFlightTxn>();
  private readonly queues = new Map<string, QueuedItem[]>();
  private readonly inFlight = new Set<string>();
  private readonly flushScheduled = new Set<string>();
  private readonly timers = new Set<TimerHandle>();
  private readonly scheduler: Scheduler;
  private queuedPartitions = 0;
  private closed = false;
  private readonly backoffInitialMs: number;
  private readonly backoffMaxMs: number;
  private readonly requestTimeoutMs: number;
  private readonly partitionsPerRequestMax: number;
  private readonly partitionsQueuedMax: number;
  private readonly pendingGauge: Gauge | undefined;
  private readonly resultCounter: Counter<"bucket"> | undefined;
  private readonly requestCounter: Counter<"result"> | undefined;

  constructor(private readonly options: MarkerChannelOptions) {
    this.scheduler = options.scheduler;
    this.backoffInitialMs = options.backoffInitialMs ?? 50;
    this.backoffMaxMs = options.backoffMaxMs ?? 2_000;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 5_000;
    this.partitionsPerRequestMax = options.partitionsPerRequestMax ?? 1_000;
    this.partitionsQueuedMax = options.partitionsQueuedMax ?? 200_000;
    assert(
      this.backoffInitialMs > 0 && this.backoffMaxMs >= this.backoffInitialMs,
      "marker backoff bounds",
    );
    const registers = options.metrics ? [options.metrics] : [];
    if (options.metrics) {
      this.pendingGauge = new Gauge({
        name: "tern_txn_markers_pending_partitions",
        help: "Transaction partitions whose marker is not yet acknowledged.",
        registers,
      });
      this.resultCounter = new Counter({
        name: "tern_txn_marker_partition_results_total",
        help: "Marker results per partition by bucket.",
        labelNames: ["bucket"],
        registers,
      });
      this.requestCounter = new Counter({
        name: "tern_txn_marker_requests_total",
        help: "WriteTxnMarkers requests sent, by result.",
        labelNames: ["result"],
        registers,
      });
    }
  }

  /**
   * Writes the markers of one transaction; resolves "done" when every partition acknowledged,
   * "fenced" when a broker says a newer coordinator or producer epoch exists, "cancelled" when
   * signal aborts (leadership lost) or the manager closes. Never rejects.
   */
  send(job: MarkerJob, signal: AbortSignal): Promise<MarkerOutcome> {
    const key = txnKey(job.transactionalId);
    assert(!this.byTxn.has(key), () => `markers of ${job.transactionalId} already in flight`);
    if (this.closed || signal.aborted) return Promise.resolve("cancelled");
    if (this.queuedPartitions + job.partitions.length > this.partitionsQueuedMax) {
      // Over the bound: the caller keeps the transaction in Prepare and resumes it later.
      this.options.logger.warn(
        { transactionalId: job.transactionalId, queued: this.queuedPartitions },
        "marker queue full",
      );
      return Promise.resolve("cancelled");
    }
    return new Promise<MarkerOutcome>((resolve) => {
      const txn: InFlightTxn = {
        job,
        remaining: new Map(),
        attempts: new Map(),
        resolve,
        finished: false,
        detach: () => undefined,
      };
      for (const tp of job.partitions) txn.remaining.set(partitionKey(tp), tp);
      this.byTxn.set(key, txn);
      this.queuedPartitions += txn.remaining.size;
      this.pendingGauge?.set(this.queuedPartitions);
      const onAbort = (): void => this.finish(txn, "cancelled");
      signal.addEventListener("abort", onAbort, { once: true });
      txn.detach = () => signal.removeEventListener("abort", onAbort);
      if (txn.remaining.size === 0) this.finish(txn, "done");
      for (const tp of txn.remaining.values()) this.route(txn, tp);
    });
  }

  /** Partitions of a transaction whose marker is not yet acknowledged here (undefined: not in flight). */
  pendingPartitions(transactionalId: string): TopicPartitionRef[] | undefined {
    const txn = this.byTxn.get(txnKey(transactionalId));
    return txn === undefined ? undefined : [...txn.remaining.values()];
  }

  close(): void {
    this.closed = true;
    for (const timer of this.timers) this.scheduler.clearTimeout(timer);
    this.timers.clear();
    for (const txn of [...this.byTxn.values()]) this.finish(txn, "cancelled");
  }

  private finish(txn: InFlightTxn, outcome: MarkerOutcome): void {
    if (txn.finished) return;
    txn.finished = true;
    this.queuedPartitions -= txn.remaining.size;
    this.pendingGauge?.set(this.queuedPartitions);
    this.byTxn.delete(txnKey(txn.job.transactionalId));
    txn.detach();
    txn.resolve(outcome);
  }

  private route(txn: InFlightTxn, tp: TopicPartitionRef): void {
    if (txn.finished || this.closed) return;
    const leader = this.options.leaderOf(tp);
    if (leader === "no-topic") {
      // A stale view (a new leader fed by a lagging controller) lacks topics that exist: skipping
      // their marker would leave the transaction open there for ever. Ask the controller first.
      void this.skipIfGone(txn, tp);
      return;
    }
    if (leader === "no-leader") {
      this.retryLater(txn, tp);
      return;
    }
    let queue = this.queues.get(leader.address);
    if (queue === undefined) this.queues.set(leader.address, (queue = []));
    queue.push({ txn, tp });
    this.scheduleFlush(leader.address);
  }

  /** Acknowledges a partition without a marker only when the controller confirms it is gone; else retries. */
  private async skipIfGone(txn: InFlightTxn, tp: TopicPartitionRef): Promise<void> {
    let gone = false;
    try {
      gone = await this.options.confirmGone(tp);
    } catch (e) {
      this.options.logger.info(
        { transactionalId: txn.job.transactionalId, tp, err: e },
        "could not confirm that a transaction partition is gone; retrying",
      );
    }
    if (txn.finished || this.closed) return;
    if (!gone) {
      this.retryLater(txn, tp);
      return;
    }
    this.options.logger.warn(
      { transactionalId: txn.job.transactionalId, tp },
      "topic of a transaction partition is gone (confirmed by the controller): no marker needed",
    );
    this.ack(txn, tp);
  }

  /** Flushes on the next turn so that partitions routed in this turn share one request. */
  private scheduleFlush(address: string): void {
    if (this.flushScheduled.has(address)) return;
    this.flushScheduled.add(address);
    this.scheduler.setImmediate(() => {
      this.flushScheduled.delete(address);
      this.flush(address);
    });
  }

  private ack(txn: InFlightTxn, tp: TopicPartitionRef): void {
    if (!txn.remaining.delete(partitionKey(tp))) return;
    this.queuedPartitions--;
    this.pendingGauge?.set(this.queuedPartitions);
    this.options.failpoints?.crash("coordinator.after-k-markers");
    if (txn.remaining.size === 0) this.finish(txn, "done");
  }

  private retryLater(txn: InFlightTxn, tp: TopicPartitionRef, slowest = false): void {
    if (txn.finished || this.closed) return;
    const key = partitionKey(tp);
    const attempt = (txn.attempts.get(key) ?? 0) + 1;
    txn.attempts.set(key, attempt);
    const capMs = slowest
      ? this.backoffMaxMs
      : Math.min(this.backoffMaxMs, this.backoffInitialMs * 2 ** Math.min(attempt - 1, 20));
    const delayMs = Math.round(capMs * (0.8 + 0.4 * this.options.random.next()));
    const timer = this.scheduler.setTimeout(() => {
      this.timers.delete(timer);
      this.route(txn, tp);
    }, delayMs);
    this.timers.add(timer);
  }

  private flush(address: string): void {
    if (this.inFlight.has(address) || this.closed) return;
    const queue = this.queues.get(address);
    if (queue === undefined) return;
    const batch: QueuedItem[] = [];
    while (queue.length > 0 && batch.length < this.partitionsPerRequestMax) {
      const item = queue.shift()!;
      if (!item.txn.finished && item.txn.remaining.has(partitionKey(item.tp))) batch.push(item);
    }
    if (queue.length === 0) this.queues.delete(address);
    if (batch.length === 0) return;
    this.inFlight.add(address);
    const markers = groupMarkers(batch);
    this.options
      .transport(
        address,
        markers.map((m) => m.wire),
        this.requestTimeoutMs,
      )
      .then(
        (response) => {
          this.requestCounter?.inc({ result: "ok" });
          this.onResponse(markers, response);
        },
        (e: unknown) => {
          const error = fromGrpcError(e);
          this.requestCounter?.inc({ result: error.errorName });
          this.options.logger.info(
            { address, error: error.errorName, message: error.message },
            "WriteTxnMarkers failed; retrying",
          );
          for (const item of batch)
            this.onPartitionResult(item, "NETWORK_EXCEPTION", error.message);
        },
      )
      .finally(() => {
        this.inFlight.delete(address);
        this.flush(address);
      });
  }

  private onResponse(markers: GroupedMarker[], response: WireWriteTxnMarkersResponse): void {
    markers.forEach((marker, i) => {
      const result = response.results?.[i];
      const byKey = new Map<string, { code: string; message: string }>();
      for (const r of result?.partitions ?? []) {
        if (r.topicPartition)
          byKey.set(partitionKey(r.topicPartition), {
            code: errorName(r.errorCode),
            message: r.errorMessage,
          });
      }
      for (const item of marker.items) {
        const r = byKey.get(partitionKey(item.tp));
        // A partition missing from the answer was not written: retry it.
        this.onPartitionResult(
          item,
          r?.code ?? "NETWORK_EXCEPTION",
          r?.message ?? "missing from the response",
        );
      }
    });
  }

  private onPartitionResult(item: QueuedItem, code: string, message: string): void {
    const { txn, tp } = item;
    if (txn.finished) return;
    const bucket = classifyMarkerError(code);
    this.resultCounter?.inc({ bucket });
    switch (bucket) {
      case "acked":
        this.ack(txn, tp);
        return;
      case "retriable":
        this.retryLater(txn, tp);
        return;
      case "fenced":
        this.options.logger.warn(
          { transactionalId: txn.job.transactionalId, tp, code, message },
          "marker fenced: a newer coordinator owns this transaction",
        );
        this.finish(txn, "fenced");
        return;
      case "fatal":
        this.options.logger.error(
          { transactionalId: txn.job.transactionalId, tp, code, message },
          "marker refused with a non-retriable error (bug)",
        );
        this.retryLater(txn, tp, true);
        return;
    }
  }
}

interface GroupedMarker {
  readonly wire: WireTxnMarker;
  readonly items: QueuedItem[];
}

/** One TxnMarker per transaction in the batch. */
function groupMarkers(batch: QueuedItem[]): GroupedMarker[] {
  const byTxn = new Map<InFlightTxn, QueuedItem[]>();
  for (const item of batch) {
    const list = byTxn.get(item.txn);
    if (list) list.push(item);
    else byTxn.set(item.txn, [item]);
  }
  return [...byTxn.entries()].map(([txn, items]) => ({
    items,
    wire: {
      producerId: txn.job.producerId.toString(),
      producerEpoch: txn.job.producerEpoch,
      controlType: txn.job.commit ? "COMMIT" : "ABORT",
      coordinatorEpoch: txn.job.coordinatorEpoch,
      transactionalId: txn.job.transactionalId,
      epochBumped: txn.job.epochBumped,
      partitions: items.map((i) => ({ topic: i.tp.topic, partition: i.tp.partition })),
    },
  }));
}

function txnKey(transactionalId: string): string {
  return transactionalId;
}

function errorName(code: string | number): string {
  if (typeof code === "string" && !/^-?\d+$/.test(code)) return code;
  const n = Number(code);
  return NUMERIC_NAMES.get(n) ?? "UNKNOWN_SERVER_ERROR";
}

const NUMERIC_NAMES = new Map<number, string>([...ERRORS.values()].map((s) => [s.code, s.name]));
