// Preferred leaders: the imbalance per node is Kafka's (groups a node is preferred for that
// others lead, over the groups it is preferred for), and a node hands over only groups whose
// preferred replica is back, imbalanced beyond the ratio and caught up, at most movesMax a look.
import { describe, expect, it } from "vitest";
import type { GroupPlacement } from "./group-reconciler.js";
import {
  balanceLeaders,
  imbalanceRatio,
  preferredCounts,
  type BalanceCandidate,
} from "./leader-balance.js";

function placement(partition: number, replicas: number[], leader: number): GroupPlacement {
  return { groupId: `t/${partition}`, topic: "t", partition, replicas, leader, leaderTerm: 1 };
}

/** 30 groups preferred round-robin on nodes 0..2; node 2's ten are led by node 0 (its failover). */
const placements = Array.from({ length: 30 }, (_, p) => {
  const replicas = [p % 3, (p + 1) % 3, (p + 2) % 3];
  return placement(p, replicas, replicas[0] === 2 ? 0 : replicas[0]!);
});

describe("leader balance", () => {
  it("counts Kafka's imbalance per node", () => {
    const counts = preferredCounts(placements);
    expect(counts.get(2)).toEqual({ preferred: 10, ledElsewhere: 10 });
    expect(imbalanceRatio(counts.get(2))).toBe(1);
    expect(imbalanceRatio(counts.get(0))).toBe(0);
    expect(imbalanceRatio(undefined)).toBe(0);
  });

  it("hands back only groups whose preferred replica is back, imbalanced and caught up, at most movesMax", () => {
    const counts = preferredCounts(placements);
    const transfers: string[] = [];
    const led = (
      caughtUp: (p: GroupPlacement) => boolean,
    ): Array<BalanceCandidate & { placement: GroupPlacement }> =>
      placements
        .filter((p) => p.leader === 0)
        .map((p) => ({
          placement: p,
          caughtUp: () => caughtUp(p),
          transferLeadership: (to: number) => transfers.push(`${p.groupId}->${to}`),
        }));
    const options = { ratioMax: 0.1, movesPerRoundMax: 4 };
    // Node 2 not back yet: nothing moves.
    expect(
      balanceLeaders(
        0,
        counts,
        () => false,
        led(() => true),
        options,
      ),
    ).toBe(0);
    // Back: at most 4 per look, only node 2's groups, only the caught-up ones.
    const moved = balanceLeaders(
      0,
      counts,
      () => true,
      led((p) => p.partition !== 2),
      options,
    );
    expect(moved).toBe(4);
    expect(transfers).toEqual(["t/5->2", "t/8->2", "t/11->2", "t/14->2"]);
    // Within the ratio: nothing moves.
    transfers.length = 0;
    const balanced = preferredCounts(
      placements.map((p, i) => (i === 2 ? p : { ...p, leader: p.replicas[0]! })),
    );
    expect(imbalanceRatio(balanced.get(2))).toBe(0.1);
    expect(
      balanceLeaders(
        0,
        balanced,
        () => true,
        led(() => true),
        options,
      ),
    ).toBe(0);
  });
});
