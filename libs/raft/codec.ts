// Compact binary encoding of the Raft core's types for the wire and for disk. Big-endian,
// fixed-width fields: u64 for terms and indexes (safe integers only), i32 for node ids (NONE is
// -1). Every decoder checks bounds, enum ranges and trailing bytes and throws DecodeError on
// malformed input. Decoded byte fields are views into the input buffer (no copy).
import {
  ConfChangeType,
  EntryType,
  MessageType,
  type ConfChange,
  type ConfState,
  type Entry,
  type HardState,
  type Message,
  type NodeId,
  type Snapshot,
  type SnapshotMetadata,
} from "./types.js";
import { DecodeError } from "../common/decode-error.js";

const MESSAGE_VERSION = 1;
const TWO_POW_32 = 4294967296;
/** Limits that make a corrupt length field fail fast instead of allocating. */
const NODES_MAX = 1024;
const ENTRIES_PER_MESSAGE_MAX = 1 << 20;

const FLAG_REJECT = 1;
const FLAG_SNAPSHOT = 2;
const FLAG_CONTEXT = 4;
const FLAG_QUIESCE = 8;

class Writer {
  readonly bytes: Uint8Array;
  private readonly view: DataView;
  private pos: number;
  private readonly end: number;
  /** Writes a fresh buffer of `size` bytes, or into `into` from `start` (no copy of its own). */
  constructor(size: number, into?: Uint8Array, start = 0) {
    this.bytes = into ?? new Uint8Array(size);
    this.view = new DataView(this.bytes.buffer, this.bytes.byteOffset, this.bytes.byteLength);
    this.pos = start;
    this.end = start + size;
    if (this.end > this.bytes.byteLength)
      throw new DecodeError(
        "raft",
        `encoder: ${size} bytes at ${start} exceed the ${this.bytes.byteLength}-byte buffer`,
      );
  }
  get offset(): number {
    return this.pos;
  }
  u8(v: number): void {
    this.view.setUint8(this.pos, v);
    this.pos += 1;
  }
  i32(v: number): void {
    this.view.setInt32(this.pos, v);
    this.pos += 4;
  }
  u32(v: number): void {
    this.view.setUint32(this.pos, v);
    this.pos += 4;
  }
  u64(v: number): void {
    if (!Number.isSafeInteger(v) || v < 0)
      throw new DecodeError("raft", `cannot encode ${v} as u64`);
    this.view.setUint32(this.pos, Math.floor(v / TWO_POW_32));
    this.view.setUint32(this.pos + 4, v >>> 0);
    this.pos += 8;
  }
  raw(b: Uint8Array): void {
    this.bytes.set(b, this.pos);
    this.pos += b.byteLength;
  }
  blob(b: Uint8Array): void {
    this.u32(b.byteLength);
    this.raw(b);
  }
  done(): Uint8Array {
    if (this.pos !== this.end)
      throw new DecodeError("raft", `encoder size mismatch: ${this.pos} != ${this.end}`);
    return this.bytes;
  }
}

class Reader {
  private readonly view: DataView;
  private pos = 0;
  constructor(
    private readonly bytes: Uint8Array,
    private readonly what: string,
  ) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  private need(n: number): void {
    if (this.pos + n > this.bytes.byteLength)
      throw new DecodeError("raft", `${this.what}: truncated at byte ${this.pos} (need ${n} more)`);
  }
  u8(): number {
    this.need(1);
    const v = this.view.getUint8(this.pos);
    this.pos += 1;
    return v;
  }
  i32(): number {
    this.need(4);
    const v = this.view.getInt32(this.pos);
    this.pos += 4;
    return v;
  }
  u32(): number {
    this.need(4);
    const v = this.view.getUint32(this.pos);
    this.pos += 4;
    return v;
  }
  u64(): number {
    this.need(8);
    const hi = this.view.getUint32(this.pos);
    const lo = this.view.getUint32(this.pos + 4);
    this.pos += 8;
    if (hi >= 0x200000)
      throw new DecodeError("raft", `${this.what}: u64 beyond the safe integer range`);
    return hi * TWO_POW_32 + lo;
  }
  nodeId(): NodeId {
    const v = this.i32();
    if (v < -1) throw new DecodeError("raft", `${this.what}: invalid node id ${v}`);
    return v;
  }
  raw(n: number): Uint8Array {
    this.need(n);
    const b = this.bytes.subarray(this.pos, this.pos + n);
    this.pos += n;
    return b;
  }
  blob(): Uint8Array {
    return this.raw(this.u32());
  }
  count(max: number, minBytesEach: number): number {
    const n = this.u32();
    if (n > max || n * minBytesEach > this.bytes.byteLength - this.pos)
      throw new DecodeError("raft", `${this.what}: implausible count ${n}`);
    return n;
  }
  end(): void {
    if (this.pos !== this.bytes.byteLength)
      throw new DecodeError(
        "raft",
        `${this.what}: ${this.bytes.byteLength - this.pos} trailing bytes`,
      );
  }
}

