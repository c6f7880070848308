// The producer (Kafka's KafkaProducer in TypeScript idiom). send() resolves with the record's
// offset once the batch is acknowledged (acks=-1: committed by a majority). It blocks only for
// metadata and buffer memory, up to maxBlockMs, then rejects with TimeoutError. Idempotence is
// on by default; with a transactionalId the transactions API is available.
import type { ClientLogger as Logger } from "../../common/client-logger.js";
import { silentClientLogger as silentLogger } from "../../common/client-logger.js";
import { ClientError, ClosedError, TimeoutError, toClientError } from "../errors.js";
import {
  clientCredentialsOf,
  GrpcTransport,
  type ClientSecurityOptions,
} from "../network/grpc-transport.js";
import type { Transport } from "../network/transport.js";
import { CoordinatorFinder } from "../network/coordinator-finder.js";
import { MetadataCache } from "../network/metadata-cache.js";
import { LOCAL_BOOTSTRAP } from "../network/bootstrap.js";
import { Accumulator } from "./accumulator.js";
import { BufferMemory } from "./buffer-memory.js";
import { DefaultPartitioner } from "./partitioner.js";
import { recordBytes, type RecordMetadata } from "./producer-batch.js";
import { Sender } from "./sender.js";
import {
  TransactionManager,
  type GroupMetadata,
  type TopicPartitionOffset,
} from "./transaction-manager.js";
import { CODECS, isCodec, type CompressionCodec } from "../../records/compression.js";

/** `tls` and `credentials` (ClientSecurityOptions): how this client's channels are secured. */
export interface ProducerOptions extends ClientSecurityOptions {
  /** Controller address(es) HOST:PORT (comma-separated or a list). Default 127.0.0.1:9090. */
  readonly bootstrap?: string | readonly string[];
  /** -1 (all, default) or 1. */
  readonly acks?: -1 | 1;
  /** Bytes per partition batch before it is sent without waiting for lingerMs (default 16384). */
  readonly batchSize?: number;
  /** How long a batch waits for more records (default 5). */
  readonly lingerMs?: number;
  /** Bytes of records accepted and not yet acknowledged (default 32 MiB). */
  readonly bufferMemory?: number;
  /** How long send() may wait for metadata or buffer memory before TimeoutError (default 60000). */
  readonly maxBlockMs?: number;
  /** How long a record may wait for its acknowledgement, retries included (default 120000). */
  readonly deliveryTimeoutMs?: number;
  readonly requestTimeoutMs?: number;
  /** Default true. Forced on by transactionalId. */
  readonly idempotent?: boolean;
  /** Batches in flight per partition, 1..5 (default 5). */
  readonly maxInFlightPerPartition?: number;
  readonly transactionalId?: string;
  /** Default 60000. */
  readonly transactionTimeoutMs?: number;
  readonly retryBackoffMsMax?: number;
  /**
   * Codec of each batch (a Kafka record batch v2, stored as sent): none (default), gzip,
   * snappy, lz4 or zstd. A null key or value stays apart from an empty one.
   */
  readonly compression?: CompressionCodec;
  readonly logger?: Logger;
  /**
   * How calls reach the nodes (default: gRPC, see network/grpc-transport.ts). Tests pass a
   * scripted one; a transport given here is the caller's to close.
   */
  readonly transport?: Transport;
}

export interface ProducerRecord {
  readonly topic: string;
  readonly value: Buffer | string | null;
  readonly key?: Buffer | string | null;
  /** Explicit partition; otherwise the default partitioner chooses. */
  readonly partition?: number;
  readonly headers?: Record<string, Buffer | string>;
  readonly timestampMs?: number;
}

const IN_FLIGHT_MAX = 5;
const CLOSE_TIMEOUT_MS_DEFAULT = 30_000;
const METADATA_POLL_MS = 100;

function toBuffer(v: Buffer | string | null | undefined): Buffer | null {
  if (v === null || v === undefined) return null;
  return typeof v === "string" ? Buffer.from(v) : v;
}

export class Producer {
  private readonly transport: Transport;
  private readonly ownsTransport: boolean;
  private readonly metadata: MetadataCache;
  private readonly finder: CoordinatorFinder;
  private readonly memory: BufferMemory;
  private readonly accumulator: Accumulator;
  private readonly sender: Sender;
  private readonly txn: TransactionManager;
  private readonly partitioner = new DefaultPartitioner();
  private readonly logger: Logger;
  private readonly maxBlockMs: number;
  private closed = false;

