// The offline rule: no leader, a dead leader, or no live majority.
import { describe, expect, it } from "vitest";
import { countOffline, liveNodeIds, offlineReason } from "./partition-health.js";
import type { NodeInfo } from "./types.js";

const node = (
  nodeId: number,
  alive: boolean,
  role: "broker" | "coordinator" = "broker",
): NodeInfo => ({ nodeId, role, address: `h:${nodeId}`, alive, incarnation: "i" });

describe("offlineReason", () => {
  const live = liveNodeIds([node(0, true), node(1, true), node(2, false)]);
  it("a live leader with a live majority is online", () => {
    expect(offlineReason({ role: "broker", replicas: [0, 1, 2], leader: 0 }, live)).toBeUndefined();
  });
  it("no leader, or a dead one, is offline", () => {
    expect(offlineReason({ role: "broker", replicas: [0, 1, 2], leader: -1 }, live)).toBe(
      "no-leader",
    );
    expect(offlineReason({ role: "broker", replicas: [0, 1, 2], leader: 2 }, live)).toBe(
      "leader-dead",
    );
  });
  it("a live leader without a live majority is offline (it cannot commit)", () => {
    const one = liveNodeIds([node(0, true), node(1, false), node(2, false)]);
    expect(offlineReason({ role: "broker", replicas: [0, 1, 2], leader: 0 }, one)).toBe(
      "no-quorum",
    );
  });
  it("liveness is per role", () => {
    const coordinatorsOnly = liveNodeIds([node(0, true, "coordinator")]);
    expect(offlineReason({ role: "broker", replicas: [0], leader: 0 }, coordinatorsOnly)).toBe(
      "no-quorum",
    );
    expect(
      offlineReason({ role: "coordinator", replicas: [0], leader: 0 }, coordinatorsOnly),
    ).toBeUndefined();
  });
});

describe("countOffline", () => {
  it("counts per topic role", () => {
    const m = {
      nodes: [node(0, true), node(1, false), node(2, false), node(0, true, "coordinator")],
      topics: [
        {
          name: "t",
          internal: false,
          role: "broker" as const,
          config: {},
          partitions: [
            { topic: "t", partition: 0, replicas: [0, 1, 2], leader: 0, leaderTerm: 1 },
            { topic: "t", partition: 1, replicas: [0], leader: 0, leaderTerm: 1 },
          ],
        },
        {
          name: "__transaction_state",
          internal: true,
          role: "coordinator" as const,
          config: {},
          partitions: [
            {
              topic: "__transaction_state",
              partition: 0,
              replicas: [0],
              leader: -1,
              leaderTerm: 0,
            },
          ],
        },
      ],
    };
    expect(countOffline(m)).toEqual({ total: 2, byRole: { broker: 1, coordinator: 1 } });
  });
});
