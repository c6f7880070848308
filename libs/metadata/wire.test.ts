import { describe, expect, it } from "vitest";
import {
  findPartition,
  nodeAddress,
  partitionGroupId,
  partitionLeaderAddress,
  partitionsHostedBy,
} from "./lookup.js";
import type { ClusterMetadata } from "./types.js";
import { metadataFromWire, metadataToWire, roleFromWire } from "./wire.js";

const view: ClusterMetadata = {
  version: "42",
  controllerLeader: 1,
  nodes: [
    { nodeId: 0, role: "broker", address: "b0:1", alive: true, incarnation: "i0", rack: "r1" },
    { nodeId: 1, role: "broker", address: "b1:1", alive: false, incarnation: "i1" },
    { nodeId: 0, role: "coordinator", address: "c0:1", alive: true, incarnation: "j0" },
  ],
  topics: [
    {
      name: "orders",
      internal: false,
      role: "broker",
      config: { "retention.ms": "5" },
      partitions: [
        { topic: "orders", partition: 0, replicas: [0, 1], leader: 1, leaderTerm: 3 },
        { topic: "orders", partition: 1, replicas: [1], leader: -1, leaderTerm: 0 },
      ],
    },
    {
      name: "__transaction_state",
      internal: true,
      role: "coordinator",
      config: {},
      partitions: [
        { topic: "__transaction_state", partition: 0, replicas: [0], leader: 0, leaderTerm: 7 },
      ],
    },
  ],
  controllers: [
    { id: 0, host: "k0", port: 9090 },
    { id: 1, host: "::1", port: 9091 },
  ],
};

describe("wire conversions", () => {
  it("round-trips a cluster view", () => {
    expect(metadataFromWire(metadataToWire(view))).toEqual(view);
  });

  it("reads roles given as names or numbers, and nothing else", () => {
    expect([
      roleFromWire("BROKER"),
      roleFromWire(2),
      roleFromWire("NODE_ROLE_UNSPECIFIED"),
      roleFromWire("broker"),
    ]).toEqual(["broker", "coordinator", undefined, undefined]);
  });
});

describe("lookup", () => {
  it("finds addresses by role and partition leaders by the topic's role", () => {
    expect(nodeAddress(view, "broker", 1)).toBe("b1:1");
    expect(nodeAddress(view, "coordinator", 1)).toBeUndefined();
    expect(partitionLeaderAddress(view, "orders", 0)).toBe("b1:1");
    expect(partitionLeaderAddress(view, "orders", 1)).toBeUndefined();
    expect(partitionLeaderAddress(view, "__transaction_state", 0)).toBe("c0:1");
    expect(findPartition(view, "orders", 5)).toBeUndefined();
    expect(
      partitionsHostedBy(view, "broker", 1).map((p) => partitionGroupId(p.topic, p.partition)),
    ).toEqual(["orders/0", "orders/1"]);
  });
});
