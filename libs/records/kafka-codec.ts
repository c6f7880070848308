// Kafka protocol primitives: big-endian ints, (compact) strings and bytes, arrays, unsigned and
// zigzag varints, tagged fields. A request is read with KafkaReader (every read bounds-checked:
// a short or malformed frame throws DecodeError and closes that connection only); an
// answer is written with KafkaWriter, which grows its buffer as needed. What the writer is
// given is this process's own numbers: one its field cannot hold (an int16 past 32767, a
// negative varint or one past its 5 bytes, a fill outside what was written) is a bug, asserted
// (libs/common/assert.ts), never a malformed answer on the wire. (A string too long for its
// int16 length can come from a request's text: Node's RangeError ends that connection only.)
// Facts from Kafka's protocol guide (kafka.apache.org/protocol) and its message schemas.
import { assert } from "../common/assert.js";
import { DecodeError } from "../common/decode-error.js";

/** Largest value uvarint() writes in the 5 bytes it reserves. */
const UVARINT_MAX = 2 ** 35 - 1;

/** Bound on any array's element count in a request (a frame is bounded too; this catches nonsense early). */
export const ARRAY_LENGTH_MAX = 1_000_000;

export class KafkaReader {
  pos: number;
  constructor(
    readonly b: Buffer,
    start = 0,
    readonly end = b.byteLength,
  ) {
    assert(
      0 <= start && start <= end && end <= b.byteLength,
      "KafkaReader bounds outside its buffer",
    );
    this.pos = start;
  }

  remaining(): number {
    return this.end - this.pos;
  }

  private need(n: number): void {
    if (n < 0 || this.pos + n > this.end)
      throw new DecodeError("kafka", `frame ends ${this.pos + n - this.end} bytes early`);
  }

  int8(): number {
    this.need(1);
    return this.b.readInt8(this.pos++);
  }

  bool(): boolean {
    return this.int8() !== 0;
  }

  int16(): number {
    this.need(2);
    const v = this.b.readInt16BE(this.pos);
    this.pos += 2;
    return v;
  }

  int32(): number {
    this.need(4);
    const v = this.b.readInt32BE(this.pos);
    this.pos += 4;
    return v;
  }

  uint32(): number {
    this.need(4);
    const v = this.b.readUInt32BE(this.pos);
    this.pos += 4;
    return v;
  }

  int64(): bigint {
    this.need(8);
    const v = this.b.readBigInt64BE(this.pos);
    this.pos += 8;
    return v;
  }

  /** FLOAT64: an IEEE 754 double, big-endian (quota values). */
  float64(): number {
    this.need(8);
    const v = this.b.readDoubleBE(this.pos);
    this.pos += 8;
    return v;
  }

  /** Unsigned varint (up to 32 bits). */
  uvarint(): number {
    let result = 0;
    let shift = 0;
    for (let i = 0; i < 5; i++) {
      this.need(1);
      const byte = this.b[this.pos++]!;
      result += (byte & 127) * 2 ** shift;
      if (byte < 128) return result;
      shift += 7;
    }
    throw new DecodeError("kafka", "varint longer than 5 bytes");
  }

  /** Zigzag varint (int32). */
  varint(): number {
    const u = this.uvarint();
    return u % 2 === 0 ? u / 2 : -(u + 1) / 2;
  }

  /** Zigzag varlong (int64), as a number (timestamps and deltas fit). */
  varlong(): number {
    // One byte (most timestamp deltas): no bigint.
    const first = this.b[this.pos];
    if (first !== undefined && first < 128 && this.pos < this.end) {
      this.pos++;
      return first & 1 ? -(first + 1) / 2 : first / 2;
    }
    let result = 0n;
    for (let shift = 0n; shift < 70n; shift += 7n) {
      this.need(1);
      const byte = this.b[this.pos++]!;
      result |= BigInt(byte & 127) << shift;
      if (byte < 128) return Number((result >> 1n) ^ -(result & 1n));
    }
    throw new DecodeError("kafka", "varlong longer than 10 bytes");
  }