  constructor(options: ProducerOptions = {}) {
    this.logger = options.logger ?? silentLogger();
    const inFlight = options.maxInFlightPerPartition ?? IN_FLIGHT_MAX;
    if (!Number.isInteger(inFlight) || inFlight < 1 || inFlight > IN_FLIGHT_MAX)
      throw new RangeError(`maxInFlightPerPartition must be 1..${IN_FLIGHT_MAX}`);
    const acks = options.acks ?? -1;
    if (acks !== -1 && acks !== 1) throw new RangeError("acks must be -1 or 1");
    const idempotent = options.transactionalId !== undefined || (options.idempotent ?? true);
    this.maxBlockMs = options.maxBlockMs ?? 60_000;
    const deliveryTimeoutMs = options.deliveryTimeoutMs ?? 120_000;
    const requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
    const channels = clientCredentialsOf(options);
    this.transport = options.transport ?? new GrpcTransport(channels, options.credentials);
    this.ownsTransport = options.transport === undefined;
    this.metadata = new MetadataCache({
      bootstrap: options.bootstrap ?? LOCAL_BOOTSTRAP,
      logger: this.logger,
      credentials: options.credentials,
      transport: this.transport,
    });
    this.finder = new CoordinatorFinder(this.transport, this.metadata);
    this.memory = new BufferMemory(options.bufferMemory ?? 32 * 1024 * 1024);
    this.accumulator = new Accumulator(options.batchSize ?? 16_384, deliveryTimeoutMs);
    this.txn = new TransactionManager(
      {
        transactionalId: options.transactionalId,
        transactionTimeoutMs: options.transactionTimeoutMs ?? 60_000,
        coordinatorTimeoutMs: Math.max(requestTimeoutMs, 30_000),
      },
      this.transport,
      this.finder,
      this.metadata,
      this.logger,
    );
    this.sender = new Sender(
      {
        acks,
        lingerMs: options.lingerMs ?? 5,
        maxInFlight: inFlight,
        requestTimeoutMs,
        idempotent,
        retryBackoffMsMax: options.retryBackoffMsMax ?? 1_000,
        compression: producerCompression(options.compression),
      },
      this.accumulator,
      this.txn,
      this.transport,
      this.metadata,
      this.logger,
    );
    this.sender.onBatchDone = (batch) => this.memory.release(batch.bytes);
    this.sender.onBatchResized = (fromBytes, toBytes) => this.memory.resize(fromBytes, toBytes);
  }

  /** Transaction state (READY for a non-transactional producer). */
  get transactionState(): string {
    return this.txn.state;
  }

  /** Free bytes of bufferMemory (Kafka's buffer-available-bytes): a send() that took its bytes was accepted. */
  get bufferAvailableBytes(): number {
    return this.memory.bytesMax - this.memory.used;
  }

  /** The producer id and epoch in use (-1 before the first send / initTransactions). */
  get identity(): { producerId: bigint; producerEpoch: number } {
    return { producerId: this.txn.producerId, producerEpoch: this.txn.producerEpoch };
  }

  /**
   * Queues a record; resolves with its partition and offset once acknowledged. Rejects with
   * TimeoutError when metadata or buffer memory is not available within maxBlockMs (the
   * record was NOT accepted), or when it was accepted but not acknowledged within
   * deliveryTimeoutMs; with the server's error classified as fatal/abortable/retriable otherwise.
   */
  async send(record: ProducerRecord): Promise<RecordMetadata> {
    if (this.closed) throw new ClosedError("send() after close()");
    if (this.txn.transactional) this.txn.guard("send");
    else if (this.txn.fatalError()) throw this.txn.fatalError()!;
    const deadline = Date.now() + this.maxBlockMs;
    const key = toBuffer(record.key);
    const value = toBuffer(record.value);
    const headers = Object.entries(record.headers ?? {}).map(([k, v]) => ({
      key: k,
      value: toBuffer(v)!,
    }));
    const bytes = recordBytes(key, value, headers);
    const partitionCount =
      this.metadata.topic(record.topic)?.partitions.length ??
      (await this.waitForTopic(record.topic, deadline));
    if (
      record.partition !== undefined &&
      (!Number.isInteger(record.partition) ||
        record.partition < 0 ||
        record.partition >= partitionCount)
    ) {
      throw new ClientError(
        `partition ${record.partition} of ${record.topic} does not exist (${partitionCount} partitions)`,
        "abortable",
        "UNKNOWN_TOPIC_OR_PARTITION",
      );
    }
    if (!this.memory.tryReserve(bytes)) await this.memory.reserve(bytes, deadline - Date.now());
    if (this.closed) {
      this.memory.release(bytes);
      throw new ClosedError("producer closed while send() waited");
    }
    const partition =
      record.partition ?? this.partitioner.partition(record.topic, key, partitionCount);
    return new Promise<RecordMetadata>((resolve, reject) => {
      const timestampMs = BigInt(record.timestampMs ?? Date.now());
      const closedBatch = this.accumulator.append(
        record.topic,
        partition,
        { key, value, headers, timestampMs, bytes, resolve, reject },
        Date.now(),
      );
      if (closedBatch) this.partitioner.onBatchClosed(record.topic, partition, partitionCount);
      this.sender.wake();
    });
  }

