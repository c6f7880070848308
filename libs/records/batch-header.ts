// The fixed 61-byte header of Kafka's record batch v2 (Kafka protocol guide, "Record Batch"),
// read in place from a batch's bytes: the broker stores a Kafka producer's batch as sent
// (docs/storage.md, "Payload kinds") and learns everything apply() needs from this header, so
// followers never inflate it. baseOffset and partitionLeaderEpoch lie outside the CRC-32C (it
// covers attributes to the end), so a fetch patches them without recomputing the checksum, as
// Kafka's broker does.
import { DecodeError } from "../common/decode-error.js";

export const BATCH_HEADER_BYTES = 61;
export const BATCH_MAGIC = 2;
/** Byte positions of the header's fields. */
export const AT_BASE_OFFSET = 0;
export const AT_LENGTH = 8;
export const AT_LEADER_EPOCH = 12;
export const AT_MAGIC = 16;
export const AT_CRC = 17;
export const AT_ATTRIBUTES = 21;
export const AT_LAST_OFFSET_DELTA = 23;
export const AT_BASE_TIMESTAMP = 27;
export const AT_MAX_TIMESTAMP = 35;
export const AT_PRODUCER_ID = 43;
export const AT_PRODUCER_EPOCH = 51;
export const AT_BASE_SEQUENCE = 53;
export const AT_RECORD_COUNT = 57;

/** Attribute bits 0-2: the records' codec, numbered as here (compression.ts does the work). */
export const ATTR_COMPRESSION_MASK = 0x07;
export const ATTR_LOG_APPEND_TIME = 0x08;
export const ATTR_TRANSACTIONAL = 0x10;
export const ATTR_CONTROL = 0x20;

export const CODECS = ["none", "gzip", "snappy", "lz4", "zstd"] as const;
export type CompressionCodec = (typeof CODECS)[number];

/** Kafka's attribute number of a codec. */
export function codecId(codec: CompressionCodec): number {
  return CODECS.indexOf(codec);
}

/** The codec with Kafka's attribute number id, or undefined for an unknown number. */
export function codecOf(id: number): CompressionCodec | undefined {
  return CODECS[id];
}

export function isCodec(s: string): s is CompressionCodec {
  return (CODECS as readonly string[]).includes(s);
}

export interface BatchHeader {
  readonly codec: CompressionCodec;
  readonly isTransactional: boolean;
  readonly isControl: boolean;
  readonly logAppendTime: boolean;
  readonly lastOffsetDelta: number;
  readonly baseTimestampMs: number;
  readonly maxTimestampMs: number;
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly baseSequence: number;
  readonly recordCount: number;
}

/** The header of the one batch in `b` (its length field must cover b exactly); the CRC is not checked here. */
export function readBatchHeader(b: Uint8Array): BatchHeader {
  if (b.byteLength < BATCH_HEADER_BYTES)
    throw new DecodeError(
      "batch-header",
      `a record batch of ${b.byteLength} bytes (the header alone is ${BATCH_HEADER_BYTES})`,
    );
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const length = v.getInt32(AT_LENGTH);
  if (length !== b.byteLength - 12)
    throw new DecodeError(
      "batch-header",
      `record batch length ${length} does not match its ${b.byteLength} bytes`,
    );
  const magic = v.getInt8(AT_MAGIC);
  if (magic !== BATCH_MAGIC) throw new DecodeError("batch-header", `record batch magic ${magic}`);
  const attributes = v.getInt16(AT_ATTRIBUTES);
  const codec = codecOf(attributes & ATTR_COMPRESSION_MASK);
  if (codec === undefined)
    throw new DecodeError(
      "batch-header",
      `compression codec ${attributes & ATTR_COMPRESSION_MASK}`,
    );
  return {
    codec,
    isTransactional: (attributes & ATTR_TRANSACTIONAL) !== 0,
    isControl: (attributes & ATTR_CONTROL) !== 0,
    logAppendTime: (attributes & ATTR_LOG_APPEND_TIME) !== 0,
    lastOffsetDelta: v.getInt32(AT_LAST_OFFSET_DELTA),
    baseTimestampMs: Number(v.getBigInt64(AT_BASE_TIMESTAMP)),
    maxTimestampMs: Number(v.getBigInt64(AT_MAX_TIMESTAMP)),
    producerId: v.getBigInt64(AT_PRODUCER_ID),
    producerEpoch: v.getInt16(AT_PRODUCER_EPOCH),
    baseSequence: v.getInt32(AT_BASE_SEQUENCE),
    recordCount: v.getInt32(AT_RECORD_COUNT),
  };
}

/**
 * Sets the batch's baseOffset and partitionLeaderEpoch in place (b is the caller's copy: a
 * fetch answer's buffer). Both are outside the CRC, so the batch stays valid.
 */
export function patchBatchOffsets(
  b: Uint8Array,
  baseOffset: bigint,
  partitionLeaderEpoch: number,
): void {
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  v.setBigInt64(AT_BASE_OFFSET, baseOffset);
  v.setInt32(AT_LEADER_EPOCH, partitionLeaderEpoch);
}