  bytesOf(n: number): Buffer {
    this.need(n);
    const out = this.b.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  /** INT16-length string; null when the length is -1. */
  nullableString(): string | null {
    const n = this.int16();
    if (n === -1) return null;
    if (n < 0) throw new DecodeError("kafka", `string length ${n}`);
    return this.bytesOf(n).toString("utf8");
  }

  string(): string {
    const s = this.nullableString();
    if (s === null) throw new DecodeError("kafka", "null where a string is required");
    return s;
  }

  /** Compact (uvarint length + 1) string; null when the length is 0. */
  compactNullableString(): string | null {
    const n = this.uvarint() - 1;
    if (n === -1) return null;
    return this.bytesOf(n).toString("utf8");
  }

  compactString(): string {
    const s = this.compactNullableString();
    if (s === null) throw new DecodeError("kafka", "null where a string is required");
    return s;
  }

  /** INT32-length bytes; null when the length is -1. */
  nullableBytes(): Buffer | null {
    const n = this.int32();
    if (n === -1) return null;
    if (n < 0) throw new DecodeError("kafka", `bytes length ${n}`);
    return this.bytesOf(n);
  }

  compactNullableBytes(): Buffer | null {
    const n = this.uvarint() - 1;
    if (n === -1) return null;
    return this.bytesOf(n);
  }

  /** INT32-count array; null when the count is -1. */
  nullableArray<T>(item: (r: KafkaReader) => T): T[] | null {
    const n = this.int32();
    if (n === -1) return null;
    return this.items(n, item);
  }

  array<T>(item: (r: KafkaReader) => T): T[] {
    return this.nullableArray(item) ?? [];
  }

  compactNullableArray<T>(item: (r: KafkaReader) => T): T[] | null {
    const n = this.uvarint() - 1;
    if (n === -1) return null;
    return this.items(n, item);
  }

  compactArray<T>(item: (r: KafkaReader) => T): T[] {
    return this.compactNullableArray(item) ?? [];
  }

  private items<T>(n: number, item: (r: KafkaReader) => T): T[] {
    if (n < 0 || n > ARRAY_LENGTH_MAX || n > this.remaining())
      throw new DecodeError("kafka", `array of ${n} elements`);
    const out: T[] = [];
    for (let i = 0; i < n; i++) out.push(item(this));
    return out;
  }

  /** Skips a tagged-field section (none are understood yet). */
  taggedFields(): void {
    const n = this.uvarint();
    for (let i = 0; i < n; i++) {
      this.uvarint(); // tag
      this.bytesOf(this.uvarint());
    }
  }
}

/**
 * A response body: one buffer, or its pieces in order when stored bytes go in by reference
 * (KafkaWriter.attach: a Fetch answer's batches are written to the socket from where they were
 * read, not copied into the answer first).
 */
export type KafkaBody = Buffer | readonly Uint8Array[];

export function kafkaBodyBytes(body: KafkaBody): number {
  if (Buffer.isBuffer(body)) return body.byteLength;
  let n = 0;
  for (const c of body) n += c.byteLength;
  return n;
}

/** The body's first bytes, where its leading fields are (throttle_time_ms). */
export function kafkaBodyHead(body: KafkaBody): Buffer {
  if (Buffer.isBuffer(body)) return body;
  const first = body[0];
  return first === undefined
    ? Buffer.alloc(0)
    : Buffer.from(first.buffer, first.byteOffset, first.byteLength);
}

export class KafkaWriter {
  private b: Buffer;
  pos = 0;
  /** The pieces before pos's region, when bytes were attached (in order). */
  private pieces: Uint8Array[] = [];
  /** Where the writer's own bytes not yet in pieces start; nothing before it may change. */
  private frozenAt = 0;
  constructor(initialBytes = 1024) {
    this.b = Buffer.allocUnsafe(initialBytes);
  }

  /** Makes room for n more bytes at once (a caller that knows its size: no growth on the way). */
  ensure(n: number): void {
    this.room(n);
  }

  private room(n: number): void {
    if (this.pos + n <= this.b.byteLength) return;
    const next = Buffer.allocUnsafe(Math.max(this.b.byteLength * 2, this.pos + n));
    this.b.copy(next, 0, 0, this.pos);
    this.b = next;
  }

  int8(v: number): this {
    assert(v >= -0x80 && v <= 0x7f, "int8 out of range");
    this.room(1);
    this.b.writeInt8(v, this.pos++);
    return this;
  }

  bool(v: boolean): this {
    return this.int8(v ? 1 : 0);
  }

  int16(v: number): this {
    assert(v >= -0x8000 && v <= 0x7fff, "int16 out of range");
    this.room(2);
    this.b.writeInt16BE(v, this.pos);
    this.pos += 2;
    return this;
  }

  int32(v: number): this {
    assert(v >= -0x80000000 && v <= 0x7fffffff, "int32 out of range");
    this.room(4);
    this.b.writeInt32BE(v, this.pos);
    this.pos += 4;
    return this;
  }

  uint32(v: number): this {
    this.room(4);
    this.b.writeUInt32BE(v >>> 0, this.pos);
    this.pos += 4;
    return this;
  }

  int64(v: bigint | number): this {
    this.room(8);
    this.b.writeBigInt64BE(BigInt(v), this.pos);
    this.pos += 8;
    return this;
  }

