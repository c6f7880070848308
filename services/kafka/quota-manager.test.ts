import { describe, expect, it } from "vitest";
import { ClientQuotaManager, RateSensor } from "./quota-manager.js";

describe("RateSensor (Kafka's sampled rate and throttle time)", () => {
  const window = { samples: 11, sampleMs: 1_000 };

  it("measures over at least samples − 1 windows, and throttles by (rate − quota) / quota × window", () => {
    const s = new RateSensor(window);
    // 9 000 bytes at t=0 over a 10 s minimum window: 900 B/s, within 1 000 B/s.
    expect(s.record(9_000, 0, 1_000)).toBe(0);
    // 12 000 bytes: 1 200 B/s over 10 s, 20 % over: 2 000 ms.
    expect(s.record(3_000, 0, 1_000)).toBe(2_000);
  });

  it("forgets samples older than the whole window", () => {
    const s = new RateSensor(window);
    expect(s.record(20_000, 0, 1_000)).toBeGreaterThan(0);
    expect(s.record(1, 12_000, 1_000)).toBe(0);
  });

  it("bounds one throttle by the whole window", () => {
    const s = new RateSensor(window);
    expect(s.record(1e12, 0, 1)).toBe(11_000);
  });
});

describe("ClientQuotaManager", () => {
  it("applies nothing without quotas, and throttles only the entity over its quota", () => {
    let now = 0;
    const m = new ClientQuotaManager({ window: { samples: 2, sampleMs: 1_000 }, now: () => now });
    const alice = m.forConnection();
    const bob = m.forConnection();
    expect(alice.lookup(undefined, "User:alice", "c")).toBeUndefined();
    const entries = [{ entity: { user: "alice" }, values: { producer_byte_rate: 1_000 } }];
    expect(bob.lookup(entries, "User:bob", "c")).toBeUndefined();
    const a = alice.lookup(entries, "User:alice", "c")!;
    expect(alice.throttle(a, "produce", 500, 0)).toBe(0);
    expect(alice.throttle(a, "fetch", 1e9, 0)).toBe(0); // no fetch quota
    expect(alice.throttle(a, "produce", 2_000, 0)).toBeGreaterThan(0);
    now = 10_000;
    expect(alice.throttle(a, "produce", 500, 0)).toBe(0);
    expect(m.sensorCount()).toBe(1);
  });
});
