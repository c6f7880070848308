// Record compression codecs, numbered as Kafka's batch attributes number them (bits 0-2):
// 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd. Maintained packages do the work: node:zlib (gzip),
// snappy and lz4-napi (native, off the event loop), @mongodb-js/zstd (compress) and fzstd
// (decompress, streamed so that the output is bounded). Formats as Kafka clients write them:
// snappy raw or in xerial's framing (Java clients; detected by its magic), lz4 in the LZ4 frame
// format, zstd frames. Decompression never grows past the caller's bound: a batch that would is
// refused, not inflated.
import { promisify } from "node:util";
import { gunzip, gzip } from "node:zlib";
import * as snappy from "snappy";
import * as lz4 from "lz4-napi";
import * as zstdNative from "@mongodb-js/zstd";
import { Decompress as ZstdStream } from "fzstd";
import { DecodeError, isDecodeError } from "../common/decode-error.js";
import type { CompressionCodec } from "./batch-header.js";

// The codecs' names and numbers live with the batch header's attributes (batch-header.ts).
export { CODECS, codecId, codecOf, isCodec, type CompressionCodec } from "./batch-header.js";

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);
/** zstd level 3: zstd's default, Kafka's too. */
const ZSTD_LEVEL = 3;
/** xerial snappy-java's stream header: magic, then version and compatible version (int32 each). */
const XERIAL_MAGIC = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]);
const XERIAL_HEADER_BYTES = 16;
/** The LZ4 frame magic number (little-endian 0x184D2204). */
const LZ4_MAGIC = 0x184d2204;
/** LZ4 frame block maximum sizes by the descriptor's id (4: 64 KiB ... 7: 4 MiB). */
const LZ4_BLOCK_MAX: Record<number, number> = {
  4: 64 * 1024,
  5: 256 * 1024,
  6: 1024 * 1024,
  7: 4 * 1024 * 1024,
};

/** zstd frame magic (little-endian 0xFD2FB528); skippable frames are 0x184D2A50..5F. */
const ZSTD_MAGIC = 0xfd2fb528;
const ZSTD_SKIPPABLE_MAGIC = 0x184d2a50;
/** zstd's Block_Maximum_Size: no block inflates past 128 KiB. */
const ZSTD_BLOCK_MAX = 128 * 1024;
/** A window any frame may declare (zstd level 19 uses 8 MiB windows). */
const ZSTD_WINDOW_FLOOR = 8 * 1024 * 1024;
/** No frame's window past this (zstd's own default decoding limit, windowLog 27). */
const ZSTD_WINDOW_LIMIT = 128 * 1024 * 1024;

export async function compress(codec: CompressionCodec, data: Buffer): Promise<Buffer> {
  switch (codec) {
    case "none":
      return data;
    case "gzip":
      return gzipAsync(data);
    case "snappy":
      return snappy.compress(data);
    case "lz4":
      return lz4.compressFrame(data);
    case "zstd":
      return zstdNative.compress(data, ZSTD_LEVEL);
  }
}

/** The data, at most maxBytes of it; DecodeError when damaged or larger. */
export async function decompress(
  codec: CompressionCodec,
  data: Buffer,
  maxBytes: number,
): Promise<Buffer> {
  try {
    let out: Buffer;
    switch (codec) {
      case "none":
        out = data;
        break;
      case "gzip":
        out = await gunzipAsync(data, { maxOutputLength: maxBytes });
        break;
      case "snappy":
        out = await snappyDecompress(data, maxBytes);
        break;
      case "lz4":
        out = await lz4Decompress(data, maxBytes);
        break;
      case "zstd":
        out = zstdDecompress(data, maxBytes);
        break;
    }
    if (out.byteLength > maxBytes)
      throw new DecodeError("compression", `inflates past ${maxBytes} bytes`);
    return out;
  } catch (e) {
    if (isDecodeError(e, "compression")) throw e;
    throw new DecodeError("compression", `${codec}: ${(e as Error).message}`);
  }
}

