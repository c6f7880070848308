// Produce: validate each partition's batch, verify transactional first appends with the
// coordinator, propose one Raft entry per batch and answer with the offsets apply() assigned.
// Every batch is stored as a Kafka record batch v2 (partition-entry.ts, kind "kafka-batch"):
// RecordBatch.kafka_batch as its producer built it, checked as the Kafka listener checks a
// Kafka producer's; the simple form (records, compressed_records) built into one at propose.
// acks=all and acks=1 both wait for commit + apply on the leader: offsets are only known at
// apply, and apply only sees committed entries (docs/broker.md).
//
// Ordering (idempotent producers keep up to 5 batches in flight per partition): batches of
// one (partition, producer) leave this handler for Raft in the order their requests arrived.
// The common path has no await between arrival and propose(); a batch that needs the
// coordinator round trip (first transactional append) opens a per-(partition, producer) FIFO
// and every later batch of that producer on that partition queues behind it until the FIFO
// drains. The sequence check at apply (producer-state.ts) stays the authority.
import type { Clock } from "../../libs/runtime/clock.js";
import {
  inflateRecords,
  simpleBatchBytes,
  wireCompression,
  type SimpleBatch,
} from "./simple-batch.js";
import type { CompressionCodec } from "../../libs/records/compression.js";
import {
  BatchRefusal,
  decodeOnlyBatch,
  decodeOnlyPlainBatch,
  inflationBound,
  type DecodedBatch,
} from "../kafka/record-batch.js";
import { InflationBudget } from "../kafka/inflation-budget.js";
import { ProposalHolds, proposeWhenOpen } from "./proposal-holds.js";
import { AT_PRODUCER_ID } from "../../libs/records/batch-header.js";
import { TernError, isTernError, type ErrorName } from "../../libs/common/errors.js";
import { failpoint } from "../../libs/common/failpoints.js";
import type { Logger } from "../../libs/common/logger.js";
import { BROKER_LIMITS } from "./broker-limits.js";
import type { LocalPartition, PartitionDirectory } from "./local-partition.js";
import {
  encodeEntry,
  kafkaBatchEntry,
  recordSizeBytes,
  type RecordData,
} from "./partition-entry.js";
import type { AppendResult } from "./partition-state-machine.js";
import { txnGuardOf } from "./producer-state.js";
import type { TxnVerifier } from "./txn-verifier.js";
import type { BrokerMetrics } from "./broker-metrics.js";
import { errorFields, int32, int64, recordFromWire, type WireEndpoint } from "./wire.js";
import type {
  ProducePartitionData__Output,
  ProduceRequest__Output,
  ProduceResponse__Output,
  RecordBatch__Output,
} from "../../libs/common/proto-types/index.js";

export interface ProduceDeps {
  readonly metrics?: BrokerMetrics;
  readonly directory: PartitionDirectory;
  readonly verifier: TxnVerifier;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Refuses produce while the data directory is below its free-space reserve. */
  readonly disk?: { refusal(): string | undefined };
  /** Bytes gRPC producers' compressed kafka_batch records may inflate to at once (default: one budget of KAFKA_BATCH_INFLATION_BYTES_MAX per handler). */
  readonly inflation?: InflationBudget;
  /** The chaos hold failpoint's gates (proposal-holds.ts); createProduceHandler sets it. */
  readonly holds?: ProposalHolds;
}

/** The broker's bound on inflated gRPC kafka_batch records held at once (as the Kafka listener's default). */
export const KAFKA_BATCH_INFLATION_BYTES_MAX = 256 * 1024 * 1024;

interface PartitionOutcome {
  error: ErrorName;
  message: string;
  baseOffset: bigint;
  appendTimeMs: number;
  logStartOffset: bigint;
  leader?: WireEndpoint;
}

function failed(error: ErrorName, message: string, leader?: WireEndpoint): PartitionOutcome {
  return {
    error,
    message,
    baseOffset: -1n,
    appendTimeMs: -1,
    logStartOffset: -1n,
    ...(leader ? { leader } : {}),
  };
}

