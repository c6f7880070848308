// FrameAssembler: frames split anywhere (the size prefix too) come out whole and in order; a
// frame inside one chunk is handed out without a copy; a frame spread over many chunks is joined
// with one copy whatever the number of chunks; sizes outside the bounds are refused.
import { describe, expect, it } from "vitest";
import { isDecodeError } from "../../libs/common/decode-error.js";
import { FrameAssembler } from "./frame-assembler.js";

function frame(body: Buffer): Buffer {
  const size = Buffer.alloc(4);
  size.writeInt32BE(body.byteLength);
  return Buffer.concat([size, body]);
}

function drain(a: FrameAssembler): Buffer[] {
  const out: Buffer[] = [];
  for (let f = a.next(); f !== undefined; f = a.next()) out.push(f);
  return out;
}

describe("FrameAssembler", () => {
  it("gives whole frames in order however the stream is cut, the size prefix included", () => {
    const bodies = [
      Buffer.from("first"),
      Buffer.alloc(0),
      Buffer.from("third frame"),
      Buffer.alloc(300, 7),
    ];
    const stream = Buffer.concat(bodies.map(frame));
    for (const cut of [1, 2, 3, 5, 7, 64, stream.byteLength]) {
      const a = new FrameAssembler(() => 1_000);
      const out: Buffer[] = [];
      for (let at = 0; at < stream.byteLength; at += cut) {
        a.push(stream.subarray(at, at + cut));
        out.push(...drain(a));
      }
      expect(out.map((b) => b.toString("hex"))).toEqual(bodies.map((b) => b.toString("hex")));
      expect(a.bufferedBytes).toBe(0);
    }
  });

  it("hands out a frame that lies in one chunk as a view of it (no copy)", () => {
    const a = new FrameAssembler(() => 1_000);
    const chunk = Buffer.concat([frame(Buffer.from("one")), frame(Buffer.from("two"))]);
    a.push(chunk);
    const [one, two] = drain(a);
    expect(one!.buffer).toBe(chunk.buffer);
    expect(two!.buffer).toBe(chunk.buffer);
  });

  it("joins a frame of many chunks once, when it is whole", () => {
    const body = Buffer.alloc(4 * 1024 * 1024);
    for (let i = 0; i < body.byteLength; i += 4096) body[i] = i & 0xff;
    const stream = frame(body);
    const a = new FrameAssembler(() => body.byteLength);
    const chunk = 64 * 1024;
    let joined = 0;
    const concat = Buffer.concat;
    Buffer.concat = ((list: readonly Uint8Array[], total?: number) => {
      joined++;
      return concat(list, total);
    }) as typeof Buffer.concat;
    try {
      for (let at = 0; at < stream.byteLength; at += chunk) {
        a.push(stream.subarray(at, at + chunk));
        if (at + chunk < stream.byteLength) expect(a.next()).toBeUndefined();
      }
      expect(a.next()!.equals(body)).toBe(true);
    } finally {
      Buffer.concat = concat;
    }
    expect(joined).toBe(1);
  });

  it("refuses a size above the bound (asked per frame) or below the minimum", () => {
    let bound = 10;
    const a = new FrameAssembler(() => bound, 2);
    a.push(frame(Buffer.alloc(10)));
    expect(a.next()!.byteLength).toBe(10);
    a.push(frame(Buffer.alloc(11)));
    expect(() => a.next()).toThrow(/frame of 11 bytes \(accepted: 2\.\.10\)/);
    bound = 20;
    expect(a.next()!.byteLength).toBe(11);
    a.push(frame(Buffer.alloc(1)));
    try {
      a.next();
      expect.unreachable();
    } catch (e) {
      expect(isDecodeError(e, "kafka")).toBe(true);
    }
    const negative = new FrameAssembler(() => 100);
    negative.push(Buffer.from([0xff, 0xff, 0xff, 0xff]));
    expect(() => negative.next()).toThrow(/frame of -1 bytes/);
  });
});
