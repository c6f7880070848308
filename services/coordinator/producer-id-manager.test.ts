import { describe, expect, it } from "vitest";
import { ManualClock } from "../../libs/runtime/testing/manual-clock.js";
import { systemClock } from "../../libs/runtime/system-clock.js";
import { silentLogger } from "../../libs/common/logger.js";
import { ProducerIdManager } from "./producer-id-manager.js";
import { drive } from "../../libs/common/testing/virtual-time.js";

describe("ProducerIdManager", () => {
  it("hands out consecutive ids and prefetches the next block before exhaustion", async () => {
    const calls: number[] = [];
    let next = 0n;
    const m = new ProducerIdManager({
      nodeId: 4,
      logger: silentLogger(),
      clock: systemClock,
      prefetchBelow: 3,
      allocate: async (nodeId) => {
        calls.push(nodeId);
        const b = { firstProducerId: next, count: 5 };
        next += 1000n;
        return b;
      },
    });
    const ids: bigint[] = [];
    for (let i = 0; i < 3; i++) ids.push(await m.nextProducerId());
    expect(ids).toEqual([0n, 1n, 2n]);
    // 2 left < 3: a prefetch was started; it completes on the next turn.
    await new Promise((r) => setImmediate(r));
    expect(calls).toEqual([4, 4]);
    expect(m.remaining()).toBe(7n);
    for (let i = 0; i < 3; i++) ids.push(await m.nextProducerId());
    expect(ids.slice(3)).toEqual([3n, 4n, 1000n]);
  });

  it("shares one allocation among concurrent callers", async () => {
    let calls = 0;
    const m = new ProducerIdManager({
      nodeId: 1,
      logger: silentLogger(),
      clock: systemClock,
      prefetchBelow: 0,
      allocate: async () => {
        calls++;
        return { firstProducerId: 10n, count: 100 };
      },
    });
    const ids = await Promise.all([m.nextProducerId(), m.nextProducerId(), m.nextProducerId()]);
    expect(new Set(ids).size).toBe(3);
    expect(calls).toBe(1);
  });

  it("fails with a retriable error when the controller does not answer in time", async () => {
    const clock = new ManualClock();
    const m = new ProducerIdManager({
      nodeId: 1,
      logger: silentLogger(),
      waitMs: 50,
      clock,
      allocate: () => new Promise(() => undefined),
    });
    await expect(drive(clock, m.nextProducerId())).rejects.toMatchObject({
      errorName: "COORDINATOR_NOT_AVAILABLE",
    });
  });
});
