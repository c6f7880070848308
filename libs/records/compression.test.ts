// Every codec round-trips; decompression is bounded (a payload that would inflate past the bound
// is refused before or while inflating, never held whole), and snappy accepts both the raw
// format (librdkafka) and xerial's framing (Java clients).
import { describe, expect, it } from "vitest";
import * as snappy from "snappy";
import { CODECS, codecId, codecOf, compress, decompress } from "./compression.js";
import { isDecodeError } from "../common/decode-error.js";

const text = Buffer.from("tern keeps records in order; ".repeat(2000));

async function failure(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    if (isDecodeError(e, "compression")) return "refused";
    throw e;
  }
  return "accepted";
}

describe("record compression codecs", () => {
  it("numbers codecs as Kafka's batch attributes do", () => {
    expect(CODECS.map(codecId)).toEqual([0, 1, 2, 3, 4]);
    expect(codecOf(3)).toBe("lz4");
    expect(codecOf(5)).toBeUndefined();
  });

  it.each(CODECS)("%s round-trips and shrinks repetitive data", async (codec) => {
    const packed = await compress(codec, text);
    if (codec !== "none") expect(packed.byteLength).toBeLessThan(text.byteLength / 10);
    expect((await decompress(codec, packed, 1 << 20)).equals(text)).toBe(true);
  });

  it.each(["gzip", "snappy", "lz4", "zstd"] as const)(
    "%s refuses to inflate past the bound, and refuses garbage",
    async (codec) => {
      const packed = await compress(codec, text);
      expect(await failure(decompress(codec, packed, text.byteLength - 1))).toBe("refused");
      expect(
        await failure(decompress(codec, Buffer.from("definitely not compressed data"), 1 << 20)),
      ).toBe("refused");
    },
  );

  it("snappy decodes xerial's framing (header, then length-prefixed raw blocks)", async () => {
    const half = text.byteLength / 2;
    const blocks = [
      await snappy.compress(text.subarray(0, half)),
      await snappy.compress(text.subarray(half)),
    ];
    const header = Buffer.from([
      0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00, 0, 0, 0, 1, 0, 0, 0, 1,
    ]);
    const framed = Buffer.concat([header, ...blocks.flatMap((b) => [lengthOf(b), b])]);
    expect((await decompress("snappy", framed, text.byteLength)).equals(text)).toBe(true);
    expect(await failure(decompress("snappy", framed, half))).toBe("refused");
  });
});

function lengthOf(b: Buffer): Buffer {
  const out = Buffer.alloc(4);
  out.writeInt32BE(b.byteLength);
  return out;
}
