// The cleaner's I/O throttle: the rate held, idleness banked for at most a second.
import { describe, expect, it } from "vitest";
import { IoThrottle } from "./io-throttle.js";

describe("IoThrottle", () => {
  it("holds the rate, banks at most a second of idleness, and never waits when unlimited", async () => {
    let now = 0;
    const waits: number[] = [];
    const t = new IoThrottle(
      1000,
      () => now,
      (ms) => {
        waits.push(ms);
        now += ms;
        return Promise.resolve();
      },
    );
    // The first second's worth is banked (an idle throttle starts a second behind).
    await t.take(1000);
    expect(waits).toEqual([]);
    await t.take(500);
    expect(waits).toEqual([500]);
    now += 60_000;
    await t.take(1500);
    expect(waits).toEqual([500, 500]);
    const unlimited = new IoThrottle(
      0,
      () => 0,
      () => Promise.reject(new Error("waited")),
    );
    await unlimited.take(1 << 30);
  });
});