// ---- sizes ----
const ENTRY_HEADER_BYTES = 8 + 8 + 1 + 4;
const HARD_STATE_BYTES = 8 + 4 + 8;
const MESSAGE_HEADER_BYTES = 1 + 1 + 1 + 4 + 4 + 8 * 5 + 4;

function entryBytes(e: Entry): number {
  return ENTRY_HEADER_BYTES + e.data.byteLength;
}
function confStateBytes(c: ConfState): number {
  return 12 + 4 * (c.voters.length + c.learners.length + c.outgoingVoters.length);
}
function metadataBytes(m: SnapshotMetadata): number {
  return 16 + confStateBytes(m.confState);
}

// ---- writers ----
function writeEntry(w: Writer, e: Entry): void {
  w.u64(e.term);
  w.u64(e.index);
  w.u8(e.type);
  w.blob(e.data);
}
function writeNodes(w: Writer, ids: readonly NodeId[]): void {
  w.u32(ids.length);
  for (const id of ids) w.i32(id);
}
function writeConfState(w: Writer, c: ConfState): void {
  writeNodes(w, c.voters);
  writeNodes(w, c.learners);
  writeNodes(w, c.outgoingVoters);
}
function writeMetadata(w: Writer, m: SnapshotMetadata): void {
  w.u64(m.index);
  w.u64(m.term);
  writeConfState(w, m.confState);
}

// ---- readers ----
function readEntry(r: Reader): Entry {
  const term = r.u64();
  const index = r.u64();
  const type = r.u8();
  if (type !== EntryType.Normal && type !== EntryType.ConfChange)
    throw new DecodeError("raft", `entry: unknown type ${type}`);
  const data = r.blob();
  return { term, index, type, data };
}
function readNodes(r: Reader): NodeId[] {
  const n = r.count(NODES_MAX, 4);
  const ids: NodeId[] = [];
  for (let i = 0; i < n; i++) {
    const id = r.nodeId();
    if (id < 0) throw new DecodeError("raft", `conf state: invalid node id ${id}`);
    ids.push(id);
  }
  return ids;
}
function readConfState(r: Reader): ConfState {
  const voters = readNodes(r);
  const learners = readNodes(r);
  const outgoingVoters = readNodes(r);
  return { voters, learners, outgoingVoters };
}
function readMetadata(r: Reader): SnapshotMetadata {
  const index = r.u64();
  const term = r.u64();
  return { index, term, confState: readConfState(r) };
}

// ---- public API ----
export function encodeEntry(e: Entry): Uint8Array {
  const w = new Writer(entryBytes(e));
  writeEntry(w, e);
  return w.done();
}
export function decodeEntry(b: Uint8Array): Entry {
  const r = new Reader(b, "entry");
  const e = readEntry(r);
  r.end();
  return e;
}

export function encodeHardState(h: HardState): Uint8Array {
  const w = new Writer(HARD_STATE_BYTES);
  w.u64(h.term);
  w.i32(h.vote);
  w.u64(h.commit);
  return w.done();
}
export function decodeHardState(b: Uint8Array): HardState {
  const r = new Reader(b, "hard state");
  const term = r.u64();
  const vote = r.nodeId();
  const commit = r.u64();
  r.end();
  return { term, vote, commit };
}

export function encodeConfState(c: ConfState): Uint8Array {
  const w = new Writer(confStateBytes(c));
  writeConfState(w, c);
  return w.done();
}
export function decodeConfState(b: Uint8Array): ConfState {
  const r = new Reader(b, "conf state");
  const c = readConfState(r);
  r.end();
  return c;
}

export function encodeConfChange(c: ConfChange): Uint8Array {
  const w = new Writer(5);
  w.u8(c.type);
  w.i32(c.nodeId);
  return w.done();
}
export function decodeConfChange(b: Uint8Array): ConfChange {
  const r = new Reader(b, "conf change");
  const type = r.u8();
  if (
    type !== ConfChangeType.AddVoter &&
    type !== ConfChangeType.AddLearner &&
    type !== ConfChangeType.RemoveNode
  ) {
    throw new DecodeError("raft", `conf change: unknown type ${type}`);
  }
  const nodeId = r.nodeId();
  if (nodeId < 0) throw new DecodeError("raft", `conf change: invalid node id ${nodeId}`);
  r.end();
  return { type, nodeId };
}