async function snappyDecompress(data: Buffer, maxBytes: number): Promise<Buffer> {
  if (
    data.byteLength < XERIAL_HEADER_BYTES ||
    !data.subarray(0, XERIAL_MAGIC.byteLength).equals(XERIAL_MAGIC)
  )
    return snappyBlock(data, maxBytes);
  // xerial framing: header, then blocks of (int32 compressed length, raw snappy block).
  const parts: Buffer[] = [];
  let total = 0;
  for (let at = XERIAL_HEADER_BYTES; at < data.byteLength;) {
    if (at + 4 > data.byteLength)
      throw new DecodeError("compression", "snappy: a xerial block length is cut short");
    const n = data.readInt32BE(at);
    if (n < 0 || at + 4 + n > data.byteLength)
      throw new DecodeError("compression", `snappy: xerial block of ${n} bytes does not fit`);
    const block = await snappyBlock(data.subarray(at + 4, at + 4 + n), maxBytes - total);
    parts.push(block);
    total += block.byteLength;
    at += 4 + n;
  }
  return Buffer.concat(parts, total);
}

/** A raw snappy block; its declared length (a leading uvarint) is checked before inflating. */
async function snappyBlock(data: Buffer, maxBytes: number): Promise<Buffer> {
  const declared = uvarintPrefix(data);
  if (declared > maxBytes)
    throw new DecodeError(
      "compression",
      `snappy block declares ${declared} bytes (bound ${maxBytes})`,
    );
  return (await snappy.uncompress(data, { asBuffer: true })) as Buffer;
}

function uvarintPrefix(data: Buffer): number {
  let v = 0;
  for (let i = 0; i < 5 && i < data.byteLength; i++) {
    const b = data[i]!;
    v += (b & 0x7f) * 2 ** (7 * i);
    if ((b & 0x80) === 0) return v;
  }
  throw new DecodeError("compression", "snappy: malformed length prefix");
}

async function lz4Decompress(data: Buffer, maxBytes: number): Promise<Buffer> {
  const bound = lz4OutputBound(data);
  if (bound > maxBytes)
    throw new DecodeError(
      "compression",
      `lz4 frame may inflate to ${bound} bytes (bound ${maxBytes})`,
    );
  return lz4.decompressFrame(data);
}

/**
 * An upper bound on the output of the LZ4 frames in data, from their block sizes without
 * inflating: the block count times the frame's block maximum (the decoder refuses a block that
 * inflates past it). The content size a frame may declare is not trusted.
 */
function lz4OutputBound(data: Buffer): number {
  let bound = 0;
  let at = 0;
  while (at < data.byteLength) {
    if (data.byteLength - at < 7 || data.readUInt32LE(at) !== LZ4_MAGIC)
      throw new DecodeError("compression", "lz4: not an LZ4 frame");
    const flg = data[at + 4]!;
    const blockMax = LZ4_BLOCK_MAX[(data[at + 5]! >> 4) & 0x07];
    if (blockMax === undefined) throw new DecodeError("compression", "lz4: bad block maximum size");
    const blockChecksums = (flg & 0x10) !== 0;
    // descriptor (flags, block descriptor, optional content size and dictionary id), header checksum
    at += 6 + ((flg & 0x08) !== 0 ? 8 : 0) + ((flg & 0x01) !== 0 ? 4 : 0) + 1;
    for (;;) {
      if (at + 4 > data.byteLength)
        throw new DecodeError("compression", "lz4: frame has no end mark");
      const size = data.readUInt32LE(at) & 0x7fffffff;
      at += 4;
      if (size === 0) break;
      if (size > blockMax)
        throw new DecodeError("compression", `lz4: a block of ${size} bytes (max ${blockMax})`);
      at += size + (blockChecksums ? 4 : 0);
      bound += blockMax;
    }
    if ((flg & 0x04) !== 0) at += 4; // content checksum
  }
  return bound;
}

/**
 * Checks, before anything is inflated, the zstd frames in data: a bound on their output from
 * their block headers (each compressed block inflates to 128 KiB at most) against maxBytes, and
 * the window each frame makes the decoder allocate against that bound (ZSTD_WINDOW_FLOOR at
 * least, as encoders declare windows larger than small inputs). A declared window or content
 * size is a claim: it only ever makes the check stricter.
 */
