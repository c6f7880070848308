// The on-disk records of the Raft host: entries, hard state, conf state, snapshot metadata and
// the log start. Every value starts with a CRC32 of the rest, checked right after reading it
// back, so a torn or corrupt record stops recovery with a clear assertion instead of feeding
// garbage to the core. Integers are safe JS integers stored as two uint32 halves.
import { crc32 } from "node:zlib";
import { AssertionError } from "../common/assert.js";
import type { ConfState, Entry, EntryType, HardState, SnapshotMetadata } from "../raft/types.js";

const VERSION = 1;
/** Entry records since the run format: one record holds a contiguous run of entries. */
const VERSION_ENTRY_RUN = 2;
const HEADER_BYTES = 5; // crc32 + version
const U53_BYTES = 8;

export class CorruptRecordError extends AssertionError {
  constructor(what: string, detail: string) {
    super(`raft-host: corrupt ${what} record on disk: ${detail}`);
    this.name = "CorruptRecordError";
  }
}

class Writer {
  readonly bytes: Uint8Array;
  private readonly view: DataView;
  private offset = HEADER_BYTES;
  constructor(
    size: number,
    private readonly version = VERSION,
  ) {
    this.bytes = new Uint8Array(HEADER_BYTES + size);
    this.view = new DataView(this.bytes.buffer);
  }
  u8(v: number): void {
    this.view.setUint8(this.offset, v);
    this.offset += 1;
  }
  u32(v: number): void {
    this.view.setUint32(this.offset, v);
    this.offset += 4;
  }
  u53(v: number): void {
    this.view.setUint32(this.offset, Math.floor(v / 0x1_0000_0000));
    this.view.setUint32(this.offset + 4, v >>> 0);
    this.offset += U53_BYTES;
  }
  i32(v: number): void {
    this.view.setInt32(this.offset, v);
    this.offset += 4;
  }
  raw(b: Uint8Array): void {
    this.bytes.set(b, this.offset);
    this.offset += b.byteLength;
  }
  finish(): Uint8Array {
    if (this.offset !== this.bytes.byteLength)
      throw new AssertionError(
        `disk-codec: wrote ${this.offset} of ${this.bytes.byteLength} bytes`,
      );
    this.view.setUint8(4, this.version);
    this.view.setUint32(0, crc32(this.bytes.subarray(4)));
    return this.bytes;
  }
}

class Reader {
  private readonly view: DataView;
  private offset = HEADER_BYTES;
  readonly version: number;
  constructor(
    private readonly bytes: Uint8Array,
    private readonly what: string,
    versions: readonly number[] = [VERSION],
  ) {
    if (bytes.byteLength < HEADER_BYTES)
      throw new CorruptRecordError(what, `${bytes.byteLength} bytes is shorter than the header`);
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const stored = this.view.getUint32(0);
    const actual = crc32(bytes.subarray(4));
    if (stored !== actual) throw new CorruptRecordError(what, `checksum ${stored} != ${actual}`);
    this.version = this.view.getUint8(4);
    if (!versions.includes(this.version))
      throw new CorruptRecordError(what, `unknown version ${this.version}`);
  }
  private need(n: number): void {
    if (this.offset + n > this.bytes.byteLength)
      throw new CorruptRecordError(this.what, `truncated at ${this.offset}`);
  }
  u8(): number {
    this.need(1);
    const v = this.view.getUint8(this.offset);
    this.offset += 1;
    return v;
  }
  u32(): number {
    this.need(4);
    const v = this.view.getUint32(this.offset);
    this.offset += 4;
    return v;
  }
  i32(): number {
    this.need(4);
    const v = this.view.getInt32(this.offset);
    this.offset += 4;
    return v;
  }
  u53(): number {
    this.need(U53_BYTES);
    const v =
      this.view.getUint32(this.offset) * 0x1_0000_0000 + this.view.getUint32(this.offset + 4);
    this.offset += U53_BYTES;
    return v;
  }
  raw(n: number): Uint8Array {
    this.need(n);
    const v = this.bytes.subarray(this.offset, this.offset + n);
    this.offset += n;
    return v;
  }
  rest(): Uint8Array {
    const v = this.bytes.subarray(this.offset);
    this.offset = this.bytes.byteLength;
    return v;
  }
  ids(): number[] {
    const n = this.u32();
    if (n > 10_000) throw new CorruptRecordError(this.what, `${n} node ids`);
    const out: number[] = [];
    for (let i = 0; i < n; i++) out.push(this.i32());
    return out;
  }
  done(): void {
    if (this.offset !== this.bytes.byteLength)
      throw new CorruptRecordError(
        this.what,
        `${this.bytes.byteLength - this.offset} trailing bytes`,
      );
  }
}

export function encodeEntryRecord(e: Entry): Uint8Array {
  const w = new Writer(1 + U53_BYTES * 2 + e.data.byteLength);
  w.u8(e.type);
  w.u53(e.term);
  w.u53(e.index);
  w.raw(e.data);
  return w.finish();
}

const RUN_ENTRY_HEADER_BYTES = 1 + U53_BYTES + 4;
/** Entries one run record may hold (a corrupt count fails fast instead of allocating). */
const RUN_ENTRIES_MAX = 1 << 20;