export function encodeSnapshotMetadata(m: SnapshotMetadata): Uint8Array {
  const w = new Writer(metadataBytes(m));
  writeMetadata(w, m);
  return w.done();
}
export function decodeSnapshotMetadata(b: Uint8Array): SnapshotMetadata {
  const r = new Reader(b, "snapshot metadata");
  const m = readMetadata(r);
  r.end();
  return m;
}

export function encodeSnapshot(s: Snapshot): Uint8Array {
  const w = new Writer(metadataBytes(s.metadata) + 4 + s.data.byteLength);
  writeMetadata(w, s.metadata);
  w.blob(s.data);
  return w.done();
}
export function decodeSnapshot(b: Uint8Array): Snapshot {
  const r = new Reader(b, "snapshot");
  const metadata = readMetadata(r);
  const data = r.blob();
  r.end();
  return { metadata, data };
}

/** Bytes encodeMessage(m) will produce (for batching and flow control in transports). */
export function messageSizeBytes(m: Message): number {
  let size = MESSAGE_HEADER_BYTES;
  for (const e of m.entries) size += entryBytes(e);
  if (m.snapshot) size += metadataBytes(m.snapshot.metadata) + 4 + m.snapshot.data.byteLength;
  if (m.context) size += 4 + m.context.byteLength;
  return size;
}

export function encodeMessage(m: Message): Uint8Array {
  const w = new Writer(messageSizeBytes(m));
  writeMessage(w, m);
  return w.done();
}

/**
 * Encodes m into out at offset (exactly messageSizeBytes(m) bytes) and returns the end offset:
 * transports write every message of a frame straight into the frame's buffer.
 */
export function encodeMessageInto(
  m: Message,
  out: Uint8Array,
  offset: number,
  sizeBytes = messageSizeBytes(m),
): number {
  const w = new Writer(sizeBytes, out, offset);
  writeMessage(w, m);
  w.done();
  return w.offset;
}

function writeMessage(w: Writer, m: Message): void {
  let flags = 0;
  if (m.reject) flags |= FLAG_REJECT;
  if (m.snapshot) flags |= FLAG_SNAPSHOT;
  if (m.context) flags |= FLAG_CONTEXT;
  if (m.quiesce) flags |= FLAG_QUIESCE;
  w.u8(MESSAGE_VERSION);
  w.u8(m.type);
  w.u8(flags);
  w.i32(m.from);
  w.i32(m.to);
  w.u64(m.term);
  w.u64(m.logTerm);
  w.u64(m.index);
  w.u64(m.commit);
  w.u64(m.rejectHint);
  w.u32(m.entries.length);
  for (const e of m.entries) writeEntry(w, e);
  if (m.snapshot) {
    writeMetadata(w, m.snapshot.metadata);
    w.blob(m.snapshot.data);
  }
  if (m.context) w.blob(m.context);
}

export function decodeMessage(b: Uint8Array): Message {
  const r = new Reader(b, "message");
  const version = r.u8();
  if (version !== MESSAGE_VERSION)
    throw new DecodeError("raft", `message: unsupported version ${version}`);
  const type = r.u8();
  if (type > MessageType.TransferLeader)
    throw new DecodeError("raft", `message: unknown type ${type}`);
  const flags = r.u8();
  if ((flags & ~(FLAG_REJECT | FLAG_SNAPSHOT | FLAG_CONTEXT | FLAG_QUIESCE)) !== 0)
    throw new DecodeError("raft", `message: unknown flags ${flags}`);
  const from = r.nodeId();
  const to = r.nodeId();
  const term = r.u64();
  const logTerm = r.u64();
  const index = r.u64();
  const commit = r.u64();
  const rejectHint = r.u64();
  const n = r.count(ENTRIES_PER_MESSAGE_MAX, ENTRY_HEADER_BYTES);
  const entries: Entry[] = new Array<Entry>(n);
  for (let i = 0; i < n; i++) entries[i] = readEntry(r);
  let snapshot: Snapshot | undefined;
  if (flags & FLAG_SNAPSHOT) snapshot = { metadata: readMetadata(r), data: r.blob() };
  const context = flags & FLAG_CONTEXT ? r.blob() : undefined;
  r.end();
  const m: { -readonly [K in keyof Message]: Message[K] } = {
    type,
    from,
    to,
    term,
    logTerm,
    index,
    entries,
    commit,
    reject: (flags & FLAG_REJECT) !== 0,
    rejectHint,
  };
  if (snapshot) m.snapshot = snapshot;
  if (context) m.context = context;
  if (flags & FLAG_QUIESCE) m.quiesce = true;
  return m;
}
