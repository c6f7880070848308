// The entry journal's record format (entry-journal.ts). Big-endian; every record checksummed:
//   u32 length (bytes after this field and the crc), u32 crc (zlib CRC-32 of those bytes),
//   u8 version (1), u8 kind, u16 group id length, group id (UTF-8), then by kind:
//   entries: u32 count, count x (u64 index, u64 term, u8 type, u32 data length), the data of
//            every entry in order (so the entries' own buffers are written as they are);
//   reset:   u64 index, u64 term: the group's log is empty after (index, term) from here on.
import { crc32 } from "node:zlib";
import type { Entry, EntryType } from "../raft/types.js";

export type JournalRecord =
  | { readonly kind: "entries"; readonly groupId: string; readonly entries: readonly Entry[] }
  | {
      readonly kind: "reset";
      readonly groupId: string;
      readonly index: number;
      readonly term: number;
    };

const VERSION = 1;
const KIND_ENTRIES = 1;
const KIND_RESET = 2;
/** length + crc. */
export const RECORD_PREFIX_BYTES = 8;
const ENTRY_HEADER_BYTES = 21;
/** A record larger than this is corrupt (an entries record holds one Ready of one group). */
export const JOURNAL_RECORD_BYTES_MAX = 256 * 1024 * 1024;

/** The buffers of one record, ready for writev: a header, then (entries) each entry's data. */
export function encodeJournalRecord(r: JournalRecord): Uint8Array[] {
  const id = Buffer.from(r.groupId, "utf8");
  const fixed = RECORD_PREFIX_BYTES + 4 + id.byteLength;
  if (r.kind === "reset") {
    const head = Buffer.allocUnsafe(fixed + 16);
    writeCommon(head, KIND_RESET, id);
    putU64(head, fixed, r.index);
    putU64(head, fixed + 8, r.term);
    seal(head, [head.subarray(RECORD_PREFIX_BYTES)], head.byteLength - RECORD_PREFIX_BYTES);
    return [head];
  }
  const head = Buffer.allocUnsafe(fixed + 4 + ENTRY_HEADER_BYTES * r.entries.length);
  writeCommon(head, KIND_ENTRIES, id);
  head.writeUInt32BE(r.entries.length, fixed);
  let o = fixed + 4;
  let dataBytes = 0;
  const parts: Uint8Array[] = [head];
  for (const e of r.entries) {
    putU64(head, o, e.index);
    putU64(head, o + 8, e.term);
    head.writeUInt8(e.type, o + 16);
    head.writeUInt32BE(e.data.byteLength, o + 17);
    o += ENTRY_HEADER_BYTES;
    dataBytes += e.data.byteLength;
    if (e.data.byteLength > 0) parts.push(e.data);
  }
  seal(
    head,
    [head.subarray(RECORD_PREFIX_BYTES), ...parts.slice(1)],
    head.byteLength - RECORD_PREFIX_BYTES + dataBytes,
  );
  return parts;
}

function writeCommon(head: Buffer, kind: number, id: Buffer): void {
  head.writeUInt8(VERSION, RECORD_PREFIX_BYTES);
  head.writeUInt8(kind, RECORD_PREFIX_BYTES + 1);
  head.writeUInt16BE(id.byteLength, RECORD_PREFIX_BYTES + 2);
  id.copy(head, RECORD_PREFIX_BYTES + 4);
}

function seal(head: Buffer, covered: Uint8Array[], length: number): void {
  head.writeUInt32BE(length, 0);
  head.writeUInt32BE(checksum(covered), 4);
}

function checksum(parts: readonly Uint8Array[]): number {
  let crc = 0;
  // An empty buffer is skipped: its CRC contribution is nothing (and Node 20's crc32 of an
  // empty buffer ignores the running value).
  for (const p of parts) if (p.byteLength > 0) crc = crc32(p, crc);
  return crc >>> 0;
}

/** Records decoded from one file; `validBytes` is where the first bad or short record starts. */
export interface DecodedJournal {
  readonly records: JournalRecord[];
  readonly validBytes: number;
  /** Why decoding stopped before the end of the buffer, if it did. */
  readonly stop?: string;
}

/** Decodes a whole file. Entry data is copied out, so the file's buffer is not kept alive. */
export function decodeJournal(buf: Buffer): DecodedJournal {
  const records: JournalRecord[] = [];
  let at = 0;
  while (at < buf.byteLength) {
    if (buf.byteLength - at < RECORD_PREFIX_BYTES)
      return { records, validBytes: at, stop: "short record prefix" };
    const length = buf.readUInt32BE(at);
    if (length > JOURNAL_RECORD_BYTES_MAX || length < 4)
      return { records, validBytes: at, stop: `record length ${length} out of range` };
    const end = at + RECORD_PREFIX_BYTES + length;
    if (end > buf.byteLength) return { records, validBytes: at, stop: "short record" };
    const body = buf.subarray(at + RECORD_PREFIX_BYTES, end);
    if (checksum([body]) !== buf.readUInt32BE(at + 4))
      return { records, validBytes: at, stop: "checksum mismatch" };
    const record = decodeBody(body);
    if (typeof record === "string") return { records, validBytes: at, stop: record };
    records.push(record);
    at = end;
  }
  return { records, validBytes: at };
}

function decodeBody(b: Buffer): JournalRecord | string {
  if (b.readUInt8(0) !== VERSION) return `unknown record version ${b.readUInt8(0)}`;
  const kind = b.readUInt8(1);
  const idBytes = b.readUInt16BE(2);
  if (4 + idBytes > b.byteLength) return "group id past the record";
  const groupId = b.toString("utf8", 4, 4 + idBytes);
  const o = 4 + idBytes;
  if (kind === KIND_RESET) {
    if (o + 16 !== b.byteLength) return "reset record of the wrong size";
    return { kind: "reset", groupId, index: getU64(b, o), term: getU64(b, o + 8) };
  }
  if (kind !== KIND_ENTRIES) return `unknown record kind ${kind}`;
  if (o + 4 > b.byteLength) return "entries record without a count";
  const count = b.readUInt32BE(o);
  let h = o + 4;
  let d = h + count * ENTRY_HEADER_BYTES;
  if (d > b.byteLength) return "entry headers past the record";
  const entries: Entry[] = [];
  for (let i = 0; i < count; i++, h += ENTRY_HEADER_BYTES) {
    const length = b.readUInt32BE(h + 17);
    if (d + length > b.byteLength) return "entry data past the record";
    entries.push({
      index: getU64(b, h),
      term: getU64(b, h + 8),
      type: b.readUInt8(h + 16) as EntryType,
      data: new Uint8Array(b.subarray(d, d + length)),
    });
    d += length;
  }
  if (d !== b.byteLength) return "bytes after the last entry";
  for (let i = 1; i < entries.length; i++)
    if (entries[i]!.index !== entries[i - 1]!.index + 1) return "entry indexes not contiguous";
  if (entries.length === 0) return "entries record without entries";
  return { kind: "entries", groupId, entries };
}

function putU64(b: Buffer, o: number, v: number): void {
  b.writeUInt32BE(Math.floor(v / 2 ** 32), o);
  b.writeUInt32BE(v >>> 0, o + 4);
}

function getU64(b: Buffer, o: number): number {
  return b.readUInt32BE(o) * 2 ** 32 + b.readUInt32BE(o + 4);
}
