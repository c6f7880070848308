import { describe, expect, it } from "vitest";
import { clusterPortSpan } from "./free-base-port.js";
import { ephemeralPortRange, freePort, randomListenBase } from "./port-check.js";

describe("port choice for local clusters", () => {
  it("keeps every port of a window outside the kernel's ephemeral range", () => {
    const [low, high] = ephemeralPortRange();
    const span = clusterPortSpan({ controllers: 3, brokers: 4, coordinators: 3 });
    for (const r of [0, 0.25, 0.5, 0.75, 0.999999]) {
      const base = randomListenBase(span, () => r);
      const last = base + span - 1;
      expect(
        last < low || base > high,
        `window ${base}..${last} vs ephemeral ${low}..${high}`,
      ).toBe(true);
      expect(last).toBeLessThanOrEqual(65535);
    }
  });

  it("spans from the base port to the last metrics port", () => {
    // controllers base+0..2, brokers base+100..103, coordinators base+200..202, metrics +1000
    expect(clusterPortSpan({ controllers: 3, brokers: 4, coordinators: 3 })).toBe(1203);
  });

  it("hands out a single free port outside the ephemeral range", async () => {
    const [low, high] = ephemeralPortRange();
    const port = await freePort();
    expect(port < low || port > high).toBe(true);
  });
});
