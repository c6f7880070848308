// What cluster status calls healthy.
import { describe, expect, it } from "vitest";
import { judgeClusterHealth } from "./cluster-health.js";

const base = {
  controllerLeader: 0,
  controllers: [{ nodeId: 0, address: "c0", health: "SERVING" }],
  nodes: [
    {
      nodeId: 0,
      role: "broker" as const,
      address: "b0",
      alive: true,
      incarnation: "i",
      health: "SERVING",
    },
  ],
  groups: [
    { topic: "t", role: "broker" as const, partition: 0, leader: 0, leaderTerm: 1, replicas: [0] },
  ],
};

describe("judgeClusterHealth", () => {
  it("healthy: a controller leader, everything SERVING, no offline group", () => {
    expect(judgeClusterHealth(base)).toEqual({ healthy: true, reasons: [], offline: [] });
  });
  it("an offline group, internal ones included, makes it unhealthy; user topics are listed first", () => {
    const groups = [
      { ...base.groups[0]!, topic: "__consumer_offsets", offline: "no-leader" as const },
      { ...base.groups[0]!, offline: "no-quorum" as const },
    ];
    const h = judgeClusterHealth({ ...base, groups });
    expect(h.healthy).toBe(false);
    expect(h.reasons).toEqual(["2 offline partitions (no live leader or no live majority)"]);
    expect(h.offline.map((g) => g.topic)).toEqual(["t", "__consumer_offsets"]);
  });
  it("no controller leader, or a process not SERVING, is unhealthy; a dead node is not counted twice", () => {
    const h = judgeClusterHealth({
      ...base,
      controllerLeader: -1,
      controllers: [{ nodeId: 0, address: "c0", health: "unreachable" }],
      nodes: [{ ...base.nodes[0]!, alive: false, health: "dead" }],
    });
    expect(h.reasons).toEqual(["no controller leader", "controller 0 is unreachable"]);
  });
});
