import { describe, expect, it } from "vitest";
import { javaStringHashCode, kafkaAbs, partitionFor } from "./hash.js";

describe("coordinator placement", () => {
  it("matches the test vectors of DESIGN.md", () => {
    expect(partitionFor("hello", 50)).toBe(22);
    expect(partitionFor("my-txn-id", 50)).toBe(11);
    expect(partitionFor("polygenelubricants", 50)).toBe(0);
  });
  it("follows Java's String.hashCode with overflow", () => {
    expect(javaStringHashCode("")).toBe(0);
    expect(javaStringHashCode("hello")).toBe(99162322);
    expect(javaStringHashCode("polygenelubricants")).toBe(-2147483648);
    expect(kafkaAbs(-2147483648)).toBe(0);
  });
});
