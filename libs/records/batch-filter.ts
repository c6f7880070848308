// What compaction needs of a Kafka record batch v2: each record's key, whether its value is null
// (a tombstone) and its offset delta, and the batch again with only some of its records. A
// record's bytes are self-contained relative to the batch's base offset and base timestamp
// (their deltas), so a kept record is copied byte for byte; the header keeps everything
// (base offset field, lastOffsetDelta, timestamps, producer id, epoch, base sequence, flags)
// but the record count, the length and the CRC-32C, computed again. The records section is
// inflated and compressed again in the batch's codec (thread pool); a batch left with no record
// is written uncompressed (61 bytes). This is what Kafka's cleaner writes (docs/storage.md,
// "Compaction").
import { codecId, compress, decompress } from "./compression.js";
import { crc32c } from "./crc32c.js";
import { KafkaReader } from "./kafka-codec.js";
import {
  ATTR_COMPRESSION_MASK,
  AT_ATTRIBUTES,
  AT_CRC,
  AT_LENGTH,
  AT_RECORD_COUNT,
  BATCH_HEADER_BYTES,
  readBatchHeader,
  type BatchHeader,
} from "./batch-header.js";
import { DecodeError } from "../common/decode-error.js";

/** One record of a batch, as compaction sees it. */
export interface FilterableRecord {
  readonly offsetDelta: number;
  /** A view into the section (null: the record has no key). */
  readonly key: Buffer | null;
  /** The value is null: a tombstone. */
  readonly tombstone: boolean;
  /** Where its bytes (length varint included) are in the section. */
  readonly start: number;
  readonly end: number;
}

export interface FilterableBatch {
  readonly header: BatchHeader;
  /** The records section, inflated. */
  readonly section: Buffer;
  readonly records: readonly FilterableRecord[];
}

/** The batch's records (inflated at most maxInflatedBytes); DecodeError when it does not parse. */
export async function filterableBatch(
  batch: Uint8Array,
  maxInflatedBytes: number,
): Promise<FilterableBatch> {
  const b = Buffer.from(batch.buffer, batch.byteOffset, batch.byteLength);
  const header = readBatchHeader(b);
  const section =
    header.codec === "none"
      ? b.subarray(BATCH_HEADER_BYTES)
      : await decompress(header.codec, b.subarray(BATCH_HEADER_BYTES), maxInflatedBytes);
  const r = new KafkaReader(section);
  const records: FilterableRecord[] = [];
  if (header.recordCount < 0 || header.recordCount > section.byteLength)
    throw new DecodeError("kafka", `record count ${header.recordCount} in ${section.byteLength}`);
  for (let i = 0; i < header.recordCount; i++) {
    const start = r.pos;
    const length = r.varint();
    const end = r.pos + length;
    if (length < 6 || end > r.end)
      throw new DecodeError("kafka", `record ${i} length ${length} (${r.remaining()} bytes left)`);
    r.int8(); // attributes
    r.varlong(); // timestamp delta
    const offsetDelta = r.varint();
    const keyLength = r.varint();
    const key = keyLength < 0 ? null : r.bytesOf(keyLength);
    const valueLength = r.varint();
    if (offsetDelta < 0 || offsetDelta > header.lastOffsetDelta)
      throw new DecodeError("kafka", `record ${i} offset delta ${offsetDelta}`);
    records.push({ offsetDelta, key, tombstone: valueLength < 0, start, end });
    r.pos = end;
  }
  if (r.pos !== r.end) throw new DecodeError("kafka", "bytes after the last record of a batch");
  return { header, section, records };
}

/** The batch with only the records where keep[i] (the same bytes when every one is kept). */
export async function filteredBatch(
  batch: Uint8Array,
  f: FilterableBatch,
  keep: readonly boolean[],
): Promise<Buffer> {
  const original = Buffer.from(batch.buffer, batch.byteOffset, batch.byteLength);
  if (keep.every((k) => k) && keep.length === f.records.length) return original;
  const parts: Buffer[] = [];
  let count = 0;
  for (let i = 0; i < f.records.length; i++) {
    if (!keep[i]) continue;
    const rec = f.records[i]!;
    parts.push(f.section.subarray(rec.start, rec.end));
    count++;
  }
  const codec = count === 0 ? "none" : f.header.codec;
  const plain = Buffer.concat(parts);
  const section = codec === "none" ? plain : await compress(codec, plain);
  const out = Buffer.allocUnsafe(BATCH_HEADER_BYTES + section.byteLength);
  original.copy(out, 0, 0, BATCH_HEADER_BYTES);
  section.copy(out, BATCH_HEADER_BYTES);
  out.writeInt32BE(out.byteLength - AT_LENGTH - 4, AT_LENGTH);
  const attributes = out.readInt16BE(AT_ATTRIBUTES);
  out.writeInt16BE((attributes & ~ATTR_COMPRESSION_MASK) | codecId(codec), AT_ATTRIBUTES);
  out.writeInt32BE(count, AT_RECORD_COUNT);
  out.writeUInt32BE(crc32c(out.subarray(AT_ATTRIBUTES)), AT_CRC);
  return out;
}
