// A batch of records for one partition, as accumulated, sent, retried and completed. Each
// record keeps its send() promise callbacks: every accepted record ends in exactly one of
// resolve (with its offset) or reject — nothing is dropped silently. When first sent, the batch
// is built once as a Kafka record batch v2 (libs/records/batch-builder.ts), compressed in the
// producer's codec: a retry resends the same bytes, and the records' keys and values are let go
// (the built batch holds them; its size is what the batch then counts in bufferMemory).
import { assert } from "../../common/assert.js";
import type { CompressionCodec } from "../../records/compression.js";
import {
  buildBatch,
  buildUncompressedBatch,
  setBatchIdentity,
  type BatchIdentity,
} from "../../records/batch-builder.js";
import type { SectionRecord } from "../../records/records-section.js";

export interface RecordMetadata {
  readonly topic: string;
  readonly partition: number;
  /** -1n when the broker answered a duplicate whose offsets it no longer remembers. */
  readonly offset: bigint;
}

export interface PendingRecord {
  /** Let go (null, no headers) once the batch is built: the built batch holds them. */
  key: Buffer | null;
  value: Buffer | null;
  headers: ReadonlyArray<{ key: string; value: Buffer }>;
  readonly timestampMs: bigint;
  readonly bytes: number;
  readonly resolve: (m: RecordMetadata) => void;
  readonly reject: (e: Error) => void;
}

/** Framing cost counted per record on top of key, value and headers. */
export const RECORD_OVERHEAD_BYTES = 32;

export function recordBytes(
  key: Buffer | null,
  value: Buffer | null,
  headers: ReadonlyArray<{ key: string; value: Buffer }>,
): number {
  let n = RECORD_OVERHEAD_BYTES + (key?.length ?? 0) + (value?.length ?? 0);
  for (const h of headers) n += Buffer.byteLength(h.key) + h.value.length + 8;
  return n;
}

export class ProducerBatch {
  readonly records: PendingRecord[] = [];
  bytes = 0;
  /** Set when first sent; kept across retries (idempotence needs the same sequence). -1 = unassigned. */
  baseSequence = -1;
  producerId = -1n;
  producerEpoch = -1;
  attempts = 0;
  /** The last send went out while an earlier batch of the partition was unresolved (the broker may have seen them reordered). */
  sentBehind = false;
  /** Not to be (re)sent before this time (retry backoff). */
  notBeforeMs = 0;
  /** Closed for appends (full, or sent once). */
  closed = false;
  done = false;
  private readonly settled: Promise<void>;
  private settle!: () => void;
  /** The batch as built (Kafka record batch v2), once built; a compressed one is built off the event loop. */
  private built: Buffer | undefined;
  private building: Promise<Buffer> | undefined;
  /** The identity `built` carries (a new producer id or epoch before the batch is acknowledged rewrites it). */
  private builtFor: BatchIdentity | undefined;

  constructor(
    readonly topic: string,
    readonly partition: number,
    readonly createdAtMs: number,
    readonly deadlineMs: number,
  ) {
    this.settled = new Promise((r) => (this.settle = r));
  }

  /** Resolves once every record of the batch has been resolved or rejected. */
  whenDone(): Promise<void> {
    return this.settled;
  }

  add(record: PendingRecord): void {
    assert(!this.closed && !this.done, "append to a closed batch");
    this.records.push(record);
    this.bytes += record.bytes;
  }

  complete(baseOffset: bigint): void {
    if (this.done) return;
    this.done = true;
    this.records.forEach((r, i) =>
      r.resolve({
        topic: this.topic,
        partition: this.partition,
        offset: baseOffset < 0n ? -1n : baseOffset + BigInt(i),
      }),
    );
    this.settle();
  }

  fail(error: Error): void {
    if (this.done) return;
    this.done = true;
    for (const r of this.records) r.reject(error);
    this.settle();
  }

  /** The identity the batch is sent with: -1s for a producer without one (Kafka's NO_SEQUENCE). */
  identity(): BatchIdentity {
    return this.producerId < 0n
      ? { producerId: -1n, producerEpoch: -1, baseSequence: -1 }
      : {
          producerId: this.producerId,
          producerEpoch: this.producerEpoch,
          baseSequence: this.baseSequence,
        };
  }

  /**
   * The batch as a Kafka record batch v2 with its current identity: built on the first call
   * (at once when not compressed; a promise otherwise, in the thread pool), the same bytes
   * afterwards. resized(from, to) is told when the batch's counted bytes change from its
   * records' estimate to the built batch's size (not after the batch is done: it was released).
   */
  kafkaBatch(
    transactional: boolean,
    codec: CompressionCodec,
    resized: (fromBytes: number, toBytes: number) => void,
  ): Buffer | Promise<Buffer> {
    if (this.built !== undefined) return this.withCurrentIdentity(this.built);
    if (codec === "none")
      return this.keep(buildUncompressedBatch(this.toBuild(transactional)), resized);
    this.building ??= buildBatch({ ...this.toBuild(transactional), codec }).then((b) =>
      this.keep(b, resized),
    );
    return this.building.then((b) => this.withCurrentIdentity(b));
  }

  private toBuild(transactional: boolean): {
    isTransactional: boolean;
    records: SectionRecord[];
    sizeHint: number;
  } & BatchIdentity {
    this.builtFor = this.identity();
    return {
      ...this.builtFor,
      isTransactional: transactional,
      sizeHint: this.bytes,
      records: this.records.map((r) => ({
        key: r.key,
        value: r.value,
        headers: r.headers,
        timestampMs: Number(r.timestampMs),
      })),
    };
  }

  /** Keeps the built batch and lets the records' payloads go. */
  private keep(b: Buffer, resized: (fromBytes: number, toBytes: number) => void): Buffer {
    this.built = b;
    this.building = undefined;
    for (const r of this.records) {
      r.key = null;
      r.value = null;
      r.headers = [];
    }
    if (!this.done && b.byteLength !== this.bytes) {
      resized(this.bytes, b.byteLength);
      this.bytes = b.byteLength;
    }
    return b;
  }

  private withCurrentIdentity(b: Buffer): Buffer {
    const now = this.identity();
    const was = this.builtFor!;
    if (
      now.producerId !== was.producerId ||
      now.producerEpoch !== was.producerEpoch ||
      now.baseSequence !== was.baseSequence
    ) {
      setBatchIdentity(b, now);
      this.builtFor = now;
    }
    return b;
  }
}
