// Hand-written protobuf codec for tern.v1.RaftBatch (proto/tern/v1/raft.proto), the hot frame
// of the Raft transport. It produces and accepts exactly the proto wire format, so any gRPC
// client built from the .proto still interoperates, but it costs one allocation and one copy
// per frame instead of protobufjs's object graph, toObject() and per-field writers (the
// profile showed those at about a fifth of the leader's CPU under load).
//
//   RaftBatch    { int32 from_node_id = 1; int32 to_node_id = 2; repeated RaftEnvelope messages = 3; uint64 incarnation = 4; }
//   RaftEnvelope { string group_id = 1; bytes message = 2; }
import { encodeMessageInto } from "../raft/codec.js";
import type { Message } from "../raft/types.js";
import { varintBytes } from "../common/varint-size.js";
import { DecodeError } from "../common/decode-error.js";

/** RaftEnvelope as the transport hands it around. */
export interface RaftEnvelopeWire {
  groupId: string;
  message: Uint8Array;
}

/** RaftBatch as the transport hands it around (raft-proto.ts serializes it with this codec). */
export interface RaftBatchWire {
  fromNodeId: number;
  toNodeId: number;
  messages: RaftEnvelopeWire[];
  /** The sender process's incarnation (new on every start): node-level liveness (transport.ts). */
  incarnation?: number;
}

/** A message waiting in a peer queue: encoded only when its frame is built. */
export interface QueuedMessage {
  readonly groupId: string;
  readonly message: Message;
  /** messageSizeBytes(message), computed once when queued. */
  readonly sizeBytes: number;
}

function frameError(message: string): DecodeError {
  return new DecodeError("raft-batch", `RaftBatch frame: ${message}`);
}

const WIRE_VARINT = 0;
const WIRE_I64 = 1;
const WIRE_LEN = 2;
const WIRE_I32 = 5;
/** Envelopes one frame may carry when decoding (a corrupt count fails fast). */
const ENVELOPES_PER_FRAME_MAX = 1 << 20;
/** Encoded group ids kept; beyond it the cache starts over (group ids are few and long-lived). */
const GROUP_ID_CACHE_MAX = 16_384;

const encoder = new TextEncoder();
const groupIdBytes = new Map<string, Uint8Array>();

function encodedGroupId(groupId: string): Uint8Array {
  let bytes = groupIdBytes.get(groupId);
  if (bytes === undefined) {
    if (groupIdBytes.size >= GROUP_ID_CACHE_MAX) groupIdBytes.clear();
    bytes = encoder.encode(groupId);
    groupIdBytes.set(groupId, bytes);
  }
  return bytes;
}

// Every field is written, zero values too, exactly as protobufjs does for fields that are set.
function envelopeBytes(groupId: Uint8Array, message: Uint8Array): number {
  return (
    2 +
    varintBytes(groupId.byteLength) +
    groupId.byteLength +
    varintBytes(message.byteLength) +
    message.byteLength
  );
}

class FrameWriter {
  pos = 0;
  constructor(readonly out: Uint8Array) {}
  varint(v: number): void {
    while (v >= 0x80) {
      this.out[this.pos++] = (v % 128) | 0x80;
      v = Math.floor(v / 128);
    }
    this.out[this.pos++] = v;
  }
  int32(v: number): void {
    if (v >= 0) return this.varint(v);
    // Two's complement over 64 bits: the low 32 bits, then 0xffffffff in the high bits.
    let lo = v >>> 0;
    for (let i = 0; i < 4; i++) {
      this.out[this.pos++] = (lo & 0x7f) | 0x80;
      lo >>>= 7;
    }
    this.out[this.pos++] = (lo & 0x0f) | 0x70 | 0x80;
    for (let i = 0; i < 4; i++) this.out[this.pos++] = 0xff;
    this.out[this.pos++] = 0x01;
  }
  bytes(field: number, b: Uint8Array): void {
    this.out[this.pos++] = (field << 3) | WIRE_LEN;
    this.varint(b.byteLength);
    this.out.set(b, this.pos);
    this.pos += b.byteLength;
  }
}

