// Produce, in the partition service: each partition's batch is checked, transactional first
// appends are verified with the coordinator, one Raft entry per batch is proposed and the
// outcome mapped to the offsets apply() assigned. Every batch is stored as a Kafka record batch
// v2 (partition-entry.ts, kind "kafka-batch"): as its producer built it when it did (a Kafka
// client's, a gRPC kafka_batch), else built here once, at propose (batch-to-store.ts). The
// adapters (the gRPC Produce handler, the Kafka listener's Produce) hand batches in decoded,
// or a decoding to run at the producer's turn; nothing here knows either protocol.
// acks=all and acks=1 both wait for commit + apply on the leader: offsets are only known at
// apply, and apply only sees committed entries (docs/broker.md).
//
// Ordering (idempotent producers keep up to 5 batches in flight per partition): batches of
// one (partition, producer) leave here for Raft in the order they arrived. The common path has
// no await between arrival and propose(); a batch that needs the coordinator round trip (first
// transactional append) or decoding off the event loop opens a per-(partition, producer) FIFO
// and every later batch of that producer on that partition queues behind it until the FIFO
// drains. The sequence check at apply (producer-state.ts) stays the authority.
import type { Clock } from "../../../libs/runtime/clock.js";
import { TernError, isTernError, type ErrorName } from "../../../libs/common/errors.js";
import type { Failpoints } from "../../../libs/common/failpoints.js";
import type { Logger } from "../../../libs/common/logger.js";
import { BROKER_LIMITS } from "../broker-limits.js";
import type { LocalPartition, PartitionDirectory } from "../local-partition.js";
import {
  encodeEntry,
  kafkaBatchEntry,
  recordSizeBytes,
  type RecordData,
} from "../partition-entry.js";
import type { AppendResult } from "../partition-state-machine.js";
import { txnGuardOf } from "../producer-state.js";
import type { TxnVerifier } from "../txn-verifier.js";
import type { BrokerMetrics } from "../broker-metrics.js";
import { proposalHoldsIfListed, proposeWhenOpen, type ProposalHolds } from "../proposal-holds.js";
import type { CompressedSection } from "../../kafka/record-batch.js";
import { batchToStore } from "./batch-to-store.js";
import { proposeFailure, type Endpoint, type Refusal } from "./outcome.js";

export interface ProduceDeps {
  readonly metrics?: BrokerMetrics | undefined;
  readonly directory: PartitionDirectory;
  readonly verifier: TxnVerifier;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Refuses produce while the data directory is below its free-space reserve. */
  readonly disk?: { refusal(): string | undefined } | undefined;
  /** The process's failpoints (ctx.runtime.failpoints); none armed when absent. */
  readonly failpoints?: Failpoints | undefined;
}

/** A batch to append, decoded: its producer fields and records (checked here), and how it is stored. */
export interface AppendBatch {
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly baseSequence: number;
  readonly isTransactional: boolean;
  readonly isControl: boolean;
  readonly records: readonly RecordData[];
  /** The v2 batch as its producer built it: stored as sent when within the partition's bound. */
  readonly asSent?: Uint8Array | undefined;
  /** The records section as it came compressed, stored so when records are built here. */
  readonly compressed?: CompressedSection | undefined;
  /**
   * Set for a v2 batch whose records were walked, not decoded (records is then empty; asSent
   * holds them, uncompressed): their count and what the checks here read.
   */
  readonly walked?: WalkedRecords | undefined;
}

/** An uncompressed v2 batch's records as walked (record-batch.ts): sizes as recordSizeBytes counts them. */
export interface WalkedRecords {
  readonly count: number;
  readonly minTimestampMs: number;
  readonly maxTimestampMs: number;
  readonly keylessRecords: number;
  readonly totalRecordBytes: number;
}

/** How many records a batch holds, decoded or walked. */
function recordCountOf(b: AppendBatch): number {
  return b.walked?.count ?? b.records.length;
}

/**
 * A batch as an adapter hands it in: decoded already, decoded off the event loop at its
 * producer's turn (the producer id read from its header), or refused while decoding (answered
 * after the partition's own checks, so a batch to a partition led elsewhere is sent there).
 */