  /** Sends everything buffered now and waits until each of those batches is acknowledged or failed. */
  async flush(): Promise<void> {
    const batches = this.accumulator.pendingBatches();
    if (batches.length === 0) return;
    this.sender.flushers += 1;
    this.sender.wake();
    try {
      await Promise.all(batches.map((b) => b.whenDone()));
    } finally {
      this.sender.flushers -= 1;
    }
  }

  async initTransactions(): Promise<void> {
    await this.txn.initTransactions();
  }

  beginTransaction(): void {
    this.txn.beginTransaction();
  }

  /** Commits `offsets` (next offsets to consume) for the group as part of the transaction. */
  async sendOffsetsToTransaction(
    offsets: readonly TopicPartitionOffset[],
    groupMetadata: GroupMetadata,
  ): Promise<void> {
    await this.txn.sendOffsets(offsets, groupMetadata);
  }

  /** Flushes, then commits. An AbortableTransactionError means: call abortTransaction(). */
  async commitTransaction(): Promise<void> {
    this.txn.guard("commitTransaction");
    if (this.txn.state === "IN_TRANSACTION") this.txn.transition("COMMITTING_TRANSACTION");
    await this.flush();
    const failed = this.txn.abortableError() ?? this.txn.fatalError();
    if (failed) {
      if (!failed.fatal) this.txn.transition("ABORTABLE_ERROR");
      throw failed;
    }
    try {
      await this.txn.endTransaction(true);
    } catch (e) {
      const ce = toClientError(e, "commitTransaction");
      if (ce.fatal) this.txn.onError(ce);
      else if (!ce.retriable) this.txn.transition("ABORTABLE_ERROR");
      throw ce;
    }
    this.accumulator.resetSequences();
    this.txn.transition("READY");
  }

  /** Drops unsent records of the transaction, waits for in-flight ones, then aborts it. */
  async abortTransaction(): Promise<void> {
    this.txn.guard("abortTransaction");
    if (this.txn.state !== "ABORTING_TRANSACTION") this.txn.transition("ABORTING_TRANSACTION");
    this.sender.failAll(
      new ClientError(
        "the transaction was aborted before this record was sent",
        "abortable",
        "INVALID_TXN_STATE",
      ),
    );
    await Promise.all(this.accumulator.pendingBatches().map((b) => b.whenDone()));
    try {
      await this.txn.endTransaction(false);
    } catch (e) {
      const ce = toClientError(e, "abortTransaction");
      if (ce.fatal) this.txn.onError(ce);
      throw ce;
    }
    this.accumulator.resetSequences();
    this.txn.transition("READY");
  }

  /** Flushes (bounded by timeoutMs), then fails whatever is left with ClosedError and releases connections. */
  async close(options: { timeoutMs?: number } = {}): Promise<void> {
    if (this.closed) return;
    const timeoutMs = options.timeoutMs ?? CLOSE_TIMEOUT_MS_DEFAULT;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.flush().catch(() => undefined),
      new Promise((r) => (timer = setTimeout(r, timeoutMs))),
    ]);
    clearTimeout(timer);
    this.closed = true;
    const error = new ClosedError("the producer was closed before this record was acknowledged");
    this.memory.failWaiters(error);
    this.sender.failAll(error, { inFlightToo: true });
    this.sender.stop();
    this.metadata.close();
    if (this.ownsTransport) this.transport.close();
  }

  private async waitForTopic(topic: string, deadline: number): Promise<number> {
    let lastError: unknown;
    while (Date.now() < deadline) {
      try {
        const m = await withTimeout(this.metadata.refresh(), deadline - Date.now());
        const t = m?.topics.find((x) => x.name === topic);
        if (t && t.partitions.length > 0) return t.partitions.length;
      } catch (e) {
        lastError = e;
      }
      await new Promise((r) =>
        setTimeout(r, Math.min(METADATA_POLL_MS, Math.max(0, deadline - Date.now()))),
      );
    }
    throw new TimeoutError(
      `topic ${topic} not found in metadata within maxBlockMs=${this.maxBlockMs} ms${lastError ? ` (${toClientError(lastError).message})` : ""}`,
      { cause: lastError },
    );
  }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), Math.max(0, ms)))),
  ]).finally(() => clearTimeout(timer));
}

function producerCompression(c: CompressionCodec | undefined): CompressionCodec {
  if (c === undefined) return "none";
  if (!isCodec(c))
    throw new RangeError(`compression must be one of ${CODECS.join(", ")}, got ${String(c)}`);
  return c;
}
