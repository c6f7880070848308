// Reads one Kafka record batch v2 (magic 2): its header, its CRC-32C checked (attributes to the
// end, as Kafka computes it), its records section inflated in its codec up to a bound, and each
// record with its offset (baseOffset + offsetDelta) and timestamp (create time: base +
// delta; log append time: the batch's maxTimestamp). Every count and length is checked against
// the bytes that must hold it before anything is allocated; a batch that does not parse is a
// DecodeError naming what is wrong. Records are handed to a caller's constructor, so a reader
// builds its own record type in one pass; keys and values are copies (a kept record never pins
// the buffer it came from) and keep null apart from empty.
import { decompress } from "./compression.js";
import { crc32c } from "./crc32c.js";
import {
  AT_ATTRIBUTES,
  AT_BASE_OFFSET,
  AT_CRC,
  BATCH_HEADER_BYTES,
  readBatchHeader,
  type BatchHeader,
} from "./batch-header.js";
import type { SectionHeader } from "./records-section.js";
import { DecodeError } from "../common/decode-error.js";

/** A batch's records section may inflate to at most this much unless the caller says otherwise. */
export const INFLATED_BYTES_MAX = 64 * 1024 * 1024;

export interface ReadHeader extends BatchHeader {
  readonly baseOffset: bigint;
}

/** Builds the caller's record from one record's fields. */
export type RecordConstructor<R> = (
  offset: bigint,
  timestampMs: number,
  key: Buffer | null,
  value: Buffer | null,
  headers: readonly SectionHeader[],
) => R;

export interface ReadBatch<R> {
  readonly header: ReadHeader;
  readonly records: R[];
}

/** The smallest record: length, attributes, timestamp and offset deltas, key, value, header count. */
const RECORD_BYTES_MIN = 7;
/** A header: key length and value length varints. */
const HEADER_BYTES_MIN = 2;
const NO_HEADERS: readonly SectionHeader[] = Object.freeze([]);

/**
 * The header of the one batch in b (its length field covering b exactly), its CRC-32C checked
 * unless checkCrc is false (a reader that trusts its source, or a control batch it skips).
 */
export function readCheckedHeader(b: Buffer, checkCrc = true): ReadHeader {
  const header = readBatchHeader(b);
  if (checkCrc) checkBatchCrc(b);
  return { ...header, baseOffset: b.readBigInt64BE(AT_BASE_OFFSET) };
}

/** DecodeError unless the batch's CRC-32C (attributes to the end) is the one stored in it. */
export function checkBatchCrc(b: Buffer): void {
  const stored = b.readUInt32BE(AT_CRC);
  const computed = crc32c(b.subarray(AT_ATTRIBUTES));
  if (stored !== computed)
    throw new DecodeError(
      "batch-header",
      `record batch CRC-32C mismatch (stored ${stored.toString(16)}, computed ${computed.toString(16)})`,
    );
}

/** The batch's header and records, its section inflated (at most maxInflatedBytes) when compressed. */
export async function readBatch<R>(
  b: Buffer,
  make: RecordConstructor<R>,
  options: { checkCrc?: boolean; maxInflatedBytes?: number } = {},
): Promise<ReadBatch<R>> {
  const header = readCheckedHeader(b, options.checkCrc);
  const compressed = b.subarray(BATCH_HEADER_BYTES);
  const section =
    header.codec === "none"
      ? compressed
      : await decompress(header.codec, compressed, options.maxInflatedBytes ?? INFLATED_BYTES_MAX);
  return { header, records: readRecords(section, header, make) };
}

/** An uncompressed batch's header and records, read at once (DecodeError for a compressed one). */
export function readUncompressedBatch<R>(
  b: Buffer,
  make: RecordConstructor<R>,
  options: { checkCrc?: boolean } = {},
): ReadBatch<R> {
  const header = readCheckedHeader(b, options.checkCrc);
  if (header.codec !== "none")
    throw new DecodeError("batch-header", `a ${header.codec} batch read as uncompressed`);
  return { header, records: readRecords(b.subarray(BATCH_HEADER_BYTES), header, make) };
}

