import { describe, expect, it } from "vitest";
import { DefaultPartitioner, murmur2, partitionForKey, toPositive } from "./partitioner.js";

describe("murmur2 (Kafka's Utils.murmur2)", () => {
  it("matches Kafka's test vectors", () => {
    // From Kafka's UtilsTest.testMurmur2.
    const cases: Array<[string, number]> = [
      ["21", -973932308],
      ["foobar", -790332482],
      ["a-little-bit-long-string", -985981536],
      ["a-little-bit-longer-string", -1486304829],
      ["lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971],
      ["abc", 479470107],
    ];
    for (const [s, h] of cases) expect(murmur2(Buffer.from(s))).toBe(h);
  });

  it("keyed records always go to the same partition; unkeyed ones stick until a batch closes", () => {
    const p = new DefaultPartitioner();
    const k = Buffer.from("user-42");
    expect(p.partition("t", k, 6)).toBe(toPositive(murmur2(k)) % 6);
    expect(p.partition("t", k, 6)).toBe(partitionForKey(k, 6));
    const first = p.partition("t", null, 6);
    expect(p.partition("t", null, 6)).toBe(first);
    p.onBatchClosed("t", first, 6);
    expect(p.partition("t", null, 6)).toBe((first + 1) % 6);
  });
});