/**
 * A contiguous run of entries, entries[from..to), in one record: the host writes one record per
 * group per Ready instead of one per entry (each level batch op costs far more CPU than the
 * bytes it carries). Layout after the header: first index, count, then per entry type, term,
 * data length, data (indexes are implied).
 */
export function encodeEntryRunRecord(
  entries: readonly Entry[],
  from: number,
  to: number,
): Uint8Array {
  if (!(from < to && to <= entries.length))
    throw new AssertionError(`disk-codec: empty or invalid entry run [${from}, ${to})`);
  let size = U53_BYTES + 4;
  for (let i = from; i < to; i++) size += RUN_ENTRY_HEADER_BYTES + entries[i]!.data.byteLength;
  const w = new Writer(size, VERSION_ENTRY_RUN);
  const first = entries[from]!.index;
  w.u53(first);
  w.u32(to - from);
  for (let i = from; i < to; i++) {
    const e = entries[i]!;
    if (e.index !== first + i - from)
      throw new AssertionError(`disk-codec: entry run not contiguous at ${e.index}`);
    w.u8(e.type);
    w.u53(e.term);
    w.u32(e.data.byteLength);
    w.raw(e.data);
  }
  return w.finish();
}

/** Decodes an entry record: a run (version 2) or a single entry (version 1, older data directories). */
export function decodeEntryRunRecord(bytes: Uint8Array): Entry[] {
  const r = new Reader(bytes, "entry", [VERSION, VERSION_ENTRY_RUN]);
  if (r.version === VERSION) {
    const type = r.u8() as EntryType;
    const term = r.u53();
    const index = r.u53();
    return [{ type, term, index, data: Uint8Array.prototype.slice.call(r.rest()) }];
  }
  const first = r.u53();
  const count = r.u32();
  if (count === 0 || count > RUN_ENTRIES_MAX)
    throw new CorruptRecordError("entry", `run of ${count} entries`);
  const out: Entry[] = [];
  for (let i = 0; i < count; i++) {
    const type = r.u8() as EntryType;
    const term = r.u53();
    // Copy: level may reuse the buffer, and entries live on in the log cache.
    const data = Uint8Array.prototype.slice.call(r.raw(r.u32()));
    out.push({ type, term, index: first + i, data });
  }
  r.done();
  return out;
}

export function encodeHardStateRecord(h: HardState): Uint8Array {
  const w = new Writer(U53_BYTES * 2 + 4);
  w.u53(h.term);
  w.i32(h.vote);
  w.u53(h.commit);
  return w.finish();
}

export function decodeHardStateRecord(bytes: Uint8Array): HardState {
  const r = new Reader(bytes, "hard state");
  const h = { term: r.u53(), vote: r.i32(), commit: r.u53() };
  r.done();
  return h;
}

function confStateBytes(c: ConfState): number {
  return 12 + 4 * (c.voters.length + c.learners.length + c.outgoingVoters.length);
}

function writeConfState(w: Writer, c: ConfState): void {
  for (const list of [c.voters, c.learners, c.outgoingVoters]) {
    w.u32(list.length);
    for (const id of list) w.i32(id);
  }
}

function readConfState(r: Reader): ConfState {
  return { voters: r.ids(), learners: r.ids(), outgoingVoters: r.ids() };
}

export function encodeConfStateRecord(c: ConfState): Uint8Array {
  const w = new Writer(confStateBytes(c));
  writeConfState(w, c);
  return w.finish();
}

export function decodeConfStateRecord(bytes: Uint8Array): ConfState {
  const r = new Reader(bytes, "conf state");
  const c = readConfState(r);
  r.done();
  return c;
}

export function encodeSnapshotMetadataRecord(m: SnapshotMetadata, dataBytes: number): Uint8Array {
  const w = new Writer(U53_BYTES * 3 + confStateBytes(m.confState));
  w.u53(m.index);
  w.u53(m.term);
  w.u53(dataBytes);
  writeConfState(w, m.confState);
  return w.finish();
}

export function decodeSnapshotMetadataRecord(bytes: Uint8Array): {
  metadata: SnapshotMetadata;
  dataBytes: number;
} {
  const r = new Reader(bytes, "snapshot metadata");
  const index = r.u53();
  const term = r.u53();
  const dataBytes = r.u53();
  const confState = readConfState(r);
  r.done();
  return { metadata: { index, term, confState }, dataBytes };
}

/** Snapshot data: a checksummed blob (the state machine's bytes are opaque). */
export function encodeBlobRecord(data: Uint8Array): Uint8Array {
  const w = new Writer(data.byteLength);
  w.raw(data);
  return w.finish();
}

export function decodeBlobRecord(bytes: Uint8Array, what: string): Uint8Array {
  return Uint8Array.prototype.slice.call(new Reader(bytes, what).rest());
}

/** The first retained log position: entries after index follow; term is the term at index. */
export interface LogStart {
  readonly index: number;
  readonly term: number;
}

export function encodeLogStartRecord(s: LogStart): Uint8Array {
  const w = new Writer(U53_BYTES * 2);
  w.u53(s.index);
  w.u53(s.term);
  return w.finish();
}

export function decodeLogStartRecord(bytes: Uint8Array): LogStart {
  const r = new Reader(bytes, "log start");
  const s = { index: r.u53(), term: r.u53() };
  r.done();
  return s;
}
