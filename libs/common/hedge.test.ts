import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { hedged } from "./hedge.js";

/** A node that answers only when told to (silent until then, as a SIGSTOPped process). */
function node() {
  const calls: string[] = [];
  const pending = new Map<string, (v: string) => void>();
  return {
    calls,
    send: (address: string) =>
      new Promise<string>((resolve) => {
        calls.push(address);
        pending.set(address, resolve);
      }),
    answer: (address: string) => pending.get(address)!(`from ${address}`),
  };
}

describe("hedged", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("an attempt that answers within the delay is never relocated", async () => {
    const n = node();
    const relocate = vi.fn(async () => "b");
    const r = hedged({ address: "a", send: n.send, relocate, delayMs: 100, relocatesMax: 5 });
    await vi.advanceTimersByTimeAsync(50);
    n.answer("a");
    await expect(r).resolves.toEqual({ address: "a", ok: true, value: "from a" });
    await vi.advanceTimersByTimeAsync(1_000);
    expect(relocate).not.toHaveBeenCalled();
    expect(n.calls).toEqual(["a"]);
  });

  it("a silent attempt is relocated every delay until another node is named, which answers", async () => {
    const n = node();
    const named = ["a", undefined, "b"]; // the old leader still named, then none, then the new one
    const relocate = vi.fn(async (silent: string) => {
      expect(silent).toBe("a");
      return named.shift();
    });
    const r = hedged({ address: "a", send: n.send, relocate, delayMs: 100, relocatesMax: 10 });
    await vi.advanceTimersByTimeAsync(250);
    expect(n.calls).toEqual(["a"]);
    await vi.advanceTimersByTimeAsync(50);
    expect(relocate).toHaveBeenCalledTimes(3);
    expect(n.calls).toEqual(["a", "b"]);
    n.answer("b");
    await expect(r).resolves.toEqual({ address: "b", ok: true, value: "from b" });
    // The late answer of the first is dropped; no relocate after the outcome.
    n.answer("a");
    await vi.advanceTimersByTimeAsync(1_000);
    expect(relocate).toHaveBeenCalledTimes(3);
  });

  it("relocates at most relocatesMax times, and a failure settles like an answer", async () => {
    const n = node();
    const relocate = vi.fn(async () => "a");
    let fail: (e: Error) => void = () => {};
    const r = hedged({
      address: "a",
      send: (address) => {
        n.calls.push(address);
        return new Promise<string>((_, reject) => (fail = reject));
      },
      relocate,
      delayMs: 100,
      relocatesMax: 3,
    });
    await vi.advanceTimersByTimeAsync(1_000);
    expect(relocate).toHaveBeenCalledTimes(3);
    fail(new Error("deadline"));
    await expect(r).resolves.toMatchObject({ address: "a", ok: false });
    expect(n.calls).toEqual(["a"]);
  });
});
