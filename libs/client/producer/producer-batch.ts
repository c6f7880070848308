// A batch of records for one partition, as accumulated, sent, retried and completed. Each
// record keeps its send() promise callbacks: every accepted record ends in exactly one of
// resolve (with its offset) or reject — nothing is dropped silently.
import { assert } from "../../common/assert.js";
import { compress, type CompressionCodec } from "../../records/compression.js";
import { KafkaWriter } from "../../records/kafka-codec.js";
import {
  baseTimestampOf,
  writeRecordsSection,
  type SectionRecord,
} from "../../records/records-section.js";

export interface RecordMetadata {
  readonly topic: string;
  readonly partition: number;
  /** -1n when the broker answered a duplicate whose offsets it no longer remembers. */
  readonly offset: bigint;
}

export interface PendingRecord {
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers: Array<{ key: string; value: Buffer }>;
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
  /** The records compressed once: retries resend the same bytes. */
  private compressed?: Promise<{
    compression: string;
    compressedRecords: Buffer;
    recordCount: number;
    baseTimestampMs: string;
  }>;

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

  toWire(transactional: boolean): Record<string, unknown> {
    return {
      ...this.wireHeader(transactional),
      records: this.records.map((r) => ({
        key: r.key ?? Buffer.alloc(0),
        value: r.value ?? Buffer.alloc(0),
        headers: r.headers,
        timestampMs: String(r.timestampMs),
      })),
    };
  }

  /**
   * The wire form with the records in Kafka's record layout, compressed (off the event loop).
   * Unlike the protobuf records, this layout keeps a null key or value apart from an empty one.
   */
  async toCompressedWire(
    transactional: boolean,
    codec: Exclude<CompressionCodec, "none">,
  ): Promise<Record<string, unknown>> {
    this.compressed ??= this.compress(codec);
    return { ...this.wireHeader(transactional), records: [], ...(await this.compressed) };
  }

  private async compress(codec: Exclude<CompressionCodec, "none">): Promise<{
    compression: string;
    compressedRecords: Buffer;
    recordCount: number;
    baseTimestampMs: string;
  }> {
    const records: SectionRecord[] = this.records.map((r) => ({
      key: r.key,
      value: r.value,
      headers: r.headers,
      timestampMs: Number(r.timestampMs),
    }));
    const base = baseTimestampOf(records);
    const w = new KafkaWriter(Math.min(this.bytes + 64, 1 << 20));
    writeRecordsSection(w, records, base);
    return {
      compression: `COMPRESSION_${codec.toUpperCase()}`,
      compressedRecords: await compress(codec, w.finish()),
      recordCount: records.length,
      baseTimestampMs: String(base),
    };
  }

  private wireHeader(transactional: boolean): Record<string, unknown> {
    return {
      producerId: String(this.producerId),
      producerEpoch: this.producerEpoch,
      baseSequence: this.baseSequence < 0 ? 0 : this.baseSequence,
      isTransactional: transactional,
    };
  }
}