export type ArrivingBatch =
  | { readonly kind: "ready"; readonly batch: AppendBatch }
  | {
      readonly kind: "pending";
      readonly producerId: bigint;
      decode(): Promise<AppendBatch | Refusal>;
    }
  | ({ readonly kind: "refused" } & Refusal);

/** One Produce: the batches of one producer request, one per partition. */
export interface ProduceCommand {
  /** The request's transactional id ("" for none). */
  readonly transactionalId: string;
  /** First transactional appends add the partition to the transaction (V2), or verify it was (V1). */
  readonly addPartitions: boolean;
  /** -1, 0 or 1: all wait for commit and apply (docs/broker.md, "acks"). */
  readonly acks: number;
  /** 0 or less: the default; clamped to BROKER_LIMITS.produceTimeoutMsMax. */
  readonly timeoutMs: number;
  readonly partitions: ReadonlyArray<{
    readonly topic: string;
    readonly partition: number;
    readonly batch: ArrivingBatch;
  }>;
}

/** One partition's answer: the offsets apply() assigned, or why not. */
export interface ProduceOutcome {
  readonly topic: string;
  readonly partition: number;
  readonly error: ErrorName;
  readonly message: string;
  readonly baseOffset: bigint;
  readonly appendTimeMs: number;
  readonly logStartOffset: bigint;
  readonly leader?: Endpoint;
}

type PartitionOutcome = Omit<ProduceOutcome, "topic" | "partition">;

function failed(error: ErrorName, message: string, leader?: Endpoint): PartitionOutcome {
  return {
    error,
    message,
    baseOffset: -1n,
    appendTimeMs: -1,
    logStartOffset: -1n,
    ...(leader ? { leader } : {}),
  };
}

function failedWith(r: Refusal): PartitionOutcome {
  return failed(r.error, r.message, r.leader);
}

interface ParsedBatch extends AppendBatch {
  /** Stored as sent (within the partition's bound), else built from the records at propose. */
  readonly asSent: Uint8Array | undefined;
  /** Transactional batches: the guard taken when the leader decided to admit it (admitTransactional). */
  txnGuard?: number | undefined;
}

/** Validation that needs no partition state. Returns the parsed batch or a refusal. */
export function validateBatch(
  batch: AppendBatch,
  transactionalId: string,
  nowMs: number,
  maxMessageBytes: number,
  compacted = false,
): ParsedBatch | PartitionOutcome {
  const count = recordCountOf(batch);
  if (count === 0) return failed("INVALID_RECORD", "empty batch");
  if (count > BROKER_LIMITS.recordsPerBatchMax)
    return failed(
      "RECORD_LIST_TOO_LARGE",
      `${count} records in one batch (max ${BROKER_LIMITS.recordsPerBatchMax})`,
    );
  if (batch.isControl) return failed("INVALID_RECORD", "clients may not write control batches");
  const { producerId, producerEpoch, baseSequence, isTransactional } = batch;
  // Only a negative producer_id means a plain producer: 0 is a real id (the controller hands
  // out ids from 0), so a client that leaves producer_id unset is treated as producer 0.
  const idempotent = producerId >= 0n;
  if (idempotent && (producerEpoch < 0 || producerEpoch > 32767))
    return failed("INVALID_RECORD", `producer_epoch ${producerEpoch} is outside 0..32767`);
  if (idempotent && baseSequence < 0)
    return failed("INVALID_RECORD", `base_sequence ${baseSequence} is negative`);
  if (isTransactional && !idempotent)
    return failed("INVALID_RECORD", "a transactional batch needs a producer id");
  if (isTransactional && transactionalId.length === 0)
    return failed("INVALID_REQUEST", "a transactional batch needs the request's transactional_id");
  // Kafka's rule: no bound of its own on a record, and max.message.bytes bounds the batch as
  // sent (compressed, when it is). What a compressed batch inflates to was bounded while it was
  // decoded (INFLATED_BYTES_MAX); simple-form records are the batch as sent.
  const walked = batch.walked;
  let recordBytes = 0;
  if (walked !== undefined) {
    // The same checks over what the walk saw (keys, the extreme timestamps).
    if (compacted && walked.keylessRecords > 0) return keylessRefusal();
    recordBytes = walked.totalRecordBytes;
    const refusal =
      timestampRefusal(walked.minTimestampMs, nowMs) ??
      timestampRefusal(walked.maxTimestampMs, nowMs);
    if (refusal !== undefined) return refusal;
  }
  for (const r of batch.records) {
    if (compacted && r.key === null) return keylessRefusal();
    recordBytes += recordSizeBytes(r);
    const refusal = timestampRefusal(r.timestampMs, nowMs);
    if (refusal !== undefined) return refusal;
  }
  const bytesMax = Math.min(maxMessageBytes, BROKER_LIMITS.batchBytesMax);
  const sentBytes = batch.asSent !== undefined ? batch.asSent.byteLength : recordBytes;
  if (sentBytes > bytesMax)
    return failed("MESSAGE_TOO_LARGE", `batch of ${sentBytes} bytes exceeds ${bytesMax}`);
  const asSent =
    batch.asSent !== undefined && batch.asSent.byteLength > 0 ? batch.asSent : undefined;
  return { ...batch, asSent };
}

