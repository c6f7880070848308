// The record cache holds at most its budget: records a window gave up are unreachable from it
// (checked with the garbage collector, since the window's array keeps a prefix of dropped slots
// until it compacts), and the budget is shared, largest window first.
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import type { LogRecord } from "./log-record.js";
import { RecordCache } from "./record-cache.js";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

const KiB = 1024;

function record(index: number, bytes: number): LogRecord {
  return {
    index,
    term: 1,
    entryType: 0,
    baseOffset: BigInt(index),
    offsetCount: 1,
    maxTimestampMs: -1,
    appendTimeMs: 0,
    codec: 0,
    data: new Uint8Array(bytes),
  };
}

describe("RecordCache", () => {
  it("keeps the windows within the budget, evicting the largest other window first", () => {
    const cache = new RecordCache(64 * KiB);
    const a = cache.window();
    const b = cache.window();
    for (let i = 1; i <= 12; i++) a.push(record(i, 4 * KiB));
    for (let i = 1; i <= 10; i++) b.push(record(i, 4 * KiB));
    expect(cache.usedBytes()).toBeLessThanOrEqual(64 * KiB);
    expect(a.bytes + b.bytes).toBe(cache.usedBytes());
    expect(b.size()).toBe(10);
    expect(a.first()!.index).toBe(7);
  });

  it("lets the records it dropped go: nothing past the budget stays reachable", async () => {
    const cache = new RecordCache(256 * KiB);
    const w = cache.window();
    const refs: Array<WeakRef<LogRecord>> = [];
    // 600 records of 64 KiB through a 256 KiB budget: fewer drops than the window compacts at.
    for (let i = 1; i <= 600; i++) {
      const r = record(i, 64 * KiB);
      if (i <= 500) refs.push(new WeakRef(r));
      w.push(r);
    }
    expect(w.size()).toBe(4);
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    expect(refs.filter((r) => r.deref() !== undefined)).toHaveLength(0);
    // What is kept still reads back.
    expect(w.slice(597, 601, 1024 * KiB)!.map((r) => r.index)).toEqual([597, 598, 599, 600]);
  });
});
