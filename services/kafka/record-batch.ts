// Kafka's record batch v2 (magic 2), to and from the broker's records. Layout (Kafka protocol
// guide, "Record Batch"): baseOffset i64, batchLength i32 (bytes after it), partitionLeaderEpoch
// i32, magic i8, crc u32 (CRC-32C of attributes..end), attributes i16, lastOffsetDelta i32,
// baseTimestamp i64, maxTimestamp i64, producerId i64, producerEpoch i16, baseSequence i32,
// records: i32 count, each: length varint, attributes i8, timestampDelta varlong, offsetDelta
// varint, key (varint length, -1 null), value (likewise), headers (varint count; key, value).
// Attributes: bits 0-2 compression (none, gzip, snappy, lz4, zstd: libs/records/compression.ts),
// bit 3 timestamp type, bit 4 transactional, bit 5 control. A compressed batch's records section
// (after the record count) is the compressed stream (libs/records/records-section.ts).
import { recordSizeOfLengths, type RecordData } from "../broker/partition-entry.js";
import type { ReadBatch } from "../broker/partition-state-machine.js";
import { crc32c } from "../../libs/records/crc32c.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { decompress } from "../../libs/records/compression.js";
import {
  baseTimestampOf,
  decodeRecordsSection,
  walkRecordsSection,
  writeRecordsSection,
  type SectionShape,
  type SectionWalk,
} from "../../libs/records/records-section.js";
import {
  ATTR_COMPRESSION_MASK,
  ATTR_CONTROL,
  ATTR_LOG_APPEND_TIME,
  ATTR_TRANSACTIONAL,
  AT_ATTRIBUTES,
  AT_BASE_SEQUENCE,
  AT_BASE_TIMESTAMP,
  AT_CRC,
  AT_LAST_OFFSET_DELTA,
  AT_LENGTH,
  AT_MAGIC,
  AT_MAX_TIMESTAMP,
  AT_PRODUCER_EPOCH,
  AT_PRODUCER_ID,
  AT_RECORD_COUNT,
  BATCH_HEADER_BYTES,
  BATCH_MAGIC,
  codecId,
  codecOf,
  type CompressionCodec,
} from "../../libs/records/batch-header.js";
import { isDecodeError } from "../../libs/common/decode-error.js";

/** The CRC-32C covers the batch from its attributes field to the end. */
const CRC_FROM = AT_ATTRIBUTES;
/** Bytes before the length field's count starts (baseOffset and the length itself). */
const LENGTH_FIELD_END = AT_LENGTH + 4;
/** A decompressed records section may be at most this large (a batch is bounded by the frame, its inflation too). */
export const DECOMPRESSED_BYTES_MAX = 64 * 1024 * 1024;

export interface DecodedBatch {
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly baseSequence: number;
  readonly isTransactional: boolean;
  readonly isControl: boolean;
  readonly compression: number;
  readonly records: RecordData[];
  /**
   * The batch's bytes (a view into the request), when the partition may store it as sent: its
   * header agrees with its records (lastOffsetDelta, offset deltas 0.., maxTimestamp, every
   * record with a create time), so apply() and every fetch can trust the header alone.
   * Otherwise undefined: the records are stored decoded, as before (docs/kafka-protocol.md).
   */
  readonly asSent: Buffer | undefined;
  /** Bytes the records section inflated to (0 when not compressed). */
  readonly inflatedBytes: number;
  /**
   * Set when the records were walked, not decoded (an uncompressed batch stored as sent):
   * `records` is then empty and this says what the partition's checks need.
   */
  readonly walked?: WalkedRecords;
}

/** An uncompressed batch's records as walked: their count and what the produce checks read. */
export interface WalkedRecords extends Omit<
  SectionWalk,
  "offsetDeltasInOrder" | "everyTimestamped"
> {
  readonly count: number;
}

/**
 * Most bytes a compressed section can inflate to per byte of it: deflate's maximum ratio is
 * 1032:1, LZ4's 255:1. Snappy (its declared length is allocated) and zstd (RLE blocks) get the
 * batch bound outright.
 */
const INFLATION_RATIO_MAX: Partial<Record<CompressionCodec, number>> = { gzip: 1032, lz4: 255 };

/**
 * What the batch in a Produce partition's `records` bytes may inflate to, from its header alone
 * (0 when not compressed, or when it is refused before anything inflates).
 */
