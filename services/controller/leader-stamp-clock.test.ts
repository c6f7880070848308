import { describe, expect, it } from "vitest";
import { ManualClock } from "../../libs/runtime/testing/manual-clock.js";
import { LeaderStampClock } from "./leader-stamp-clock.js";

/** A ManualClock whose wall clock runs stepMs off its monotonic clock, as a host's clock after a step. */
class SteppingClock extends ManualClock {
  stepMs = 0;
  override nowMs(): number {
    return super.nowMs() + this.stepMs;
  }
}

describe("LeaderStampClock", () => {
  it("advances monotonically within a leadership whatever the wall clock does; rebases per term, never below the replicated clock", () => {
    const clock = new SteppingClock(1_000_000);
    let term = 1;
    let replicated = 0;
    const stamps = new LeaderStampClock(clock, { term: () => term }, () => replicated);
    expect(stamps.nowMs()).toBe(1_000_000); // a fresh cluster: the wall clock
    clock.stepMs = 60_000;
    clock.advance(500);
    expect(stamps.nowMs()).toBe(1_000_500);
    clock.stepMs = -240_000;
    clock.advance(500);
    expect(stamps.nowMs()).toBe(1_001_000);
    // A new term: the replicated clock is ahead of this host's (stepped back) wall clock.
    replicated = 1_001_000;
    term = 2;
    clock.advance(100);
    expect(stamps.nowMs()).toBe(1_001_000);
    clock.advance(100);
    expect(stamps.nowMs()).toBe(1_001_100);
    // A new term on a host whose wall clock runs ahead: the stamps follow it from there.
    clock.stepMs = 30_000;
    term = 3;
    expect(stamps.nowMs()).toBe(clock.nowMs());
    expect(stamps.monotonicMs()).toBe(clock.monotonicMs());
  });
});
