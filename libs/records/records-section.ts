// The records of a Kafka record batch v2, after its 61-byte header and record count (Kafka
// protocol guide, "Record"): each record is length varint, attributes i8, timestampDelta varlong,
// offsetDelta varint, key and value (varint length, -1 for null), headers (varint count; key,
// value). This is the part a codec compresses, so the Kafka listener and the TypeScript
// Producer's compressed batches share it. Keys and values keep null apart from empty.
import { KafkaReader, KafkaWriter } from "./kafka-codec.js";
import { DecodeError } from "../common/decode-error.js";

export interface SectionHeader {
  readonly key: string;
  readonly value: Uint8Array | null;
}

export interface SectionRecord {
  readonly key: Uint8Array | null;
  readonly value: Uint8Array | null;
  readonly headers: readonly SectionHeader[];
  readonly timestampMs: number;
}

/** A record's fields after its length: attributes, timestamp and offset deltas, key, value, header count (1 byte each at least). */
const RECORD_BODY_BYTES_MIN = 6;
/** A record with its length varint. */
const RECORD_BYTES_MIN = 1 + RECORD_BODY_BYTES_MIN;
/** A header: key length and value length varints. */
const HEADER_BYTES_MIN = 2;

/** What decoding saw of a section beyond its records: whether it can be stored as sent. */
export interface SectionShape {
  /** Every record's offset delta is its position (0, 1, ...), as producers write them. */
  offsetDeltasInOrder: boolean;
}

/**
 * count records from r (through r.end exactly); DecodeError when they do not parse.
 * Offset deltas are ignored (the broker assigns offsets) but reported through shape, and each
 * pushed to offsetDeltas when given (a cleaned batch's records are not at their positions).
 */
export function decodeRecordsSection(
  r: KafkaReader,
  count: number,
  baseTimestamp: number,
  shape?: SectionShape,
  offsetDeltas?: number[],
): SectionRecord[] {
  const records: SectionRecord[] = [];
  readSection(r, count, baseTimestamp, (i, timestampMs, offsetDelta, recordEnd) => {
    if (offsetDelta !== i && shape !== undefined) shape.offsetDeltasInOrder = false;
    offsetDeltas?.push(offsetDelta);
    const key = varBytes(r);
    const value = varBytes(r);
    const headerCount = readHeaderCount(r, recordEnd);
    const headers: SectionHeader[] = [];
    for (let h = 0; h < headerCount; h++) headers.push({ key: headerKey(r), value: varBytes(r) });
    records.push({ key, value, headers, timestampMs });
  });
  return records;
}

/** What walking a section found: enough to check and store a batch without its records. */
export interface SectionWalk {
  /** Every record's offset delta is its position (0, 1, ...). */
  readonly offsetDeltasInOrder: boolean;
  /** Every record has a create time (> 0). */
  readonly everyTimestamped: boolean;
  readonly minTimestampMs: number;
  readonly maxTimestampMs: number;
  /** Records whose key is null (a compacted topic refuses them). */
  readonly keylessRecords: number;
  /** The sum of the records' recordBytes. */
  readonly totalRecordBytes: number;
}

/** A record's size as the caller counts it, from its field lengths (null key or value: 0). */
export type RecordBytes = (
  keyBytes: number,
  valueBytes: number,
  headers: readonly { readonly keyBytes: number; readonly valueBytes: number }[],
) => number;

/**
 * Walks count records of r (through r.end exactly) as decodeRecordsSection reads them, checking
 * the same things (DecodeError when they do not parse), without building a record or copying a
 * byte: a batch stored as sent only needs its records checked.
 */
