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

export const CODECS = ["none", "gzip", "snappy", "lz4", "zstd"] as const;
export type CompressionCodec = (typeof CODECS)[number];

/** Kafka's attribute number of a codec. */
export function codecId(codec: CompressionCodec): number {
  return CODECS.indexOf(codec);
}

/** The codec with Kafka's attribute number id, or undefined for an unknown number. */
export function codecOf(id: number): CompressionCodec | undefined {
  return CODECS[id];
}

export function isCodec(s: string): s is CompressionCodec {
  return (CODECS as readonly string[]).includes(s);
}

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
 * An upper bound on an LZ4 frame's output, from its header and block sizes without inflating:
 * the declared content size, or else the block count times the frame's block maximum.
 */
function lz4OutputBound(data: Buffer): number {
  if (data.byteLength < 7 || data.readUInt32LE(0) !== LZ4_MAGIC)
    throw new DecodeError("compression", "lz4: not an LZ4 frame");
  const flg = data[4]!;
  const blockMax = LZ4_BLOCK_MAX[(data[5]! >> 4) & 0x07];
  if (blockMax === undefined) throw new DecodeError("compression", "lz4: bad block maximum size");
  if ((flg & 0x08) !== 0) return Number(data.readBigUInt64LE(6));
  const blockChecksums = (flg & 0x10) !== 0;
  let at = 6 + ((flg & 0x01) !== 0 ? 4 : 0) + 1; // descriptor, optional dictionary id, header checksum
  let blocks = 0;
  while (at + 4 <= data.byteLength) {
    const size = data.readUInt32LE(at) & 0x7fffffff;
    if (size === 0) return blocks * blockMax;
    at += 4 + size + (blockChecksums ? 4 : 0);
    blocks++;
  }
  throw new DecodeError("compression", "lz4: frame has no end mark");
}

/** Streamed block by block so that a frame inflating past maxBytes stops there. */
function zstdDecompress(data: Buffer, maxBytes: number): Buffer {
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