interface ParsedBatch extends SimpleBatch {
  records: RecordData[];
  /** A batch built by its producer, to store as sent (the records above were decoded from it). */
  asSent?: Uint8Array | undefined;
  /** compressed_records to store compressed (simple-batch.ts). */
  compressed?: SimpleBatch["compressed"];
  /** Transactional batches: the guard taken when the leader decided to admit it (admitTransactional). */
  txnGuard?: number | undefined;
}

/**
 * A batch as the handler reads it: the wire's, or, from the Kafka listener in process, one
 * whose records come already decoded (decodedRecords and, when storable as sent, kafkaBatch:
 * the bytes the wire's kafka_batch was decoded into; never set so over gRPC).
 */
export type ProduceBatch = Partial<RecordBatch__Output> & {
  readonly decodedRecords?: RecordData[];
  readonly kafkaBatch?: Uint8Array;
};
/** The request's transaction: its id, and whether first appends add the partition (V2) or verify it. */
interface ProduceTxn {
  readonly transactionalId: string;
  readonly addPartitions: boolean;
}

/** The request as the handler reads it (the Kafka listener's batches may be ProduceBatch). */
export type ProduceHandlerRequest = Omit<ProduceRequest__Output, "partitions"> & {
  readonly partitions: ReadonlyArray<
    Omit<ProducePartitionData__Output, "batch"> & { readonly batch: ProduceBatch | null }
  >;
};

/** Validation that needs no partition state. Returns the parsed batch or a refusal. */
export function validateBatch(
  raw: ProduceBatch | null | undefined,
  transactionalId: string,
  nowMs: number,
  maxMessageBytes: number,
): ParsedBatch | PartitionOutcome {
  if (raw === null || raw === undefined) return failed("INVALID_RECORD", "missing batch");
  let producerId: bigint;
  let records: RecordData[];
  try {
    producerId = int64(raw.producerId, "producer_id");
    // In-process callers (the Kafka listener) pass records already decoded: Kafka's format
    // tells null from empty, which proto3 bytes cannot. Never set by a gRPC request.
    const decoded: RecordData[] | undefined = Array.isArray(raw.decodedRecords)
      ? raw.decodedRecords
      : undefined;
    const wireRecords = Array.isArray(raw.records) ? raw.records : undefined;
    if (decoded === undefined && wireRecords === undefined)
      return failed("CORRUPT_MESSAGE", "records is not a list");
    const count = decoded?.length ?? wireRecords?.length ?? 0;
    if (count === 0) return failed("INVALID_RECORD", "empty batch");
    if (count > BROKER_LIMITS.recordsPerBatchMax)
      return failed(
        "RECORD_LIST_TOO_LARGE",
        `${count} records in one batch (max ${BROKER_LIMITS.recordsPerBatchMax})`,
      );
    records = decoded ?? (wireRecords ?? []).map(recordFromWire);
  } catch (e) {
    if (isTernError(e)) return failed(e.errorName, e.message);
    throw e;
  }
  if (raw.isControl === true)
    return failed("INVALID_RECORD", "clients may not write control batches");
  const producerEpoch = int32(raw.producerEpoch);
  const baseSequence = int32(raw.baseSequence);
  const isTransactional = raw.isTransactional === true;
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
  let batchBytes = 0;
  for (const r of records) {
    const size = recordSizeBytes(r);
    if (size > BROKER_LIMITS.recordBytesMax)
      return failed(
        "MESSAGE_TOO_LARGE",
        `a record of ${size} bytes exceeds ${BROKER_LIMITS.recordBytesMax}`,
      );
    batchBytes += size;
    if (!Number.isSafeInteger(r.timestampMs) || r.timestampMs < 0)
      return failed("INVALID_TIMESTAMP", `record timestamp ${r.timestampMs} is negative`);
    if (r.timestampMs > nowMs + BROKER_LIMITS.timestampFutureMsMax)
      return failed(
        "INVALID_TIMESTAMP",
        `record timestamp ${r.timestampMs} is more than ${BROKER_LIMITS.timestampFutureMsMax} ms in the future`,
      );
  }
  const bytesMax = Math.min(maxMessageBytes, BROKER_LIMITS.batchBytesMax);
  if (batchBytes > bytesMax)
    return failed("MESSAGE_TOO_LARGE", `batch of ${batchBytes} bytes exceeds ${bytesMax}`);
  // In-process only (the Kafka listener), beside decodedRecords. Stored as sent when no larger
  // than the records' bound (a compressed stream can be padded); else the records are stored.
  const kafkaBatch: unknown = Array.isArray(raw.decodedRecords) ? raw.kafkaBatch : undefined;
  const asSent =
    kafkaBatch instanceof Uint8Array &&
    kafkaBatch.byteLength > 0 &&
    kafkaBatch.byteLength <= bytesMax + KAFKA_BATCH_FRAMING_BYTES
      ? kafkaBatch
      : undefined;
  return { producerId, producerEpoch, baseSequence, isTransactional, records, asSent };
}

