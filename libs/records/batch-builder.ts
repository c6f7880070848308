// Builds one Kafka record batch v2 (magic 2) from records: the form a partition stores and the
// TypeScript Producer sends (RecordBatch.kafka_batch). Layout in batch-header.ts; the records
// section (records-section.ts) is compressed in the batch's codec (compression.ts, off the
// event loop). The CRC-32C covers attributes to the end, as Kafka computes it, so baseOffset
// and partitionLeaderEpoch stay the broker's to set. Offset deltas are 0.., timestamps create
// times relative to the smallest one.
import { codecId, compress, type CompressionCodec } from "./compression.js";
import { crc32c } from "./crc32c.js";
import { KafkaWriter } from "./kafka-codec.js";
import { baseTimestampOf, writeRecordsSection, type SectionRecord } from "./records-section.js";
import {
  ATTR_TRANSACTIONAL,
  AT_ATTRIBUTES,
  AT_BASE_OFFSET,
  AT_BASE_SEQUENCE,
  AT_BASE_TIMESTAMP,
  AT_CRC,
  AT_LAST_OFFSET_DELTA,
  AT_LEADER_EPOCH,
  AT_LENGTH,
  AT_MAGIC,
  AT_MAX_TIMESTAMP,
  AT_PRODUCER_EPOCH,
  AT_PRODUCER_ID,
  AT_RECORD_COUNT,
  BATCH_HEADER_BYTES,
  BATCH_MAGIC,
} from "./batch-header.js";
import { assert } from "../common/assert.js";

/** A batch's identity for idempotence: -1/-1/-1 for a producer without one. */
export interface BatchIdentity {
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly baseSequence: number;
}

export interface BatchToBuild extends BatchIdentity {
  readonly codec: CompressionCodec;
  readonly isTransactional: boolean;
  readonly records: readonly SectionRecord[];
  /** What the records section is expected to take (sizes the buffer; a guess is fine). */
  readonly sizeHint?: number;
}

/** Bytes before the length field's count starts (baseOffset and the length itself). */
const LENGTH_FIELD_END = AT_LENGTH + 4;

/** The batch, its records compressed in b.codec (none: at once, no thread-pool work). */
export async function buildBatch(b: BatchToBuild): Promise<Buffer> {
  if (b.codec === "none") return buildUncompressedBatch(b);
  const section = new KafkaWriter(b.sizeHint ?? 256);
  writeRecordsSection(section, b.records, baseTimestampOf(b.records));
  const compressed = await compress(b.codec, section.finish());
  const out = Buffer.allocUnsafe(BATCH_HEADER_BYTES + compressed.byteLength);
  compressed.copy(out, BATCH_HEADER_BYTES);
  writeHeader(out, b);
  return out;
}

/** The batch with its records uncompressed, built synchronously. */
export function buildUncompressedBatch(b: Omit<BatchToBuild, "codec">): Buffer {
  const w = new KafkaWriter(BATCH_HEADER_BYTES + (b.sizeHint ?? 256));
  w.pos = BATCH_HEADER_BYTES;
  writeRecordsSection(w, b.records, baseTimestampOf(b.records));
  const out = w.finish();
  writeHeader(out, { ...b, codec: "none" });
  return out;
}

/** Fills the 61-byte header of out (its records section already in place) and the CRC. */
function writeHeader(out: Buffer, b: BatchToBuild): void {
  const n = b.records.length;
  assert(n > 0, "a record batch holds at least one record");
  const baseTimestamp = baseTimestampOf(b.records);
  let maxTimestamp = baseTimestamp;
  for (const r of b.records) if (r.timestampMs > maxTimestamp) maxTimestamp = r.timestampMs;
  out.writeBigInt64BE(0n, AT_BASE_OFFSET);
  out.writeInt32BE(out.byteLength - LENGTH_FIELD_END, AT_LENGTH);
  out.writeInt32BE(-1, AT_LEADER_EPOCH);
  out.writeInt8(BATCH_MAGIC, AT_MAGIC);
  out.writeInt16BE((b.isTransactional ? ATTR_TRANSACTIONAL : 0) | codecId(b.codec), AT_ATTRIBUTES);
  out.writeInt32BE(n - 1, AT_LAST_OFFSET_DELTA);
  out.writeBigInt64BE(BigInt(baseTimestamp), AT_BASE_TIMESTAMP);
  out.writeBigInt64BE(BigInt(maxTimestamp), AT_MAX_TIMESTAMP);
  out.writeInt32BE(n, AT_RECORD_COUNT);
  setBatchIdentity(out, b);
}

/**
 * Sets the producer id, epoch and base sequence of a built batch in place and its CRC again
 * (they are inside it): a batch whose producer took a new identity before it was acknowledged
 * is resent with the new one, its records section (compressed or not) untouched.
 */
export function setBatchIdentity(batch: Buffer, id: BatchIdentity): void {
  batch.writeBigInt64BE(id.producerId, AT_PRODUCER_ID);
  batch.writeInt16BE(id.producerEpoch, AT_PRODUCER_EPOCH);
  batch.writeInt32BE(id.baseSequence, AT_BASE_SEQUENCE);
  batch.writeUInt32BE(crc32c(batch.subarray(AT_ATTRIBUTES)), AT_CRC);
}
