import { describe, expect, it } from "vitest";
import { ByteReader, ByteWriter, copyBytes } from "./byte-codec.js";

function encoded(): Uint8Array {
  const w = new ByteWriter();
  w.bytes(Buffer.from("abc"));
  return w.finish();
}

describe("byte codec", () => {
  it("copy mode returns bytes that do not alias the input (Buffer#slice would be a view)", () => {
    const data = encoded();
    const v = new ByteReader(data, "test").bytes()!;
    data.fill(0);
    expect(Buffer.from(v).toString()).toBe("abc");
  });

  it("zero-copy mode returns views into the input", () => {
    const data = encoded();
    const v = new ByteReader(data, "test", false).bytes()!;
    data.fill(0);
    expect([...v]).toEqual([0, 0, 0]);
  });

  it("copyBytes is an unshared, exact copy", () => {
    const src = new Uint8Array([1, 2, 3]);
    const c = copyBytes(src);
    src[0] = 9;
    expect([...c]).toEqual([1, 2, 3]);
    expect(c.buffer.byteLength).toBe(3);
  });
});