export function walkRecordsSection(
  r: KafkaReader,
  count: number,
  baseTimestamp: number,
  recordBytes: RecordBytes,
): SectionWalk {
  let offsetDeltasInOrder = true;
  let everyTimestamped = true;
  let minTimestampMs = Infinity;
  let maxTimestampMs = -Infinity;
  let keylessRecords = 0;
  let totalRecordBytes = 0;
  const noHeaders: { keyBytes: number; valueBytes: number }[] = [];
  readSection(r, count, baseTimestamp, (i, timestampMs, offsetDelta, recordEnd) => {
    if (offsetDelta !== i) offsetDeltasInOrder = false;
    const keyLength = r.varint();
    if (keyLength < -1) throw new DecodeError("kafka", `length ${keyLength}`);
    if (keyLength === -1) keylessRecords += 1;
    else r.bytesOf(keyLength);
    const keyBytes = Math.max(keyLength, 0);
    const valueBytes = skipVarBytes(r);
    const headerCount = readHeaderCount(r, recordEnd);
    let headers = noHeaders;
    if (headerCount > 0) {
      headers = [];
      // Counted as the decoded string's UTF-8 (what decodeRecordsSection's key takes).
      for (let h = 0; h < headerCount; h++)
        headers.push({ keyBytes: Buffer.byteLength(headerKey(r)), valueBytes: skipVarBytes(r) });
    }
    if (!(timestampMs > 0)) everyTimestamped = false;
    if (timestampMs < minTimestampMs) minTimestampMs = timestampMs;
    if (timestampMs > maxTimestampMs) maxTimestampMs = timestampMs;
    totalRecordBytes += recordBytes(keyBytes, valueBytes, headers);
  });
  return {
    offsetDeltasInOrder,
    everyTimestamped,
    minTimestampMs,
    maxTimestampMs,
    keylessRecords,
    totalRecordBytes,
  };
}

/**
 * The framing decodeRecordsSection and walkRecordsSection share: each record's length,
 * attributes, timestamp and offset delta; readFields reads the rest (where the two differ).
 */
function readSection(
  r: KafkaReader,
  count: number,
  baseTimestamp: number,
  readFields: (i: number, timestampMs: number, offsetDelta: number, recordEnd: number) => void,
): void {
  // Counts are checked against the bytes that must hold them before anything is allocated.
  if (count < 0 || count * RECORD_BYTES_MIN > r.remaining())
    throw new DecodeError("kafka", `record count ${count} in ${r.remaining()} bytes`);
  for (let i = 0; i < count; i++) {
    const length = r.varint();
    const recordEnd = r.pos + length;
    if (length < RECORD_BODY_BYTES_MIN || recordEnd > r.end)
      throw new DecodeError("kafka", `record ${i} length ${length} (${r.remaining()} bytes left)`);
    r.int8(); // record attributes: unused
    const timestampMs = baseTimestamp + r.varlong();
    const offsetDelta = r.varint();
    readFields(i, timestampMs, offsetDelta, recordEnd);
    if (r.pos !== recordEnd)
      throw new DecodeError("kafka", `record ${i} length ${length} disagrees with its fields`);
  }
  if (r.pos !== r.end) throw new DecodeError("kafka", "bytes after the last record of a batch");
}

/** A record's header count, checked against the bytes left in the record. */
function readHeaderCount(r: KafkaReader, recordEnd: number): number {
  const n = r.varint();
  if (n < 0 || n * HEADER_BYTES_MIN > recordEnd - r.pos)
    throw new DecodeError(
      "kafka",
      `header count ${n} in the record's last ${recordEnd - r.pos} bytes`,
    );
  return n;
}

/** A header's key: varint-length UTF-8, never null. */
function headerKey(r: KafkaReader): string {
  const n = r.varint();
  if (n === -1) throw new DecodeError("kafka", "a header key is null");
  if (n < -1) throw new DecodeError("kafka", `length ${n}`);
  return r.bytesOf(n).toString("utf8");
}

/** Skips varint-length bytes (-1: null), bounds-checked; their length (0 for null). */
function skipVarBytes(r: KafkaReader): number {
  const n = r.varint();
  if (n === -1) return 0;
  if (n < -1) throw new DecodeError("kafka", `length ${n}`);
  r.bytesOf(n);
  return n;
}