/** Encodes a RaftBatch into its protobuf wire bytes (a Buffer, as grpc-js expects). */
export function encodeBatchFrame(batch: RaftBatchWire): Buffer {
  const ids = new Array<Uint8Array>(batch.messages.length);
  let size =
    2 +
    varintBytes(batch.fromNodeId) +
    varintBytes(batch.toNodeId) +
    incarnationBytes(batch.incarnation);
  for (let i = 0; i < batch.messages.length; i++) {
    const m = batch.messages[i]!;
    const id = encodedGroupId(m.groupId);
    ids[i] = id;
    const inner = envelopeBytes(id, m.message);
    size += 1 + varintBytes(inner) + inner;
  }
  const w = new FrameWriter(Buffer.allocUnsafe(size));
  w.out[w.pos++] = (1 << 3) | WIRE_VARINT;
  w.int32(batch.fromNodeId);
  w.out[w.pos++] = (2 << 3) | WIRE_VARINT;
  w.int32(batch.toNodeId);
  for (let i = 0; i < batch.messages.length; i++) {
    const m = batch.messages[i]!;
    w.out[w.pos++] = (3 << 3) | WIRE_LEN;
    w.varint(envelopeBytes(ids[i]!, m.message));
    w.bytes(1, ids[i]!);
    w.bytes(2, m.message);
  }
  writeIncarnation(w, batch.incarnation);
  if (w.pos !== size) throw frameError(`encoder wrote ${w.pos} of ${size} bytes`);
  return w.out as Buffer;
}

/** Bytes of a RaftBatch frame besides its envelopes: node ids and incarnation, at most. */
export const FRAME_HEAD_BYTES_MAX = 40;

/** Exact bytes a queued message adds to a frame (its envelope included). */
export function queuedEnvelopeBytes(item: QueuedMessage): number {
  const id = encodedGroupId(item.groupId);
  const inner =
    2 + varintBytes(id.byteLength) + id.byteLength + varintBytes(item.sizeBytes) + item.sizeBytes;
  return 1 + varintBytes(inner) + inner;
}

/**
 * Builds the RaftBatch frame for queued messages, encoding each Raft message straight into the
 * frame (one allocation, no intermediate per-message buffers). Same bytes as encodeBatchFrame
 * over the individually encoded messages.
 */
export function encodeMessageFrame(
  fromNodeId: number,
  toNodeId: number,
  items: readonly QueuedMessage[],
  incarnation?: number,
): Buffer {
  const ids = new Array<Uint8Array>(items.length);
  let size = 2 + varintBytes(fromNodeId) + varintBytes(toNodeId) + incarnationBytes(incarnation);
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!;
    const id = encodedGroupId(item.groupId);
    ids[i] = id;
    const inner =
      2 + varintBytes(id.byteLength) + id.byteLength + varintBytes(item.sizeBytes) + item.sizeBytes;
    size += 1 + varintBytes(inner) + inner;
  }
  const w = new FrameWriter(Buffer.allocUnsafe(size));
  w.out[w.pos++] = (1 << 3) | WIRE_VARINT;
  w.int32(fromNodeId);
  w.out[w.pos++] = (2 << 3) | WIRE_VARINT;
  w.int32(toNodeId);
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!;
    const id = ids[i]!;
    w.out[w.pos++] = (3 << 3) | WIRE_LEN;
    w.varint(
      2 + varintBytes(id.byteLength) + id.byteLength + varintBytes(item.sizeBytes) + item.sizeBytes,
    );
    w.bytes(1, id);
    w.out[w.pos++] = (2 << 3) | WIRE_LEN;
    w.varint(item.sizeBytes);
    w.pos = encodeMessageInto(item.message, w.out, w.pos, item.sizeBytes);
  }
  writeIncarnation(w, incarnation);
  if (w.pos !== size) throw frameError(`encoder wrote ${w.pos} of ${size} bytes`);
  return w.out as Buffer;
}

// incarnation (field 4, after the messages as protobufjs orders it): written whenever given.
function incarnationBytes(incarnation: number | undefined): number {
  return incarnation === undefined ? 0 : 1 + varintBytes(incarnation);
}

function writeIncarnation(w: FrameWriter, incarnation: number | undefined): void {
  if (incarnation === undefined) return;
  if (!Number.isSafeInteger(incarnation) || incarnation < 0)
    throw frameError(`incarnation ${incarnation} is not a safe non-negative integer`);
  w.out[w.pos++] = (4 << 3) | WIRE_VARINT;
  w.varint(incarnation);
}