/** What a Kafka batch may add to its records' bytes as stored (its header and varint framing are smaller than the entry's own). */
const KAFKA_BATCH_FRAMING_BYTES = 64 * 1024;

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

export function createProduceHandler(
  given: ProduceDeps,
): (request: ProduceHandlerRequest) => Promise<ProduceResponse__Output> {
  const order = new ProposalOrder();
  const deps: ProduceDeps = {
    ...given,
    inflation: given.inflation ?? new InflationBudget(KAFKA_BATCH_INFLATION_BYTES_MAX),
    holds: new ProposalHolds(),
  };
  return async (request) => {
    const partitions = Array.isArray(request?.partitions) ? request.partitions : [];
    if (partitions.length > BROKER_LIMITS.partitionsPerRequestMax) {
      throw new TernError(
        "INVALID_REQUEST",
        `${partitions.length} partitions in one request (max ${BROKER_LIMITS.partitionsPerRequestMax})`,
      );
    }
    const acks = int32(request?.acks);
    const timeoutMsRaw = int32(request?.timeoutMs);
    const timeoutMs = Math.min(
      timeoutMsRaw > 0 ? timeoutMsRaw : BROKER_LIMITS.produceTimeoutMsDefault,
      BROKER_LIMITS.produceTimeoutMsMax,
    );
    const txn: ProduceTxn = {
      transactionalId: typeof request?.transactionalId === "string" ? request.transactionalId : "",
      addPartitions: request?.addPartitionsToTxn === true,
    };
    const seen = new Set<string>();
    const outcomes = await Promise.all(
      partitions.map(async (p) => {
        const topic = String(p?.topic ?? "");
        const partition = int32(p?.partition, -1);
        const key = `${topic}/${partition}`;
        let outcome: PartitionOutcome;
        if (acks !== -1 && acks !== 0 && acks !== 1)
          outcome = failed("INVALID_REQUIRED_ACKS", `acks ${acks} is not -1, 0 or 1`);
        else if (seen.has(key))
          outcome = failed("INVALID_REQUEST", `partition ${key} appears twice in the request`);
        else {
          seen.add(key);
          outcome = await producePartition(deps, order, topic, partition, p?.batch, txn, timeoutMs);
        }
        if (outcome.error !== "NONE") deps.metrics?.produceErrors.inc({ code: outcome.error });
        return {
          topic,
          partition,
          ...errorFields(outcome.error, outcome.message),
          baseOffset: outcome.baseOffset.toString(),
          logAppendTimeMs: String(outcome.appendTimeMs),
          logStartOffset: outcome.logStartOffset.toString(),
          leader: outcome.leader ?? null,
        };
      }),
    );
    return { partitions: outcomes };
  };
}