/** The records of a section (all of s, exactly header.recordCount of them). */
export function readRecords<R>(s: Buffer, header: ReadHeader, make: RecordConstructor<R>): R[] {
  const count = header.recordCount;
  if (count < 0 || count * RECORD_BYTES_MIN > s.byteLength)
    throw new DecodeError("kafka", `record count ${count} in ${s.byteLength} bytes`);
  const r = new SectionReader(s);
  const records: R[] = [];
  const base = header.baseOffset;
  const baseIsSmall = base >= 0n && base < BigInt(Number.MAX_SAFE_INTEGER) - 2n ** 32n;
  const baseNumber = Number(base);
  for (let i = 0; i < count; i++) {
    const length = r.varint();
    const recordEnd = r.pos + length;
    if (length < RECORD_BYTES_MIN - 1 || recordEnd > s.byteLength)
      throw new DecodeError(
        "kafka",
        `record ${i} length ${length} (${s.byteLength - r.pos} bytes left)`,
      );
    r.pos += 1; // record attributes: unused
    const timestampDelta = r.varlong();
    const offsetDelta = r.varint();
    const key = r.bytes(recordEnd);
    const value = r.bytes(recordEnd);
    const headerCount = r.varint();
    let headers = NO_HEADERS;
    if (headerCount !== 0) {
      if (headerCount < 0 || headerCount * HEADER_BYTES_MIN > recordEnd - r.pos)
        throw new DecodeError(
          "kafka",
          `header count ${headerCount} in the record's last ${recordEnd - r.pos} bytes`,
        );
      const list: SectionHeader[] = [];
      for (let h = 0; h < headerCount; h++) {
        const hk = r.bytes(recordEnd);
        if (hk === null) throw new DecodeError("kafka", "a header key is null");
        list.push({ key: hk.toString("utf8"), value: r.bytes(recordEnd) });
      }
      headers = list;
    }
    if (r.pos !== recordEnd)
      throw new DecodeError("kafka", `record ${i} length ${length} disagrees with its fields`);
    const offset = baseIsSmall ? BigInt(baseNumber + offsetDelta) : base + BigInt(offsetDelta);
    const timestampMs = header.logAppendTime
      ? header.maxTimestampMs
      : header.baseTimestampMs + timestampDelta;
    records.push(make(offset, timestampMs, key, value, headers));
  }
  if (r.pos !== s.byteLength)
    throw new DecodeError(
      "kafka",
      `${s.byteLength - r.pos} bytes after the last record of a batch`,
    );
  return records;
}

/** Zigzag varints and length-prefixed bytes of a records section, every read bounds-checked. */
class SectionReader {
  pos = 0;
  constructor(private readonly s: Buffer) {}

  private byte(): number {
    if (this.pos >= this.s.byteLength) throw new DecodeError("kafka", "a record is cut short");
    return this.s[this.pos++]!;
  }

  /** Zigzag varint (int32); one-byte values (most lengths and deltas) without a loop. */
  varint(): number {
    const b = this.s[this.pos];
    if (b !== undefined && b < 128) {
      this.pos++;
      return b & 1 ? -((b + 1) / 2) : b / 2;
    }
    const s = this.s;
    let pos = this.pos;
    let u = 0;
    let scale = 1;
    for (let i = 0; i < 5 && pos < s.byteLength; i++) {
      const b = s[pos++]!;
      u += (b & 127) * scale;
      if (b < 128) {
        this.pos = pos;
        return u % 2 === 0 ? u / 2 : -(u + 1) / 2;
      }
      scale *= 128;
    }
    if (pos >= s.byteLength) throw new DecodeError("kafka", "a record is cut short");
    throw new DecodeError("kafka", "varint longer than 5 bytes");
  }

  /** Zigzag varlong as a number (timestamp deltas fit; exact below 2^53). */
  varlong(): number {
    const b = this.s[this.pos];
    if (b !== undefined && b < 128) {
      this.pos++;
      return b & 1 ? -((b + 1) / 2) : b / 2;
    }
    let u = 0;
    for (let shift = 0; shift < 70; shift += 7) {
      const b = this.byte();
      u += (b & 127) * 2 ** shift;
      if (b < 128) return u % 2 === 0 ? u / 2 : -(u + 1) / 2;
    }
    throw new DecodeError("kafka", "varlong longer than 10 bytes");
  }

  /** Varint-length bytes (-1: null), a copy, ending at or before end. */
  bytes(end: number): Buffer | null {
    const n = this.varint();
    if (n === -1) return null;
    if (n < -1 || this.pos + n > end)
      throw new DecodeError(
        "kafka",
        `a field of ${n} bytes in the record's last ${end - this.pos}`,
      );
    const out = Buffer.allocUnsafe(n);
    out.set(this.s.subarray(this.pos, this.pos + n));
    this.pos += n;
    return out;
  }
}