export function inflationBound(bytes: Buffer): number {
  if (bytes.byteLength < BATCH_HEADER_BYTES) return 0;
  const codec = codecOf(bytes.readInt16BE(AT_ATTRIBUTES) & ATTR_COMPRESSION_MASK);
  if (codec === undefined || codec === "none") return 0;
  const ratio = INFLATION_RATIO_MAX[codec];
  const section = bytes.byteLength - BATCH_HEADER_BYTES;
  return ratio === undefined
    ? DECOMPRESSED_BYTES_MAX
    : Math.min(DECOMPRESSED_BYTES_MAX, section * ratio + 1024);
}

/** A refusal of a batch: the Kafka error name and why. */
export class BatchRefusal extends Error {
  constructor(
    readonly errorName:
      | "CORRUPT_MESSAGE"
      | "UNSUPPORTED_COMPRESSION_TYPE"
      | "INVALID_RECORD"
      | "UNSUPPORTED_FOR_MESSAGE_FORMAT",
    message: string,
  ) {
    super(message);
    this.name = "BatchRefusal";
  }
}

/** The batches of a partition's `records` bytes, checksums verified (decompressed in the thread pool). */
export async function decodeBatches(bytes: Buffer): Promise<DecodedBatch[]> {
  const out: DecodedBatch[] = [];
  for (const b of splitBatches(bytes)) out.push(await decodeBatch(b));
  return out;
}

/**
 * The one batch of a Produce partition's `records` bytes. The batches are counted from their
 * headers before any is checked or inflated: work follows the bytes sent, not their inflation.
 * An uncompressed batch that is stored as sent is walked, not decoded (`walked`, no records).
 */
export async function decodeOnlyBatch(bytes: Buffer): Promise<DecodedBatch> {
  return decodeBatch(onlyBatch(bytes), true);
}

/**
 * The one batch of `bytes` when its records are not compressed (checked on the spot: nothing
 * to inflate), else undefined: the caller goes through decodeOnlyBatch. Refusals as there.
 */
export function decodeOnlyPlainBatch(bytes: Buffer): DecodedBatch | undefined {
  const b = onlyBatch(bytes);
  return checkedCodec(b) === "none" ? decodeChecked(b, undefined, true) : undefined;
}

function onlyBatch(bytes: Buffer): Buffer {
  const batches = splitBatches(bytes);
  if (batches.length !== 1)
    throw new BatchRefusal(
      "INVALID_RECORD",
      `${batches.length} record batches for one partition; send exactly one`,
    );
  return batches[0]!;
}

/** Each batch's bytes, by the length fields alone (nothing is checked or inflated). */
function splitBatches(bytes: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let at = 0;
  while (at < bytes.byteLength) {
    if (bytes.byteLength - at < BATCH_HEADER_BYTES)
      throw new BatchRefusal(
        "CORRUPT_MESSAGE",
        `a record batch is cut short (${bytes.byteLength - at} bytes)`,
      );
    const length = bytes.readInt32BE(at + AT_LENGTH);
    const end = at + LENGTH_FIELD_END + length;
    if (length < BATCH_HEADER_BYTES - LENGTH_FIELD_END || end > bytes.byteLength)
      throw new BatchRefusal(
        "CORRUPT_MESSAGE",
        `record batch length ${length} does not fit the ${bytes.byteLength - at} bytes sent`,
      );
    out.push(bytes.subarray(at, end));
    at = end;
  }
  return out;
}

async function decodeBatch(b: Buffer, walkWhenStoredAsSent = false): Promise<DecodedBatch> {
  const codec = checkedCodec(b);
  return decodeChecked(
    b,
    codec === "none" ? undefined : await inflate(codec, b.subarray(BATCH_HEADER_BYTES)),
    walkWhenStoredAsSent,
  );
}

/** Magic and CRC checked; the records' codec. */
function checkedCodec(b: Buffer): CompressionCodec {
  const magic = b.readInt8(AT_MAGIC);
  if (magic !== BATCH_MAGIC)
    throw new BatchRefusal(
      "UNSUPPORTED_FOR_MESSAGE_FORMAT",
      `record batch magic ${magic}: only magic 2 (Kafka 0.11+) is accepted`,
    );
  const crc = b.readUInt32BE(AT_CRC);
  if (crc32c(b.subarray(CRC_FROM)) !== crc)
    throw new BatchRefusal("CORRUPT_MESSAGE", "record batch CRC-32C mismatch");
  const compression = b.readInt16BE(AT_ATTRIBUTES) & ATTR_COMPRESSION_MASK;
  const codec = codecOf(compression);
  if (codec === undefined)
    throw new BatchRefusal(
      "UNSUPPORTED_COMPRESSION_TYPE",
      `compression codec ${compression} is not one of none, gzip, snappy, lz4, zstd`,
    );
  return codec;
}

