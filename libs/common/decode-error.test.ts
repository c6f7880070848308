// The one decode error: the format it names is what callers tell formats apart by.
import { describe, expect, it } from "vitest";
import { DecodeError, isDecodeError } from "./decode-error.js";

describe("DecodeError", () => {
  it("names its format and keeps the message and cause", () => {
    const cause = new Error("inner");
    const e = new DecodeError("kafka", "frame ends 3 bytes early", { cause });
    expect(e).toBeInstanceOf(Error);
    expect(e.name).toBe("DecodeError");
    expect(e.message).toBe("frame ends 3 bytes early");
    expect(e.cause).toBe(cause);
    expect(isDecodeError(e)).toBe(true);
    expect(isDecodeError(e, "kafka")).toBe(true);
    expect(isDecodeError(e, "compression")).toBe(false);
    expect(isDecodeError(new Error("x"))).toBe(false);
  });
});