async function producePartition(
  deps: ProduceDeps,
  order: ProposalOrder,
  topic: string,
  partition: number,
  rawBatch: ProduceBatch | null | undefined,
  txn: ProduceTxn,
  timeoutMs: number,
): Promise<PartitionOutcome> {
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
  const built = builtBatch(rawBatch);
  if (built !== undefined)
    return produceBuilt(deps, order, local, topic, partition, built, txn, timeoutMs);
  const codec = wireCompression(rawBatch);
  if (codec === "unknown")
    return failed(
      "UNSUPPORTED_COMPRESSION_TYPE",
      `compression ${String(rawBatch?.compression)} is not one of none, gzip, snappy, lz4, zstd`,
    );
  if (codec !== "none")
    return produceCompressed(deps, order, local, topic, partition, rawBatch, codec, txn, timeoutMs);
  const parsed = validateBatch(
    rawBatch,
    txn.transactionalId,
    deps.clock.nowMs(),
    local.maxMessageBytes(),
  );
  if ("error" in parsed) return parsed;
  return produceParsed(deps, order, local, topic, partition, parsed, txn, timeoutMs);
}

/** A checked batch, proposed now in arrival order, or queued behind its producer's earlier ones. */
function produceParsed(
  deps: ProduceDeps,
  order: ProposalOrder,
  local: LocalPartition,
  topic: string,
  partition: number,
  parsed: ParsedBatch,
  txn: ProduceTxn,
  timeoutMs: number,
): Promise<PartitionOutcome> {
  const key = orderKey(topic, partition, parsed.producerId);
  const mustWait =
    parsed.producerId >= 0n &&
    (order.has(key) || (parsed.isTransactional && needsVerification(local, parsed)));
  // Common path: propose now, in arrival order, with no await in between (a transactional
  // batch here joins the transaction open at its epoch: its guard needs no round trip).
  if (!mustWait) {
    if (parsed.isTransactional)
      parsed.txnGuard = txnGuardOf(local.stateMachine.producer(parsed.producerId));
    return settle(deps, local, parsed, proposeHeld(deps, local, parsed, txn, timeoutMs));
  }
  const ready = (): Promise<ParsedBatch> => Promise.resolve(parsed);
  return produceAtTurn(
    deps,
    order,
    local,
    topic,
    partition,
    parsed.producerId,
    ready,
    txn,
    timeoutMs,
  );
}

/**
 * RecordBatch.kafka_batch when set over gRPC (then the batch's other fields are ignored); the
 * Kafka listener's batches come decoded already (decodedRecords).
 */
function builtBatch(raw: ProduceBatch | null | undefined): Buffer | undefined {
  if (Array.isArray(raw?.decodedRecords)) return undefined;
  const bytes: unknown = raw?.kafkaBatch;
  return Buffer.isBuffer(bytes) && bytes.byteLength > 0 ? bytes : undefined;
}

/**
 * A batch its producer built (RecordBatch.kafka_batch): checked as the Kafka listener checks a
 * Kafka producer's (magic, CRC-32C, records against the header; record-batch.ts), then the
 * same validation as any batch. Uncompressed, it is decoded on the spot and takes the common
 * path; compressed, it takes its producer's turn first and inflates within the broker's
 * inflation budget (the bound from its header reserved before anything inflates).
 */
function produceBuilt(
  deps: ProduceDeps,
  order: ProposalOrder,
  local: LocalPartition,
  topic: string,
  partition: number,
  bytes: Buffer,
  txn: ProduceTxn,
  timeoutMs: number,
): Promise<PartitionOutcome> {
  let plain: DecodedBatch | undefined;
  try {
    plain = decodeOnlyPlainBatch(bytes);
  } catch (e) {
    if (e instanceof BatchRefusal) return Promise.resolve(failed(e.errorName, e.message));
    throw e;
  }
  if (plain !== undefined) {
    const parsed = validateBuilt(deps, local, txn, plain);
    if ("error" in parsed) return Promise.resolve(parsed);
    return produceParsed(deps, order, local, topic, partition, parsed, txn, timeoutMs);
  }
  // decodeOnlyPlainBatch checked the header's bytes are there.
  const producerId = bytes.readBigInt64BE(AT_PRODUCER_ID);
  const budget = deps.inflation!; // createProduceHandler sets it
  const decode = async (): Promise<ParsedBatch | PartitionOutcome> => {
    const hold = await budget.acquire(inflationBound(bytes));
    try {
      return validateBuilt(deps, local, txn, await decodeOnlyBatch(bytes));
    } catch (e) {
      if (e instanceof BatchRefusal) return failed(e.errorName, e.message);
      throw e;
    } finally {
      hold.release();
    }
  };
  return produceAtTurn(deps, order, local, topic, partition, producerId, decode, txn, timeoutMs);
}