/** Kafka's refusal of a record without a key on a compacted topic: the cleaner could never drop it. */
function keylessRefusal(): PartitionOutcome {
  return failed("INVALID_RECORD", "a compacted topic takes records with keys only");
}

/** INVALID_TIMESTAMP for a record timestamp that is negative or too far in the future. */
function timestampRefusal(timestampMs: number, nowMs: number): PartitionOutcome | undefined {
  if (!Number.isSafeInteger(timestampMs) || timestampMs < 0)
    return failed("INVALID_TIMESTAMP", `record timestamp ${timestampMs} is negative`);
  if (timestampMs > nowMs + BROKER_LIMITS.timestampFutureMsMax)
    return failed(
      "INVALID_TIMESTAMP",
      `record timestamp ${timestampMs} is more than ${BROKER_LIMITS.timestampFutureMsMax} ms in the future`,
    );
  return undefined;
}

/** Batches that may wait in one (partition, producer) FIFO; the client keeps at most 5 in flight. */
export const ORDERED_WAITERS_MAX = 64;
/** Distinct (partition, producer) FIFOs open at once on this broker. */
export const ORDERED_QUEUES_MAX = 10_000;

interface OrderedQueue {
  /** Settles when the last queued batch has been proposed (or refused). */
  tail: Promise<void>;
  waiting: number;
}

/** Per-(partition, producer) FIFOs of batches waiting to be proposed (see the header). */
export class ProposalOrder {
  private readonly queues = new Map<string, OrderedQueue>();

  get size(): number {
    return this.queues.size;
  }

  has(key: string): boolean {
    return this.queues.has(key);
  }

  /**
   * Runs `turn` after every earlier turn of `key` has finished (proposed or refused). `turn`
   * must propose synchronously before its returned promise settles; the caller awaits the
   * outcome. Refuses (null) when the queue or the map is at its bound.
   */
  enqueue<T>(key: string, turn: () => Promise<{ proposed: Promise<T> } | T>): Promise<T> | null {
    let q = this.queues.get(key);
    if (q === undefined && this.queues.size >= ORDERED_QUEUES_MAX) return null;
    if (q !== undefined && q.waiting >= ORDERED_WAITERS_MAX) return null;
    if (q === undefined) {
      q = { tail: Promise.resolve(), waiting: 0 };
      this.queues.set(key, q);
    }
    const queue = q;
    queue.waiting += 1;
    const step = queue.tail.then(turn);
    queue.tail = step
      .then(
        () => undefined,
        () => undefined,
      )
      .then(() => {
        queue.waiting -= 1;
        if (queue.waiting === 0 && this.queues.get(key) === queue) this.queues.delete(key);
      });
    return step.then((r) => (isProposed<T>(r) ? r.proposed : r));
  }
}