/** The records of a checked batch: from its own bytes, or from `section` (its inflated records). */
function decodeChecked(
  b: Buffer,
  section: Buffer | undefined,
  walkWhenStoredAsSent = false,
): DecodedBatch {
  const attributes = b.readInt16BE(AT_ATTRIBUTES);
  const baseTimestamp = Number(b.readBigInt64BE(AT_BASE_TIMESTAMP));
  const count = b.readInt32BE(AT_RECORD_COUNT);
  const header = {
    producerId: b.readBigInt64BE(AT_PRODUCER_ID),
    producerEpoch: b.readInt16BE(AT_PRODUCER_EPOCH),
    baseSequence: b.readInt32BE(AT_BASE_SEQUENCE),
    isTransactional: (attributes & ATTR_TRANSACTIONAL) !== 0,
    isControl: (attributes & ATTR_CONTROL) !== 0,
    compression: attributes & ATTR_COMPRESSION_MASK,
  };
  if (section === undefined && walkWhenStoredAsSent) {
    const walked = walkedAsSent(b, attributes, baseTimestamp, count);
    if (walked !== undefined)
      return { ...header, records: [], asSent: b, inflatedBytes: 0, walked };
  }
  const r =
    section === undefined ? new KafkaReader(b, BATCH_HEADER_BYTES) : new KafkaReader(section);
  let records: RecordData[];
  const shape: SectionShape = { offsetDeltasInOrder: true };
  try {
    records = decodeRecordsSection(r, count, baseTimestamp, shape);
  } catch (e) {
    if (isDecodeError(e, "kafka"))
      throw new BatchRefusal("CORRUPT_MESSAGE", `record batch: ${e.message}`);
    throw e;
  }
  return {
    ...header,
    records,
    asSent: storableAsSent(b, attributes, records, shape) ? b : undefined,
    inflatedBytes: section?.byteLength ?? 0,
  };
}

/**
 * An uncompressed batch that storableAsSent would accept, checked by walking its records (no
 * record objects, no copies); undefined for any other (decodeChecked then decodes it as before,
 * which also names what is wrong with a malformed one).
 */
function walkedAsSent(
  b: Buffer,
  attributes: number,
  baseTimestamp: number,
  count: number,
): WalkedRecords | undefined {
  if (count <= 0 || (attributes & (ATTR_CONTROL | ATTR_LOG_APPEND_TIME)) !== 0) return undefined;
  if (b.readInt32BE(AT_LAST_OFFSET_DELTA) !== count - 1) return undefined;
  let walk: SectionWalk;
  try {
    walk = walkRecordsSection(
      new KafkaReader(b, BATCH_HEADER_BYTES),
      count,
      baseTimestamp,
      recordSizeOfLengths,
    );
  } catch (e) {
    if (isDecodeError(e, "kafka")) return undefined;
    throw e;
  }
  if (
    !walk.offsetDeltasInOrder ||
    !walk.everyTimestamped ||
    Number(b.readBigInt64BE(AT_MAX_TIMESTAMP)) !== walk.maxTimestampMs
  )
    return undefined;
  const { minTimestampMs, maxTimestampMs, keylessRecords, totalRecordBytes } = walk;
  return { count, minTimestampMs, maxTimestampMs, keylessRecords, totalRecordBytes };
}

/** Whether the header alone tells what apply() and a fetch need (else the records are re-encoded). */
function storableAsSent(
  b: Buffer,
  attributes: number,
  records: readonly RecordData[],
  shape: SectionShape,
): boolean {
  if (
    records.length === 0 ||
    !shape.offsetDeltasInOrder ||
    (attributes & (ATTR_CONTROL | ATTR_LOG_APPEND_TIME)) !== 0
  )
    return false;
  if (b.readInt32BE(AT_LAST_OFFSET_DELTA) !== records.length - 1) return false;
  let max = 0;
  for (const r of records) {
    // A record without a create time gets the append time when read: only re-encoding shows that.
    if (!(r.timestampMs > 0)) return false;
    if (r.timestampMs > max) max = r.timestampMs;
  }
  return Number(b.readBigInt64BE(AT_MAX_TIMESTAMP)) === max;
}

async function inflate(codec: CompressionCodec, compressed: Buffer): Promise<Buffer> {
  try {
    return await decompress(codec, compressed, DECOMPRESSED_BYTES_MAX);
  } catch (e) {
    if (isDecodeError(e, "compression"))
      throw new BatchRefusal("CORRUPT_MESSAGE", `${codec} records section: ${e.message}`);
    throw e;
  }
}