function validateBuilt(
  deps: ProduceDeps,
  local: LocalPartition,
  txn: ProduceTxn,
  b: DecodedBatch,
): ParsedBatch | PartitionOutcome {
  return validateBatch(
    {
      producerId: String(b.producerId),
      producerEpoch: b.producerEpoch,
      baseSequence: b.baseSequence,
      isTransactional: b.isTransactional,
      isControl: b.isControl,
      records: [],
      decodedRecords: b.records,
      kafkaBatch: b.asSent,
    },
    txn.transactionalId,
    deps.clock.nowMs(),
    local.maxMessageBytes(),
  );
}

/**
 * A compressed batch inflates (in the thread pool) as soon as it arrives, but is proposed in
 * arrival order: its turn in the producer's FIFO is taken before the first await.
 */
function produceCompressed(
  deps: ProduceDeps,
  order: ProposalOrder,
  local: LocalPartition,
  topic: string,
  partition: number,
  rawBatch: ProduceBatch | null | undefined,
  codec: CompressionCodec,
  txn: ProduceTxn,
  timeoutMs: number,
): Promise<PartitionOutcome> {
  const inflating = inflateRecords(rawBatch, codec);
  // Handled where it is made: it is awaited only at its turn, or never (refused below first).
  inflating.catch(() => undefined);
  let producerId: bigint;
  try {
    producerId = int64(rawBatch?.producerId, "producer_id");
  } catch (e) {
    if (isTernError(e)) return Promise.resolve(failed(e.errorName, e.message));
    throw e;
  }
  const decode = async (): Promise<ParsedBatch | PartitionOutcome> => {
    const inflated = await inflating;
    if ("error" in inflated) return failed(inflated.error, inflated.message);
    const parsed = validateBatch(
      { ...rawBatch, records: [], decodedRecords: inflated.records },
      txn.transactionalId,
      deps.clock.nowMs(),
      local.maxMessageBytes(),
    );
    if ("error" in parsed) return parsed;
    parsed.compressed = inflated.section;
    return parsed;
  };
  return produceAtTurn(deps, order, local, topic, partition, producerId, decode, txn, timeoutMs);
}

/**
 * A batch decoded off the event loop and proposed at its producer's turn, in arrival order:
 * the turn is taken now, before the first await.
 */
function produceAtTurn(
  deps: ProduceDeps,
  order: ProposalOrder,
  local: LocalPartition,
  topic: string,
  partition: number,
  producerId: bigint,
  decode: () => Promise<ParsedBatch | PartitionOutcome>,
  txn: ProduceTxn,
  timeoutMs: number,
): Promise<PartitionOutcome> {
  const queued = order.enqueue(orderKey(topic, partition, producerId), async () => {
    const parsed = await decode();
    if ("error" in parsed) return parsed;
    const refused = await admitTransactional(deps, local, txn, parsed);
    if (refused !== null) return refused;
    const proposed = proposeHeld(deps, local, parsed, txn, timeoutMs);
    return { proposed: settle(deps, local, parsed, proposed) };
  });
  if (queued === null)
    return Promise.resolve(
      failed(
        "THROTTLING_QUOTA_EXCEEDED",
        `too many batches of producer ${producerId} waiting on ${topic}/${partition}`,
      ),
    );
  return queued;
}