function isProposed<T>(r: { proposed: Promise<T> } | T): r is { proposed: Promise<T> } {
  return typeof r === "object" && r !== null && "proposed" in r;
}

/** The produce path of the partition service: one per broker, shared by both adapters. */
export class PartitionProduce {
  private readonly order = new ProposalOrder();
  /** The chaos hold failpoint's gates (proposal-holds.ts), when the process lists it. */
  private readonly holds: ProposalHolds | undefined;

  constructor(private readonly deps: ProduceDeps) {
    this.holds = proposalHoldsIfListed(deps.failpoints);
  }

  /** One answer per partition, in the command's order; throws INVALID_REQUEST for too many partitions. */
  async produce(command: ProduceCommand): Promise<ProduceOutcome[]> {
    const { deps } = this;
    const partitions = command.partitions;
    if (partitions.length > BROKER_LIMITS.partitionsPerRequestMax) {
      throw new TernError(
        "INVALID_REQUEST",
        `${partitions.length} partitions in one request (max ${BROKER_LIMITS.partitionsPerRequestMax})`,
      );
    }
    const acks = command.acks;
    const timeoutMs = Math.min(
      command.timeoutMs > 0 ? command.timeoutMs : BROKER_LIMITS.produceTimeoutMsDefault,
      BROKER_LIMITS.produceTimeoutMsMax,
    );
    const txn: ProduceTxn = {
      transactionalId: command.transactionalId,
      addPartitions: command.addPartitions,
    };
    const seen = new Set<string>();
    return Promise.all(
      partitions.map(async ({ topic, partition, batch }): Promise<ProduceOutcome> => {
        const key = `${topic}/${partition}`;
        let outcome: PartitionOutcome;
        if (acks !== -1 && acks !== 0 && acks !== 1)
          outcome = failed("INVALID_REQUIRED_ACKS", `acks ${acks} is not -1, 0 or 1`);
        else if (seen.has(key))
          outcome = failed("INVALID_REQUEST", `partition ${key} appears twice in the request`);
        else {
          seen.add(key);
          outcome = await this.producePartition(topic, partition, batch, txn, timeoutMs);
        }
        if (outcome.error !== "NONE") deps.metrics?.produceErrors.inc({ code: outcome.error });
        return { topic, partition, ...outcome };
      }),
    );
  }

  private async producePartition(
    topic: string,
    partition: number,
    arriving: ArrivingBatch,
    txn: ProduceTxn,
    timeoutMs: number,
  ): Promise<PartitionOutcome> {
    const { deps, order } = this;
    const known = deps.directory.lookup(topic, partition);
    if (known === "unknown")
      return failed("UNKNOWN_TOPIC_OR_PARTITION", `unknown topic-partition ${topic}/${partition}`);
    if (known === "internal")
      return failed(
        "INVALID_TOPIC_EXCEPTION",
        `${topic} is an internal topic; clients may not produce to it`,
      );
    const local = deps.directory.local(topic, partition);
    if (local === undefined) {
      return failed(
        "NOT_LEADER_OR_FOLLOWER",
        `this broker has no replica of ${topic}/${partition}`,
        deps.directory.endpoint(deps.directory.metadataLeader(topic, partition)),
      );
    }
    if (!local.group.isLeader()) return notLeader(deps, local);
    const diskFull = deps.disk?.refusal();
    if (diskFull !== undefined) return failed("KAFKA_STORAGE_ERROR", diskFull);
    const ctx: Turn = { deps, order, holds: this.holds, local, txn, timeoutMs };
    if (arriving.kind === "refused") return failedWith(arriving);
    if (arriving.kind === "pending") {
      const decode = async (): Promise<ParsedBatch | PartitionOutcome> => {
        const batch = await arriving.decode();
        return "error" in batch ? failedWith(batch) : validateIn(ctx, batch);
      };
      return produceAtTurn(ctx, arriving.producerId, decode);
    }
    const parsed = validateIn(ctx, arriving.batch);
    if ("error" in parsed) return parsed;
    return produceParsed(ctx, parsed);
  }
}