/** A fetched batch, optionally covering offsets after its last record. */
export interface BatchToEncode extends ReadBatch {
  /** At least records.length - 1: covers offsets after the last record (filtered ones). */
  readonly lastOffsetDelta?: number | undefined;
  /** A control batch (a transaction marker): controlBatchBytes. */
  readonly isControl?: boolean;
}

/**
 * A batch of no records covering [baseOffset, baseOffset + lastOffsetDelta]: offsets whose
 * records were filtered out (as the log cleaner leaves them), so a client moves past them.
 */
export function encodeEmptyBatch(
  w: KafkaWriter,
  baseOffset: bigint,
  lastOffsetDelta: number,
): void {
  encodeBatch(w, {
    baseOffset,
    producerId: -1n,
    producerEpoch: -1,
    baseSequence: -1,
    isTransactional: false,
    records: [],
    lastOffsetDelta,
  });
}

/**
 * A records section compressed by the caller: `baseTimestampMs` is what its timestamp deltas
 * count from when the section was written by someone else (else the records' smallest).
 */
export interface CompressedSection {
  readonly codec: CompressionCodec;
  readonly section: Buffer;
  readonly baseTimestampMs?: number;
}

/** Writes one batch (create-time timestamps) at w's position; records compressed by the caller when given. */
export function encodeBatch(
  w: KafkaWriter,
  b: BatchToEncode,
  compressed?: CompressedSection,
): void {
  const start = w.pos;
  const n = b.records.length;
  const baseTimestamp = compressed?.baseTimestampMs ?? baseTimestampOf(b.records);
  let maxTimestamp = baseTimestamp;
  for (const r of b.records) if (r.timestampMs > maxTimestamp) maxTimestamp = r.timestampMs;
  w.int64(b.baseOffset);
  const lengthAt = w.reserveInt32();
  w.int32(-1); // partition leader epoch: not tracked
  w.int8(BATCH_MAGIC);
  const crcAt = w.reserveInt32();
  const crcFrom = w.pos;
  w.int16(
    (b.isTransactional ? ATTR_TRANSACTIONAL : 0) |
      (b.isControl ? ATTR_CONTROL : 0) |
      (compressed ? codecId(compressed.codec) : 0),
  );
  w.int32(Math.max(0, n - 1, b.lastOffsetDelta ?? 0));
  w.int64(baseTimestamp);
  w.int64(maxTimestamp);
  w.int64(b.producerId);
  w.int16(b.producerEpoch);
  w.int32(b.baseSequence);
  w.int32(n);
  if (compressed) w.raw(compressed.section);
  else writeRecordsSection(w, b.records, baseTimestamp);
  w.fillInt32(lengthAt, w.pos - start - 12);
  w.fillUint32(crcAt, crc32c(w.view(crcFrom)));
}

/** One batch as a buffer of its own (encodeBatch's layout), baseOffset 0: the form a partition stores. */
export function batchBytes(
  b: Omit<BatchToEncode, "baseOffset">,
  compressed?: CompressedSection,
): Buffer {
  // The records section sizes the rest exactly (writeRecordsSection grows the writer once).
  const w = new KafkaWriter(BATCH_HEADER_BYTES + (compressed?.section.byteLength ?? 0));
  encodeBatch(w, { ...b, baseOffset: 0n }, compressed);
  return w.finish();
}

/** Kafka's control record: key (version 0, type 0 abort / 1 commit), value (version 0, coordinator epoch). */
export interface ControlMarker {
  readonly baseOffset: bigint;
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly commit: boolean;
  readonly coordinatorEpoch: number;
  readonly timestampMs: number;
}

/** A transaction marker as Kafka's control batch (transactional, control, one record), baseOffset set. */
export function controlBatchBytes(m: ControlMarker): Buffer {
  const key = Buffer.alloc(4);
  key.writeInt16BE(0, 0);
  key.writeInt16BE(m.commit ? 1 : 0, 2);
  const value = Buffer.alloc(6);
  value.writeInt16BE(0, 0);
  value.writeInt32BE(m.coordinatorEpoch, 2);
  const w = new KafkaWriter(128);
  encodeBatch(w, {
    baseOffset: m.baseOffset,
    producerId: m.producerId,
    producerEpoch: m.producerEpoch,
    baseSequence: -1, // control batches have none
    isTransactional: true,
    isControl: true,
    records: [{ key, value, headers: [], timestampMs: m.timestampMs }],
  });
  return w.finish();
}

/** The records section of a batch, uncompressed: what a codec compresses for encodeBatch. */
export function recordsSection(b: BatchToEncode): Buffer {
  const w = new KafkaWriter(1024);
  writeRecordsSection(w, b.records, baseTimestampOf(b.records));
  return w.finish();
}
