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
 * Offset deltas are ignored (the broker assigns offsets) but reported through shape.
 */
export function decodeRecordsSection(
  r: KafkaReader,
  count: number,
  baseTimestamp: number,
  shape?: SectionShape,
): SectionRecord[] {
  // Counts are checked against the bytes that must hold them before anything is allocated.
  if (count < 0 || count * RECORD_BYTES_MIN > r.remaining())
    throw new DecodeError("kafka", `record count ${count} in ${r.remaining()} bytes`);
  const records: SectionRecord[] = [];
  for (let i = 0; i < count; i++) {
    const length = r.varint();
    const recordEnd = r.pos + length;
    if (length < RECORD_BODY_BYTES_MIN || recordEnd > r.end)
      throw new DecodeError("kafka", `record ${i} length ${length} (${r.remaining()} bytes left)`);
    r.int8(); // record attributes: unused
    const timestampMs = baseTimestamp + r.varlong();
    if (r.varint() !== i && shape !== undefined) shape.offsetDeltasInOrder = false;
    const key = varBytes(r);
    const value = varBytes(r);
    const headerCount = r.varint();
    if (headerCount < 0 || headerCount * HEADER_BYTES_MIN > recordEnd - r.pos)
      throw new DecodeError(
        "kafka",
        `header count ${headerCount} in the record's last ${recordEnd - r.pos} bytes`,
      );
    const headers: SectionHeader[] = [];
    for (let h = 0; h < headerCount; h++) {
      const hk = varBytes(r);
      if (hk === null) throw new DecodeError("kafka", "a header key is null");
      headers.push({ key: Buffer.from(hk).toString("utf8"), value: varBytes(r) });
    }
    if (r.pos !== recordEnd)
      throw new DecodeError("kafka", `record ${i} length ${length} disagrees with its fields`);
    records.push({ key, value, headers, timestampMs });
  }
  if (r.pos !== r.end) throw new DecodeError("kafka", "bytes after the last record of a batch");
  return records;
}

/** Writes the records at w's position, timestamps relative to baseTimestamp, offset deltas 0.. */
export function writeRecordsSection(
  w: KafkaWriter,
  records: readonly SectionRecord[],
  baseTimestamp: number,
): void {
  const body = new KafkaWriter(256);
  for (let i = 0; i < records.length; i++) {
    const r = records[i]!;
    body.pos = 0;
    body.int8(0);
    body.varlong(r.timestampMs - baseTimestamp);
    body.varint(i);
    writeVarBytes(body, r.key);
    writeVarBytes(body, r.value);
    body.varint(r.headers.length);
    for (const h of r.headers) {
      writeVarBytes(body, Buffer.from(h.key, "utf8"));
      writeVarBytes(body, h.value);
    }
    w.varint(body.pos);
    w.raw(body.view(0));
  }
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