class FrameReader {
  pos: number;
  constructor(
    readonly bytes: Uint8Array,
    start: number,
    readonly end: number,
  ) {
    this.pos = start;
  }
  more(): boolean {
    return this.pos < this.end;
  }
  varint(): number {
    let result = 0;
    let scale = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw frameError("truncated varint");
      const b = this.bytes[this.pos++]!;
      if (i < 8) result += (b & 0x7f) * scale;
      scale *= 128;
      if (b < 0x80) return result;
    }
    throw frameError("varint longer than 10 bytes");
  }
  /** An int32 field: protobuf sign-extends negatives to 64 bits; the low 32 bits carry the value. */
  int32(): number {
    const start = this.pos;
    const v = this.varint();
    if (this.pos - start === 10) {
      // Rebuild the low 32 bits from the first five groups of 7 bits.
      let lo = 0;
      for (let i = 4; i >= 0; i--) lo = lo * 128 + (this.bytes[start + i]! & 0x7f);
      return lo | 0;
    }
    return v | 0;
  }
  length(): number {
    const n = this.varint();
    if (n > this.end - this.pos) throw frameError(`length ${n} beyond the frame`);
    return n;
  }
  skip(wire: number): void {
    switch (wire) {
      case WIRE_VARINT:
        this.varint();
        return;
      case WIRE_I64:
        this.advance(8);
        return;
      case WIRE_LEN: {
        const n = this.length();
        this.pos += n;
        return;
      }
      case WIRE_I32:
        this.advance(4);
        return;
      default:
        throw frameError(`unsupported wire type ${wire}`);
    }
  }
  private advance(n: number): void {
    if (n > this.end - this.pos) throw frameError("truncated fixed field");
    this.pos += n;
  }
}

function decodeEnvelope(bytes: Uint8Array, start: number, end: number): RaftEnvelopeWire {
  const r = new FrameReader(bytes, start, end);
  let groupId = "";
  let message: Uint8Array = EMPTY;
  while (r.more()) {
    const tag = r.varint();
    const field = Math.floor(tag / 8);
    const wire = tag & 7;
    if (field === 1 && wire === WIRE_LEN) {
      const n = r.length();
      groupId = Buffer.prototype.utf8Slice.call(bytes, r.pos, r.pos + n) as string;
      r.pos += n;
    } else if (field === 2 && wire === WIRE_LEN) {
      const n = r.length();
      // A view, not a copy: decodeMessage copies nothing either, and the frame is not reused.
      message = bytes.subarray(r.pos, r.pos + n);
      r.pos += n;
    } else {
      r.skip(wire);
    }
  }
  return { groupId, message };
}

const EMPTY = new Uint8Array(0);

/** Decodes RaftBatch wire bytes; throws DecodeError on malformed input. */
export function decodeBatchFrame(bytes: Uint8Array): RaftBatchWire {
  const buffer = Buffer.isBuffer(bytes)
    ? bytes
    : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const r = new FrameReader(buffer, 0, buffer.byteLength);
  let fromNodeId = 0;
  let toNodeId = 0;
  const messages: RaftEnvelopeWire[] = [];
  let incarnation: number | undefined;
  while (r.more()) {
    const tag = r.varint();
    const field = Math.floor(tag / 8);
    const wire = tag & 7;
    if (field === 1 && wire === WIRE_VARINT) fromNodeId = r.int32();
    else if (field === 2 && wire === WIRE_VARINT) toNodeId = r.int32();
    else if (field === 3 && wire === WIRE_LEN) {
      const n = r.length();
      if (messages.length >= ENVELOPES_PER_FRAME_MAX)
        throw frameError(`more than ${ENVELOPES_PER_FRAME_MAX} envelopes`);
      messages.push(decodeEnvelope(buffer, r.pos, r.pos + n));
      r.pos += n;
    } else if (field === 4 && wire === WIRE_VARINT) {
      incarnation = r.varint();
    } else {
      r.skip(wire);
    }
  }
  return incarnation === undefined
    ? { fromNodeId, toNodeId, messages }
    : { fromNodeId, toNodeId, messages, incarnation };
}