/**
 * Writes the records at w's position, timestamps relative to baseTimestamp, offset deltas 0..
 * Sized first, so the writer grows at most once and every key and value is copied once.
 */
export function writeRecordsSection(
  w: KafkaWriter,
  records: readonly SectionRecord[],
  baseTimestamp: number,
): void {
  const bodies = new Array<number>(records.length);
  let total = 0;
  for (let i = 0; i < records.length; i++) {
    const body = recordBodyBytes(records[i]!, i, baseTimestamp);
    bodies[i] = body;
    total += zigzagBytes(body) + body;
  }
  w.ensure(total);
  for (let i = 0; i < records.length; i++) {
    const r = records[i]!;
    w.varint(bodies[i]!);
    w.int8(0);
    writeTimestampDelta(w, r.timestampMs - baseTimestamp);
    w.varint(i);
    writeVarBytes(w, r.key);
    writeVarBytes(w, r.value);
    w.varint(r.headers.length);
    for (const h of r.headers) {
      writeVarBytes(w, Buffer.from(h.key, "utf8"));
      writeVarBytes(w, h.value);
    }
  }
}

/** A record's bytes after its length varint. */
function recordBodyBytes(r: SectionRecord, offsetDelta: number, baseTimestamp: number): number {
  let n =
    1 +
    zigzagBytes(r.timestampMs - baseTimestamp) +
    zigzagBytes(offsetDelta) +
    varBytesSize(r.key) +
    varBytesSize(r.value) +
    zigzagBytes(r.headers.length);
  for (const h of r.headers) {
    const k = Buffer.byteLength(h.key, "utf8");
    n += zigzagBytes(k) + k + varBytesSize(h.value);
  }
  return n;
}

function varBytesSize(b: Uint8Array | null): number {
  return b === null ? 1 : zigzagBytes(b.byteLength) + b.byteLength;
}

/** Bytes of v as a zigzag varint (a varlong for a timestamp delta). */
function zigzagBytes(v: number): number {
  if (v >= ZIGZAG_EXACT_MAX || v <= -ZIGZAG_EXACT_MAX) {
    const big = BigInt(v);
    let u = BigInt.asUintN(64, (big << 1n) ^ (big >> 63n));
    let n = 1;
    for (; u >= 128n; n++) u >>= 7n;
    return n;
  }
  let u = v >= 0 ? v * 2 : -v * 2 - 1;
  let n = 1;
  while (u >= 128) {
    u = Math.floor(u / 128);
    n++;
  }
  return n;
}

/** Below this magnitude a zigzag value is exact as a number. */
const ZIGZAG_EXACT_MAX = 2 ** 51;

/** Largest zigzag value KafkaWriter.uvarint takes (its 5 bytes); larger deltas go as bigint. */
const ZIGZAG_NUMBER_MAX = 2 ** 35 - 1;

function writeTimestampDelta(w: KafkaWriter, delta: number): void {
  const u = delta >= 0 ? delta * 2 : -delta * 2 - 1;
  if (u <= ZIGZAG_NUMBER_MAX) w.uvarint(u);
  else w.varlong(delta);
}

/** The smallest timestamp of the records (-1 for none): the base their deltas count from. */
export function baseTimestampOf(records: readonly SectionRecord[]): number {
  let base = records.length > 0 ? records[0]!.timestampMs : -1;
  for (const r of records) if (r.timestampMs < base) base = r.timestampMs;
  return base;
}

/** A copy: the request's frame is not kept alive by stored records. */
function varBytes(r: KafkaReader): Uint8Array | null {
  const n = r.varint();
  if (n === -1) return null;
  if (n < -1) throw new DecodeError("kafka", `length ${n}`);
  return new Uint8Array(r.bytesOf(n));
}

function writeVarBytes(w: KafkaWriter, bytes: Uint8Array | null): void {
  if (bytes === null) {
    w.varint(-1);
    return;
  }
  w.varint(bytes.byteLength);
  w.raw(bytes);
}
