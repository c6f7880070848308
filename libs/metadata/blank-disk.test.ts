// The blank-disk rule of brokers and coordinators over cluster metadata.
import { describe, expect, it } from "vitest";
import { TernError } from "../common/errors.js";
import { systemClock } from "../runtime/system-clock.js";
import { blankReplicaRefusal, checkBlankReplicaRejoin } from "./blank-disk.js";
import type { ClusterMetadata } from "./types.js";

const m: ClusterMetadata = {
  version: "9",
  controllerLeader: 0,
  nodes: [],
  topics: [
    {
      name: "orders",
      internal: false,
      role: "broker",
      config: {},
      partitions: [0, 1].map((p) => ({
        topic: "orders",
        partition: p,
        replicas: p === 0 ? [1, 2, 3] : [2, 3, 4],
        leader: 2,
        leaderTerm: 1,
      })),
    },
    {
      name: "__transaction_state",
      internal: true,
      role: "coordinator",
      config: {},
      partitions: [
        { topic: "__transaction_state", partition: 0, replicas: [1], leader: 1, leaderTerm: 1 },
      ],
    },
  ],
};

describe("blank replica rule", () => {
  it("refuses a blank node listed as a replica of its role, naming the partitions", () => {
    expect(blankReplicaRefusal(m, "broker", 1, "/d")).toMatch(
      /^broker 1 has a blank data directory \(\/d\) but the cluster metadata lists it as a replica of 1 partition\(s\) \(orders\/0\): it lost its disk/,
    );
    expect(blankReplicaRefusal(m, "coordinator", 1, "/d")).toMatch(/__transaction_state\/0/);
  });

  it("lets a blank node that holds nothing start (first start, or its replicas were moved away)", () => {
    expect(blankReplicaRefusal(m, "broker", 5, "/d")).toBeUndefined();
    expect(blankReplicaRefusal(m, "coordinator", 2, "/d")).toBeUndefined();
  });

  it("retries controller errors within the bound, then refuses: a blank node cannot decide without metadata", async () => {
    let calls = 0;
    const refuse = (message: string) => new Error(message);
    await expect(
      checkBlankReplicaRejoin({
        metadata: async () => {
          calls++;
          throw new TernError("NOT_CONTROLLER", "x");
        },
        role: "broker",
        nodeId: 5,
        dataDir: "/d",
        timeoutMs: 600,
        refuse,
        clock: systemClock,
      }),
    ).rejects.toThrow(/no controller answered within 600 ms/);
    expect(calls).toBeGreaterThanOrEqual(2);
    let n = 0;
    await expect(
      checkBlankReplicaRejoin({
        metadata: async () => {
          if (n++ === 0) throw new TernError("NOT_CONTROLLER", "x");
          return m;
        },
        role: "broker",
        nodeId: 5,
        dataDir: "/d",
        timeoutMs: 5_000,
        refuse,
        clock: systemClock,
      }),
    ).resolves.toBeUndefined();
    await expect(
      checkBlankReplicaRejoin({
        metadata: async () => m,
        role: "broker",
        nodeId: 3,
        dataDir: "/d",
        timeoutMs: 5_000,
        refuse,
        clock: systemClock,
      }),
    ).rejects.toThrow(/lists it as a replica of 2 partition/);
  });
});
