// The catch-up gate's rule, with fake replicas and a fake leader answer. Its checks run on a
// ManualClock: no test sleeps, and when the gate passes is exact.
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../libs/runtime/testing/manual-clock.js";
import { systemClock } from "../../libs/runtime/system-clock.js";
import { silentLogger } from "../../libs/common/logger.js";
import { runFor, runUntil, turns } from "../../libs/common/testing/virtual-time.js";
import {
  CatchUpGate,
  partitionKey,
  type CatchUpGateOptions,
  type FollowedPartition,
} from "./catch-up-gate.js";

function follower(
  topic: string,
  partition: number,
  leader: number,
  hwm: bigint,
): FollowedPartition {
  return {
    topic,
    partition,
    group: { isLeader: () => leader === 0, leader: () => leader },
    stateMachine: { highWatermark: () => hwm },
  };
}

function gate(over: Partial<CatchUpGateOptions>): CatchUpGate {
  return new CatchUpGate({
    assigned: () => [],
    isOpen: () => true,
    partitions: () => [],
    groups: () => [],
    address: (id) => `b${id}`,
    listLatest: async () => new Map(),
    waitMaxMs: 1_000,
    logger: silentLogger(),
    clock: systemClock,
    ...over,
  });
}

describe("CatchUpGate.behind", () => {
  it("a follower below its leader's high watermark is behind; at or above it, caught up; a leader always is", async () => {
    const g = gate({
      partitions: () => [
        follower("t", 0, 1, 10n),
        follower("t", 1, 1, 7n),
        follower("t", 2, 0, 0n),
      ],
      listLatest: async (_a, ps) =>
        new Map(ps.map((p) => [partitionKey(p.topic, p.partition), 10n])),
    });
    expect(await g.behind()).toEqual(["t/1 (3 records behind)"]);
  });

  it("no known leader, an unreachable leader, an unopened replica and an unapplied offsets group are behind", async () => {
    const g = gate({
      assigned: () => ["t/0", "t/9"],
      isOpen: (id) => id !== "t/9",
      partitions: () => [follower("t", 0, -1, 0n), follower("u", 0, 2, 0n)],
      listLatest: async () => {
        throw new Error("unreachable");
      },
      groups: () => [
        {
          groupId: "__consumer_offsets/3",
          isLeader: () => false,
          leader: () => 1,
          appliedIndex: () => 4,
          status: () => ({ commit: 5 }) as never,
        },
      ],
    });
    expect((await g.behind()).sort()).toEqual([
      "__consumer_offsets/3 (applying)",
      "t/0 (no leader known)",
      "t/9 (not open yet)",
      "u/0 (leader b2 unreachable)",
    ]);
  });
});

describe("CatchUpGate.start", () => {
  it("passes once caught up", async () => {
    const clock = new ManualClock();
    let hwm = 5n;
    const g = gate({
      partitions: () => [follower("t", 0, 1, hwm)],
      listLatest: async () => new Map([["t/0", 8n]]),
      intervalMs: 5,
      waitMaxMs: 60_000,
      clock,
    });
    let passed = false;
    g.start(() => {
      passed = true;
    });
    // A check at once and one every 5 ms: behind through the check at 30 ms.
    await runFor(clock, 30);
    await turns();
    expect(passed).toBe(false);
    hwm = 8n;
    // The next check (35 ms) sees it caught up, and the gate stops checking.
    await runUntil(clock, "the gate to pass", () => passed);
    expect(clock.monotonicMs()).toBe(35);
    expect(clock.pendingTimers()).toBe(0);
    g.close();
  });

  it("gives up after waitMaxMs, and is off at 0", async () => {
    const clock = new ManualClock();
    const g = gate({
      partitions: () => [follower("t", 0, -1, 0n)],
      intervalMs: 5,
      waitMaxMs: 100,
      clock,
    });
    let passed = false;
    g.start(() => {
      passed = true;
    });
    await runFor(clock, 20);
    await turns();
    expect(passed).toBe(false);
    // Still behind: the check at 100 ms (not the one at 95 ms) gives up.
    await runUntil(clock, "the gate to give up", () => passed);
    expect(clock.monotonicMs()).toBe(100);
    expect(clock.pendingTimers()).toBe(0);
    const off = gate({ waitMaxMs: 0, partitions: () => [follower("t", 0, -1, 0n)], clock });
    let offPassed = false;
    off.start(() => {
      offPassed = true;
    });
    expect(offPassed).toBe(true);
    expect(clock.pendingTimers()).toBe(0);
  });
});