/** proposeNow, unless the chaos hold failpoint holds this (partition, producer): proposal-holds.ts. */
function proposeHeld(
  deps: ProduceDeps,
  local: LocalPartition,
  parsed: ParsedBatch,
  txn: ProduceTxn,
  timeoutMs: number,
): Promise<Proposed> {
  const key = orderKey(local.topic, local.partition, parsed.producerId);
  const gate = deps.holds?.gate(key, parsed.isTransactional && !txn.addPartitions);
  return proposeWhenOpen(
    deps.logger,
    local,
    { ...parsed, recordCount: parsed.records.length },
    gate,
    () => proposeNow(deps, local, parsed, timeoutMs),
  );
}

function orderKey(topic: string, partition: number, producerId: bigint): string {
  return `${topic}\u0000${partition}\u0000${producerId}`;
}

type Proposed = { result: AppendResult; bytes: number } | PartitionOutcome;

/** Checks that need no round trip, then proposes synchronously (the Raft index is taken now). */
function proposeNow(
  deps: ProduceDeps,
  local: LocalPartition,
  parsed: ParsedBatch,
  timeoutMs: number,
): Promise<Proposed> {
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
    const batch = parsed.asSent ?? simpleBatchBytes(parsed, header.appendTimeMs);
    data = encodeEntry(kafkaBatchEntry(header, batch, parsed.txnGuard));
  } catch (e) {
    // The batch's own header refused (kafkaBatchEntry): this partition's answer, not the request's.
    if (isTernError(e)) return Promise.resolve(failed(e.errorName, e.message));
    throw e;
  }
  return local.group.propose<AppendResult>(data, { timeoutMs }).then(
    ({ result }) => ({ result, bytes: data.length }),
    (e: unknown) => proposeFailure(deps, local, e),
  );
}

async function settle(
  deps: ProduceDeps,
  local: LocalPartition,
  parsed: ParsedBatch,
  proposed: Promise<Proposed>,
): Promise<PartitionOutcome> {
  const outcome = await proposed;
  if ("error" in outcome) return outcome;
  const { result, bytes } = outcome;
  if (result.error !== "NONE") return failed(result.error, result.message);
  if (parsed.isTransactional) failpoint("broker.after-txn-append-before-response");
  if (!result.duplicate && deps.metrics) {
    deps.metrics.producedRecords.inc({ topic: local.topic }, parsed.records.length);
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
  deps: ProduceDeps,
  local: LocalPartition,
  txn: ProduceTxn,
  parsed: ParsedBatch,
): Promise<PartitionOutcome | null> {
  if (!parsed.isTransactional) return null;
  parsed.txnGuard = txnGuardOf(local.stateMachine.producer(parsed.producerId));
  if (!needsVerification(local, parsed)) return null;
  return verifyFirstAppend(deps, local, txn, parsed);
}

/** KIP-890: before the first transactional append of (pid, epoch) here, ask the coordinator (part 2: to add the partition). */
async function verifyFirstAppend(
  deps: ProduceDeps,
  local: LocalPartition,
  txn: ProduceTxn,
  batch: ParsedBatch,
): Promise<PartitionOutcome | null> {
  const verdict = await deps.verifier.verify(
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
  deps: ProduceDeps | { directory: PartitionDirectory },
  local: LocalPartition,
): PartitionOutcome {
  const leader = local.group.leader();
  return failed(
    "NOT_LEADER_OR_FOLLOWER",
    `not the leader of ${local.topic}/${local.partition} (leader ${leader})`,
    deps.directory.endpoint(leader),
  );
}

export function proposeFailure(
  deps: { directory: PartitionDirectory; logger: Logger },
  local: LocalPartition,
  e: unknown,
): PartitionOutcome {
  if (isTernError(e)) {
    if (e.errorName === "NOT_LEADER_OR_FOLLOWER") {
      const leader = typeof e.details.leader === "number" ? e.details.leader : local.group.leader();
      return failed("NOT_LEADER_OR_FOLLOWER", e.message, deps.directory.endpoint(leader));
    }
    return failed(e.errorName, e.message);
  }
  deps.logger.error(
    { err: e, topic: local.topic, partition: local.partition },
    "propose failed unexpectedly",
  );
  return failed("UNKNOWN_SERVER_ERROR", e instanceof Error ? e.message : String(e));
}