/** A transaction's id, and whether first appends add the partition (V2) or verify it. */
interface ProduceTxn {
  readonly transactionalId: string;
  readonly addPartitions: boolean;
}

/** What one partition's batch is produced with. */
interface Turn {
  readonly deps: ProduceDeps;
  readonly order: ProposalOrder;
  readonly holds: ProposalHolds | undefined;
  readonly local: LocalPartition;
  readonly txn: ProduceTxn;
  readonly timeoutMs: number;
}

function validateIn(ctx: Turn, batch: AppendBatch): ParsedBatch | PartitionOutcome {
  return validateBatch(
    batch,
    ctx.txn.transactionalId,
    ctx.deps.clock.nowMs(),
    ctx.local.maxMessageBytes(),
    ctx.local.compaction().compact,
  );
}

/** A checked batch, proposed now in arrival order, or queued behind its producer's earlier ones. */
function produceParsed(ctx: Turn, parsed: ParsedBatch): Promise<PartitionOutcome> {
  const { local } = ctx;
  const key = orderKey(local.topic, local.partition, parsed.producerId);
  const mustWait =
    parsed.producerId >= 0n &&
    (ctx.order.has(key) || (parsed.isTransactional && needsVerification(local, parsed)));
  // Common path: propose now, in arrival order, with no await in between (a transactional
  // batch here joins the transaction open at its epoch: its guard needs no round trip).
  if (!mustWait) {
    if (parsed.isTransactional)
      parsed.txnGuard = txnGuardOf(local.stateMachine.producer(parsed.producerId));
    return settle(ctx, parsed, proposeHeld(ctx, parsed));
  }
  return produceAtTurn(ctx, parsed.producerId, () => Promise.resolve(parsed));
}

/**
 * A batch proposed at its producer's turn, in arrival order (decoded off the event loop, or
 * waiting on the coordinator): the turn is taken now, before the first await.
 */
function produceAtTurn(
  ctx: Turn,
  producerId: bigint,
  decode: () => Promise<ParsedBatch | PartitionOutcome>,
): Promise<PartitionOutcome> {
  const { local } = ctx;
  const queued = ctx.order.enqueue(orderKey(local.topic, local.partition, producerId), async () => {
    const parsed = await decode();
    if ("error" in parsed) return parsed;
    const refused = await admitTransactional(ctx, parsed);
    if (refused !== null) return refused;
    return { proposed: settle(ctx, parsed, proposeHeld(ctx, parsed)) };
  });
  if (queued === null)
    return Promise.resolve(
      failed(
        "THROTTLING_QUOTA_EXCEEDED",
        `too many batches of producer ${producerId} waiting on ${local.topic}/${local.partition}`,
      ),
    );
  return queued;
}

/** proposeNow, unless the chaos hold failpoint holds this (partition, producer): proposal-holds.ts. */
function proposeHeld(ctx: Turn, parsed: ParsedBatch): Promise<Proposed> {
  if (ctx.holds === undefined) return proposeNow(ctx, parsed);
  const { local } = ctx;
  const key = orderKey(local.topic, local.partition, parsed.producerId);
  const gate = ctx.holds.gate(key, parsed.isTransactional && !ctx.txn.addPartitions);
  return proposeWhenOpen(
    ctx.deps.logger,
    local,
    { ...parsed, recordCount: recordCountOf(parsed) },
    gate,
    () => proposeNow(ctx, parsed),
  );
}

function orderKey(topic: string, partition: number, producerId: bigint): string {
  return `${topic}\u0000${partition}\u0000${producerId}`;
}

type Proposed = { result: AppendResult; bytes: number } | PartitionOutcome;