  float64(v: number): this {
    this.room(8);
    this.b.writeDoubleBE(v, this.pos);
    this.pos += 8;
    return this;
  }

  uvarint(v: number): this {
    assert(v >= 0 && v <= UVARINT_MAX, "uvarint out of range");
    this.room(5);
    while (v >= 128) {
      this.b[this.pos++] = (v % 128) | 128;
      v = Math.floor(v / 128);
    }
    this.b[this.pos++] = v;
    return this;
  }

  varint(v: number): this {
    return this.uvarint(v >= 0 ? v * 2 : -v * 2 - 1);
  }

  varlong(v: number | bigint): this {
    const big = BigInt(v);
    let u = BigInt.asUintN(64, (big << 1n) ^ (big >> 63n));
    this.room(10);
    while (u >= 128n) {
      this.b[this.pos++] = Number(u & 127n) | 128;
      u >>= 7n;
    }
    this.b[this.pos++] = Number(u);
    return this;
  }

  raw(bytes: Uint8Array): this {
    this.room(bytes.byteLength);
    this.b.set(bytes, this.pos);
    this.pos += bytes.byteLength;
    return this;
  }

  nullableString(s: string | null): this {
    if (s === null) return this.int16(-1);
    const bytes = Buffer.from(s, "utf8");
    return this.int16(bytes.byteLength).raw(bytes);
  }

  string(s: string): this {
    return this.nullableString(s);
  }

  compactNullableString(s: string | null): this {
    if (s === null) return this.uvarint(0);
    const bytes = Buffer.from(s, "utf8");
    return this.uvarint(bytes.byteLength + 1).raw(bytes);
  }

  nullableBytes(bytes: Uint8Array | null): this {
    if (bytes === null) return this.int32(-1);
    return this.int32(bytes.byteLength).raw(bytes);
  }

  array<T>(items: readonly T[], item: (w: KafkaWriter, t: T) => void): this {
    this.int32(items.length);
    for (const t of items) item(this, t);
    return this;
  }

  compactArray<T>(items: readonly T[], item: (w: KafkaWriter, t: T) => void): this {
    this.uvarint(items.length + 1);
    for (const t of items) item(this, t);
    return this;
  }

  /** An empty tagged-field section. */
  noTaggedFields(): this {
    return this.uvarint(0);
  }

  /**
   * Puts bytes in the answer by reference (finishPieces), not copied. The caller keeps them
   * unchanged until the answer is written; what was written before cannot be changed after.
   */
  attach(bytes: Uint8Array): this {
    if (this.pos > this.frozenAt) this.pieces.push(this.b.subarray(this.frozenAt, this.pos));
    this.pieces.push(bytes);
    this.frozenAt = this.pos;
    return this;
  }

  /** The answer: one buffer when nothing was attached, its pieces otherwise. */
  finishBody(): KafkaBody {
    if (this.pieces.length === 0) return this.finish();
    if (this.pos > this.frozenAt) this.pieces.push(this.b.subarray(this.frozenAt, this.pos));
    this.frozenAt = this.pos;
    return this.pieces;
  }

  /** Reserves an int32 to fill in later (a length); returns its position. */
  reserveInt32(): number {
    const at = this.pos;
    this.int32(0);
    return at;
  }

  fillInt32(at: number, v: number): void {
    assert(at >= this.frozenAt && at + 4 <= this.pos, "fillInt32 outside the bytes written");
    assert(v >= -0x80000000 && v <= 0x7fffffff, "int32 out of range");
    this.b.writeInt32BE(v, at);
  }

  fillUint32(at: number, v: number): void {
    assert(at >= this.frozenAt && at + 4 <= this.pos, "fillUint32 outside the bytes written");
    this.b.writeUInt32BE(v >>> 0, at);
  }

  /**
   * Writes a uvarint at `at`, before the bytes written since (moved along): a compact length
   * (Kafka's flexible records) once what it counts is written.
   */
  insertUvarint(at: number, v: number): void {
    assert(at >= this.frozenAt && at <= this.pos, "insertUvarint outside the bytes written");
    const end = this.pos;
    this.uvarint(v);
    const size = this.pos - end;
    const varint = Buffer.from(this.b.subarray(end, this.pos));
    this.b.copyWithin(at + size, at, end);
    this.b.set(varint, at);
  }

  /** The bytes written so far (a view; the writer must not be used afterwards). */
  finish(): Buffer {
    assert(this.pieces.length === 0, "finish() of a writer with attached bytes: finishBody()");
    return this.b.subarray(0, this.pos);
  }

  view(from: number, to = this.pos): Buffer {
    assert(this.frozenAt <= from && from <= to && to <= this.pos, "view outside the bytes written");
    return this.b.subarray(from, to);
  }
}
