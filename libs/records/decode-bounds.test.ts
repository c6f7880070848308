// Decoding work follows the bytes received, never what they declare: a zstd frame declaring a
// 1 GiB window (the decoder would allocate it) or more content than the bound is refused before
// inflating; LZ4 output is bounded by every frame's blocks (a second frame after the first one's
// end mark counts too); record and header counts are checked against the bytes that must hold
// them before any is read.
import { describe, expect, it } from "vitest";
import { compress, decompress } from "./compression.js";
import { KafkaReader, KafkaWriter } from "./kafka-codec.js";
import { decodeRecordsSection } from "./records-section.js";

const MAX = 1024 * 1024;

async function refusal(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    return (e as Error).message;
  }
  return "accepted";
}

/** A zstd frame header (no checksum, no dictionary) and RLE blocks of 128 KiB of 'a' each. */
function zstdRleFrame(header: number[], blocks: number): Buffer {
  const out = [0x28, 0xb5, 0x2f, 0xfd, ...header];
  for (let i = 0; i < blocks; i++) {
    const bh = (131072 << 3) | (1 << 1) | (i === blocks - 1 ? 1 : 0);
    out.push(bh & 0xff, (bh >> 8) & 0xff, (bh >> 16) & 0xff, 0x61);
  }
  return Buffer.from(out);
}

describe("decoding bounds", () => {
  it("zstd: a frame that declares a 1 GiB window for 512 KiB of blocks is refused before inflating", async () => {
    // Frame header descriptor 0 (window descriptor follows), window 2^(10+20) bytes.
    const frame = zstdRleFrame([0x00, 20 << 3], 4);
    expect(await refusal(decompress("zstd", frame, MAX))).toMatch(/window/);
    // The same blocks with an honest 128 KiB window inflate.
    const honest = zstdRleFrame([0x00, 7 << 3], 4);
    expect((await decompress("zstd", honest, MAX)).equals(Buffer.alloc(4 * 131072, 0x61))).toBe(
      true,
    );
  });

  it("zstd: a frame that declares more content than the bound, or blocks that may exceed it, is refused", async () => {
    // Single segment, 4-byte content size of 2^30.
    const declared = zstdRleFrame([0xa0, 0, 0, 0, 0x40], 1);
    expect(await refusal(decompress("zstd", declared, MAX))).toMatch(/declares 1073741824 bytes/);
    const many = zstdRleFrame([0x00, 7 << 3], 9); // 9 x 128 KiB > 1 MiB
    expect(await refusal(decompress("zstd", many, MAX))).toMatch(/may inflate past/);
    // A real encoder's frame still passes.
    const text = Buffer.from("tern ".repeat(50_000));
    expect((await decompress("zstd", await compress("zstd", text), MAX)).equals(text)).toBe(true);
  });

  it("lz4: a second frame after the first one's end mark counts towards the bound", async () => {
    const small = await compress("lz4", Buffer.from("small"));
    const big = await compress("lz4", Buffer.alloc(4 * MAX, 1));
    expect(await refusal(decompress("lz4", Buffer.concat([small, big]), MAX))).toMatch(
      /lz4 frame may inflate to \d+ bytes/,
    );
    expect(await refusal(decompress("lz4", big, MAX))).toMatch(/lz4 frame may inflate/);
  });

  it("records: a count that the bytes cannot hold is refused before any record is read", () => {
    const w = new KafkaWriter(64);
    w.raw(Buffer.alloc(20));
    expect(() => decodeRecordsSection(new KafkaReader(w.finish()), 10, 0)).toThrow(
      /record count 10 in 20 bytes/,
    );
  });

  it("headers: a count that the record's bytes cannot hold is refused before any header is read", () => {
    const body = new KafkaWriter(32);
    body.int8(0).varlong(0n).varint(0).varint(-1).varint(-1).varint(3); // 3 headers...
    body.varint(0).varint(-1); // ...in 2 bytes
    const w = new KafkaWriter(32);
    w.varint(body.pos).raw(body.view(0));
    expect(() => decodeRecordsSection(new KafkaReader(w.finish()), 1, 0)).toThrow(
      /header count 3 in the record's last 2 bytes/,
    );
  });
});
