// One applied Raft entry as a segment file holds it: a fixed header, then the entry's bytes as
// replicated. The header carries what the apply decided (the offsets the entry took), so every
// index of a segment can be rebuilt from the segment alone. Layout (big-endian), see
// docs/storage.md:
//
//   0  u32 length        bytes after this field
//   4  u32 crc           zlib CRC-32 of bytes [8, 4 + length)
//   8  u8  version       1
//   9  u8  attributes    bits 0-2: codec of the payload (0 = none)
//  10  u8  entryType     the Raft entry type
//  11  u8  reserved      0
//  12  u64 index         Raft index
//  20  u64 term          Raft term
//  28  i64 baseOffset    first offset the entry took, or -1
//  36  u32 offsetCount   offsets it took (records of a batch, 1 for a marker, 0 for none)
//  40  i64 maxTimestamp  largest record timestamp (ms), or -1
//  48  i64 appendTime    the replicated clock at apply (ms)
//  56  payload
import { crc32 } from "node:zlib";
import { TernError } from "../common/errors.js";

export const RECORD_HEADER_BYTES = 56;
const RECORD_VERSION = 1;
/** A record larger than this is corrupt (entries are bounded far below it). */
export const RECORD_BYTES_MAX = 256 * 1024 * 1024;
export const CODEC_NONE = 0;

export interface LogRecord {
  readonly index: number;
  readonly term: number;
  readonly entryType: number;
  /** -1n when the entry took no offset. */
  readonly baseOffset: bigint;
  readonly offsetCount: number;
  readonly maxTimestampMs: number;
  readonly appendTimeMs: number;
  readonly codec: number;
  /** The entry's bytes as replicated (a view into the buffer it was read from). */
  readonly data: Uint8Array;
}

export function recordSize(r: LogRecord): number {
  return RECORD_HEADER_BYTES + r.data.byteLength;
}

/** The record's offsets end (exclusive); baseOffset when it took none. */
export function nextOffsetAfter(r: LogRecord): bigint {
  return r.offsetCount > 0 ? r.baseOffset + BigInt(r.offsetCount) : -1n;
}

/**
 * A record's header (its checksum covers the payload too): appends write it and the entry's
 * bytes with one writev, so a 64 KiB entry is not copied into a new buffer first.
 */
export function encodeRecordHeader(r: LogRecord): Buffer {
  const out = Buffer.allocUnsafe(RECORD_HEADER_BYTES);
  out.writeUInt32BE(RECORD_HEADER_BYTES + r.data.byteLength - 4, 0);
  out.writeUInt8(RECORD_VERSION, 8);
  out.writeUInt8(r.codec & 0x07, 9);
  out.writeUInt8(r.entryType, 10);
  out.writeUInt8(0, 11);
  out.writeBigUInt64BE(BigInt(r.index), 12);
  out.writeBigUInt64BE(BigInt(r.term), 20);
  out.writeBigInt64BE(r.baseOffset, 28);
  out.writeUInt32BE(r.offsetCount, 36);
  out.writeBigInt64BE(BigInt(Math.trunc(r.maxTimestampMs)), 40);
  out.writeBigInt64BE(BigInt(Math.trunc(r.appendTimeMs)), 48);
  const headerCrc = crc32(out.subarray(8));
  // Only with bytes: Node 20's crc32 answers 0, not the running value, for some empty views.
  out.writeUInt32BE((r.data.byteLength === 0 ? headerCrc : crc32(r.data, headerCrc)) >>> 0, 4);
  return out;
}

/** Why a record could not be read at a position: the scan stops there (a torn or corrupt tail). */
export type RecordProblem = "short" | "length" | "checksum" | "version";

export type DecodeResult =
  { readonly record: LogRecord; readonly size: number } | { readonly problem: RecordProblem };

/** Decodes the record at `at` in buf; a record cut short by the buffer's end is "short". */
export function decodeRecordAt(buf: Buffer, at: number): DecodeResult {
  if (buf.byteLength - at < 8) return { problem: "short" };
  const length = buf.readUInt32BE(at);
  if (length < RECORD_HEADER_BYTES - 4 || length > RECORD_BYTES_MAX) return { problem: "length" };
  if (buf.byteLength - at < 4 + length) return { problem: "short" };
  const body = buf.subarray(at + 8, at + 4 + length);
  if (crc32(body) >>> 0 !== buf.readUInt32BE(at + 4)) return { problem: "checksum" };
  if (buf.readUInt8(at + 8) !== RECORD_VERSION) return { problem: "version" };
  const record: LogRecord = {
    codec: buf.readUInt8(at + 9) & 0x07,
    entryType: buf.readUInt8(at + 10),
    index: Number(buf.readBigUInt64BE(at + 12)),
    term: Number(buf.readBigUInt64BE(at + 20)),
    baseOffset: buf.readBigInt64BE(at + 28),
    offsetCount: buf.readUInt32BE(at + 36),
    maxTimestampMs: Number(buf.readBigInt64BE(at + 40)),
    appendTimeMs: Number(buf.readBigInt64BE(at + 48)),
    data: buf.subarray(at + RECORD_HEADER_BYTES, at + 4 + length),
  };
  return { record, size: 4 + length };
}

/** The append time in a record header at the start of buf (enough bytes for a header). */
export function appendTimeOfHeader(buf: Buffer): number {
  return Number(buf.readBigInt64BE(48));
}

/** The length field of a record header (for reading exactly one record); undefined if implausible. */
export function recordLengthAt(buf: Buffer, at: number): number | undefined {
  if (buf.byteLength - at < 4) return undefined;
  const length = buf.readUInt32BE(at);
  return length < RECORD_HEADER_BYTES - 4 || length > RECORD_BYTES_MAX ? undefined : 4 + length;
}

export function corrupt(what: string, details: Record<string, unknown> = {}): TernError {
  return new TernError("CORRUPT_MESSAGE", what, details);
}

/**
 * Records as one buffer, exactly as a segment file holds them (each with its checksum): what a
 * replica sends another that repairs a damaged segment (docs/storage.md, "Corruption and repair").
 */
export function encodeRecords(records: readonly LogRecord[]): Buffer {
  const parts: Uint8Array[] = [];
  for (const r of records) {
    parts.push(encodeRecordHeader(r));
    if (r.data.byteLength > 0) parts.push(r.data);
  }
  return Buffer.concat(parts);
}

/** The records of encodeRecords' buffer; any bad one (length, checksum, version, cut short) throws CORRUPT_MESSAGE. */
export function decodeRecords(buf: Buffer): LogRecord[] {
  const out: LogRecord[] = [];
  let at = 0;
  while (at < buf.byteLength) {
    const d = decodeRecordAt(buf, at);
    if ("problem" in d) throw corrupt(`record ${out.length} at byte ${at}: ${d.problem}`);
    out.push(d.record);
    at += d.size;
  }
  return out;
}
