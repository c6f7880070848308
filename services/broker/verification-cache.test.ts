// VerificationCache: bounded with the oldest entry evicted first, forgotten per (partition,
// producer) or per partition, and a verification that raced a marker is not remembered.
import { describe, expect, it } from "vitest";
import { VerificationCache } from "./verification-cache.js";

describe("VerificationCache", () => {
  it("keeps at most its bound, evicting the least recently used entry", () => {
    const c = new VerificationCache(3);
    for (const pid of [1n, 2n, 3n]) expect(c.add(c.begin(), pid, 0, "t", 0)).toBe(true);
    expect(c.has(1n, 0, "t", 0)).toBe(true); // 1 is now the newest
    c.add(c.begin(), 4n, 0, "t", 0);
    expect(c.size).toBe(3);
    expect(c.has(2n, 0, "t", 0)).toBe(false);
    expect([1n, 3n, 4n].map((pid) => c.has(pid, 0, "t", 0))).toEqual([true, true, true]);
    for (let pid = 10n; pid < 1_000n; pid++)
      c.add(c.begin(), pid, 0, `t${pid % 7n}`, Number(pid % 5n));
    expect(c.size).toBe(3);
    expect(() => new VerificationCache(0)).toThrow(RangeError);
  });

  it("forgets one producer's entries of one partition (every epoch), or every entry of a partition", () => {
    const c = new VerificationCache(100);
    c.add(c.begin(), 7n, 0, "t", 0);
    c.add(c.begin(), 7n, 1, "t", 0);
    c.add(c.begin(), 7n, 0, "t", 1);
    c.add(c.begin(), 8n, 0, "t", 0);
    c.forget("t", 0, 7n);
    expect([
      c.has(7n, 0, "t", 0),
      c.has(7n, 1, "t", 0),
      c.has(7n, 0, "t", 1),
      c.has(8n, 0, "t", 0),
    ]).toEqual([false, false, true, true]);
    c.forget("t", 0);
    expect([c.has(7n, 0, "t", 1), c.has(8n, 0, "t", 0)]).toEqual([true, false]);
    expect(c.size).toBe(1);
    c.forget("never", 3, 1n); // nothing there: harmless
    expect(c.size).toBe(1);
  });

  it("does not remember a verification that a marker overtook", () => {
    const c = new VerificationCache(100);
    const token = c.begin(); // the coordinator is being asked...
    c.forget("t", 0, 7n); // ...while the transaction's marker is applied
    expect(c.add(token, 7n, 0, "t", 0)).toBe(false);
    expect(c.has(7n, 0, "t", 0)).toBe(false);
    expect(c.add(c.begin(), 7n, 0, "t", 0)).toBe(true);
  });
});
