import { describe, expect, it } from "vitest";
import { TimeoutError } from "../errors.js";
import { BufferMemory } from "./buffer-memory.js";
import { checkLegal, isLegal } from "./transaction-state.js";
import { IllegalStateError } from "../errors.js";

describe("BufferMemory", () => {
  it("grants first come first served and times out a blocked reserve with TimeoutError", async () => {
    const m = new BufferMemory(100);
    await m.reserve(80, 1_000);
    expect(m.tryReserve(30)).toBe(false);
    const started = Date.now();
    await expect(m.reserve(30, 200)).rejects.toBeInstanceOf(TimeoutError);
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    const waiting = m.reserve(50, 5_000);
    expect(m.tryReserve(10)).toBe(false); // queued behind the waiter even though 20 bytes are free
    m.release(80);
    await waiting;
    expect(m.used).toBe(50);
  });

  it("resize counts a built batch instead of its estimate: smaller grants a waiter, larger never waits", async () => {
    const m = new BufferMemory(100);
    await m.reserve(90, 1_000);
    const waiting = m.reserve(30, 5_000);
    m.resize(90, 60); // the built batch is smaller than its records' estimate
    await waiting;
    expect(m.used).toBe(90);
    m.resize(60, 75); // a few bytes of framing more: counted at once, past the bound
    expect(m.used).toBe(105);
    expect(m.tryReserve(1)).toBe(false);
    m.release(75);
    expect(m.used).toBe(30);
  });
});

describe("transaction state table", () => {
  it("allows each method only in its legal states", () => {
    expect(isLegal("beginTransaction", "READY")).toBe(true);
    expect(isLegal("beginTransaction", "IN_TRANSACTION")).toBe(false);
    expect(isLegal("send", "READY")).toBe(false);
    expect(isLegal("abortTransaction", "ABORTABLE_ERROR")).toBe(true);
    expect(isLegal("commitTransaction", "ABORTABLE_ERROR")).toBe(false);
    expect(() => checkLegal("commitTransaction", "FATAL_ERROR")).toThrow(IllegalStateError);
  });
});
