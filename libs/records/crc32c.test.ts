// CRC-32C: Castagnoli's check value, and the table paths (slice-by-16 over aligned words,
// slice-by-8 over bytes) agree with the bytewise definition at every length and alignment (the
// tail loop, views into a larger buffer) and when continued; the native CRC instruction used for
// long inputs gives the same values, across the size where crc32c switches to it.
import { describe, expect, it } from "vitest";
import { crc32c, crc32cNative, crc32cTables } from "./crc32c.js";

function bytewise(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
  }
  return ~c >>> 0;
}

describe("crc32c", () => {
  it("is Castagnoli's CRC at every length and alignment, and continues across pieces", () => {
    expect(crc32c(Buffer.from("123456789")).toString(16)).toBe("e3069283");
    const data = Buffer.alloc(200);
    for (let i = 0; i < data.length; i++) data[i] = (i * 131 + 7) & 0xff;
    for (let from = 0; from < 9; from++)
      for (let length = 0; length < 80; length++) {
        const view = data.subarray(from, from + length);
        expect(crc32c(view)).toBe(bytewise(view));
      }
    expect(crc32c(data.subarray(37), crc32c(data.subarray(0, 37)))).toBe(crc32c(data));
  });

  it("agrees with the bytewise definition over long inputs at every word alignment", () => {
    const data = Buffer.alloc(10_007);
    for (let i = 0; i < data.length; i++) data[i] = (i * 197 + 11) & 0xff;
    for (let from = 0; from < 4; from++)
      for (const length of [64, 65, 1_000, 9_999]) {
        const view = data.subarray(from, from + length);
        expect(crc32c(view)).toBe(bytewise(view));
      }
  });

  it("uses the native CRC instruction on this platform and agrees with the tables", () => {
    // The prebuilt binary exists for linux-x64 (CI and these machines): a missing one would
    // silently cost 4x on every batch, so it is a failure here.
    expect(crc32cNative).toBe(true);
    const data = Buffer.alloc(70_001);
    for (let i = 0; i < data.length; i++) data[i] = (i * 89 + 5) & 0xff;
    for (let from = 0; from < 4; from++)
      for (const length of [0, 1, 255, 256, 257, 4_096, 65_536]) {
        const view = data.subarray(from, from + length);
        expect(crc32c(view)).toBe(crc32cTables(view));
        expect(crc32c(view, 0x1234_5678)).toBe(crc32cTables(view, 0x1234_5678));
      }
    expect(crc32c(data.subarray(300), crc32c(data.subarray(0, 300)))).toBe(bytewise(data));
  });
});