function checkZstdFrames(data: Buffer, maxBytes: number): void {
  let output = 0;
  let at = 0;
  while (at < data.byteLength) {
    if (data.byteLength - at < 5)
      throw new DecodeError("compression", "zstd: a frame is cut short");
    const magic = data.readUInt32LE(at);
    if ((magic & 0xfffffff0) === ZSTD_SKIPPABLE_MAGIC) {
      if (data.byteLength - at < 8)
        throw new DecodeError("compression", "zstd: a skippable frame is cut short");
      at += 8 + data.readUInt32LE(at + 4);
      continue;
    }
    if (magic !== ZSTD_MAGIC) throw new DecodeError("compression", "zstd: not a zstd frame");
    const fhd = data[at + 4]!;
    const singleSegment = (fhd & 0x20) !== 0;
    const checksum = (fhd & 0x04) !== 0;
    const dictIdBytes = [0, 1, 2, 4][fhd & 0x03]!;
    const fcsFlag = fhd >> 6;
    const fcsBytes = fcsFlag === 0 ? (singleSegment ? 1 : 0) : 1 << fcsFlag;
    let h = at + 5;
    let window = 0;
    if (!singleSegment) {
      const wd = data[h++];
      if (wd === undefined) throw new DecodeError("compression", "zstd: a frame is cut short");
      const base = 2 ** (10 + (wd >> 3));
      window = base + (base / 8) * (wd & 0x07);
    }
    h += dictIdBytes;
    if (h + fcsBytes > data.byteLength)
      throw new DecodeError("compression", "zstd: a frame header is cut short");
    let contentSize = 0;
    for (let i = 0; i < fcsBytes; i++) contentSize += data[h + i]! * 2 ** (8 * i);
    if (fcsBytes === 2) contentSize += 256;
    if (singleSegment) window = contentSize;
    if (contentSize > maxBytes)
      throw new DecodeError(
        "compression",
        `zstd: a frame declares ${contentSize} bytes of content (bound ${maxBytes})`,
      );
    at = h + fcsBytes;
    let frameOutput = 0;
    for (;;) {
      if (at + 3 > data.byteLength)
        throw new DecodeError("compression", "zstd: a block header is cut short");
      const bh = data[at]! | (data[at + 1]! << 8) | (data[at + 2]! << 16);
      at += 3;
      const type = (bh >> 1) & 0x03;
      const size = bh >>> 3;
      if (type === 3) throw new DecodeError("compression", "zstd: reserved block type");
      if (size > ZSTD_BLOCK_MAX)
        throw new DecodeError("compression", `zstd: a block of ${size} bytes`);
      // raw: size bytes follow; RLE: one byte, repeated size times; compressed: size bytes in.
      at += type === 1 ? 1 : size;
      frameOutput += type === 2 ? ZSTD_BLOCK_MAX : size;
      if ((bh & 1) !== 0) break;
    }
    if (checksum) at += 4;
    const windowMax = Math.min(Math.max(frameOutput, ZSTD_WINDOW_FLOOR), ZSTD_WINDOW_LIMIT);
    if (window > windowMax)
      throw new DecodeError(
        "compression",
        `zstd: a frame declares a ${window}-byte window for at most ${frameOutput} bytes`,
      );
    output += frameOutput;
    if (output > maxBytes)
      throw new DecodeError("compression", `zstd: may inflate past ${maxBytes} bytes`);
  }
}

/** Streamed block by block so that a frame inflating past maxBytes stops there. */
function zstdDecompress(data: Buffer, maxBytes: number): Buffer {
  checkZstdFrames(data, maxBytes);
  const parts: Uint8Array[] = [];
  let total = 0;
  const stream = new ZstdStream((chunk) => {
    total += chunk.byteLength;
    if (total > maxBytes)
      throw new DecodeError("compression", `zstd: inflates past ${maxBytes} bytes`);
    parts.push(chunk);
  });
  stream.push(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), true);
  return Buffer.concat(parts, total);
}