/** Checks that need no round trip, then proposes synchronously (the Raft index is taken now). */
function proposeNow(ctx: Turn, parsed: ParsedBatch): Promise<Proposed> {
  const { deps, local } = ctx;
  // Fail fast on a stale epoch; sequence checks wait for apply (pipelined batches are in flight).
  const producerState = local.stateMachine.producer(parsed.producerId);
  if (
    parsed.producerId >= 0n &&
    producerState !== undefined &&
    parsed.producerEpoch < producerState.producerEpoch
  ) {
    return Promise.resolve(
      failed(
        "INVALID_PRODUCER_EPOCH",
        `producer ${parsed.producerId} epoch ${parsed.producerEpoch} is older than ${producerState.producerEpoch}`,
      ),
    );
  }
  const header = local.entryHeader(deps.clock.nowMs());
  // Every batch is stored as a v2 batch: as its producer built it, or built here, once.
  let data: Uint8Array;
  try {
    const batch = parsed.asSent ?? batchToStore(parsed, header.appendTimeMs);
    data = encodeEntry(kafkaBatchEntry(header, batch, parsed.txnGuard));
  } catch (e) {
    // The batch's own header refused (kafkaBatchEntry): this partition's answer, not the request's.
    if (isTernError(e)) return Promise.resolve(failed(e.errorName, e.message));
    throw e;
  }
  return local.group.propose<AppendResult>(data, { timeoutMs: ctx.timeoutMs }).then(
    ({ result }) => ({ result, bytes: data.length }),
    (e: unknown) => failedWith(proposeFailure(deps, local, e)),
  );
}

async function settle(
  ctx: Turn,
  parsed: ParsedBatch,
  proposed: Promise<Proposed>,
): Promise<PartitionOutcome> {
  const { deps, local } = ctx;
  const outcome = await proposed;
  if ("error" in outcome) return outcome;
  const { result, bytes } = outcome;
  if (result.error !== "NONE") return failed(result.error, result.message);
  if (parsed.isTransactional) deps.failpoints?.crash("broker.after-txn-append-before-response");
  if (!result.duplicate && deps.metrics) {
    deps.metrics.producedRecords.inc({ topic: local.topic }, recordCountOf(parsed));
    deps.metrics.producedBytes.inc({ topic: local.topic }, bytes);
  }
  return {
    error: "NONE",
    message: "",
    baseOffset: result.baseOffset,
    appendTimeMs: result.appendTimeMs,
    logStartOffset: result.logStartOffset,
  };
}

/** A transactional batch needs the coordinator unless this (pid, epoch) already has a transaction open here. */
function needsVerification(local: LocalPartition, batch: ParsedBatch): boolean {
  const producer = local.stateMachine.producer(batch.producerId);
  return !(producer?.openTransaction && producer.producerEpoch === batch.producerEpoch);
}

/**
 * Admits a transactional batch (KIP-890 part 1, replicated): takes the guard that apply checks
 * (producer-state.ts checkTxnGuard), then asks the coordinator unless the producer's transaction
 * is open here at this epoch. The guard comes first, so a marker that lands while the question
 * is out, or after the answer, makes apply refuse the batch.
 */
async function admitTransactional(
  ctx: Turn,
  parsed: ParsedBatch,
): Promise<PartitionOutcome | null> {
  if (!parsed.isTransactional) return null;
  parsed.txnGuard = txnGuardOf(ctx.local.stateMachine.producer(parsed.producerId));
  if (!needsVerification(ctx.local, parsed)) return null;
  return verifyFirstAppend(ctx, parsed);
}

/** KIP-890: before the first transactional append of (pid, epoch) here, ask the coordinator (part 2: to add the partition). */
async function verifyFirstAppend(ctx: Turn, batch: ParsedBatch): Promise<PartitionOutcome | null> {
  const { local, txn } = ctx;
  const verdict = await ctx.deps.verifier.verify(
    txn.transactionalId,
    batch.producerId,
    batch.producerEpoch,
    local.topic,
    local.partition,
    txn.addPartitions ? "add" : "verify",
  );
  if (verdict.error === "NONE") return null;
  return failed(verdict.error, verdict.message);
}

function notLeader(
  deps: { directory: PartitionDirectory },
  local: LocalPartition,
): PartitionOutcome {
  const leader = local.group.leader();
  return failed(
    "NOT_LEADER_OR_FOLLOWER",
    `not the leader of ${local.topic}/${local.partition} (leader ${leader})`,
    deps.directory.endpoint(leader),
  );
}
