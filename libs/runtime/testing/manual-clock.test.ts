import { describe, expect, it } from "vitest";
import { ManualClock } from "./manual-clock.js";

describe("ManualClock", () => {
  it("fires due timers in due-time order, ties in the order set, each at its own time", () => {
    const clock = new ManualClock(100);
    const fired: string[] = [];
    clock.setTimeout(() => fired.push(`b@${clock.nowMs()}`), 20);
    clock.setTimeout(() => fired.push(`a@${clock.nowMs()}`), 10);
    clock.setTimeout(() => fired.push(`c@${clock.nowMs()}`), 20);
    clock.setTimeout(() => fired.push("late"), 31);
    clock.advance(30);
    expect(fired).toEqual(["a@110", "b@120", "c@120"]);
    expect(clock.nowMs()).toBe(130);
    expect(clock.nextDueMs()).toBe(131);
  });

  it("fires timers set by a callback within the same step; cleared timers never fire", () => {
    const clock = new ManualClock();
    const fired: number[] = [];
    const cleared = clock.setTimeout(() => fired.push(-1), 5);
    clock.setTimeout(() => clock.setTimeout(() => fired.push(clock.nowMs()), 3), 4);
    clock.clearTimeout(cleared);
    clock.advance(7);
    expect(fired).toEqual([7]);
    expect(clock.pendingTimers()).toBe(0);
  });

  it("repeats an interval until cleared", () => {
    const clock = new ManualClock();
    const fired: number[] = [];
    const timer = clock.setInterval(() => fired.push(clock.nowMs()), 10);
    clock.advance(35);
    expect(fired).toEqual([10, 20, 30]);
    clock.clearInterval(timer);
    clock.advance(100);
    expect(fired).toEqual([10, 20, 30]);
  });

  it("runs immediates on the event loop without moving the clock; a cleared one never", async () => {
    const clock = new ManualClock(50);
    const ran: string[] = [];
    clock.setImmediate(() => ran.push(`a@${clock.nowMs()}`));
    clock.clearImmediate(clock.setImmediate(() => ran.push("cleared")));
    expect(ran).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(ran).toEqual(["a@50"]);
    expect(clock.pendingTimers()).toBe(0);
  });
});
