// FindCoordinator's answers from a cluster metadata view: a group key answers the broker leading
// its __consumer_offsets partition under the broker's own id, a transactional id the coordinator
// leading its __transaction_state partition under 1_000_000_000 + its id (broker 0 and
// coordinator 0 both exist), in the v0 and v1-v2 layouts; no leader, a dead leader or one without
// a Kafka listener is COORDINATOR_NOT_AVAILABLE, an unknown key type INVALID_REQUEST.
import { describe, expect, it } from "vitest";
import { partitionFor } from "../../libs/common/hash.js";
import type { ClusterMetadata, NodeInfo, TopicInfo } from "../../libs/metadata/types.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { coordinatorFromMetadata, findCoordinatorResponse } from "./find-coordinator-api.js";
import { COORDINATOR_KAFKA_NODE_ID_BASE, kafkaNodeId, ternNodeOf } from "./kafka-node-ids.js";

const PARTITIONS = 5;

function topic(
  name: string,
  role: "broker" | "coordinator",
  leaderOf: (p: number) => number,
): TopicInfo {
  return {
    name,
    internal: true,
    role,
    config: {},
    partitions: Array.from({ length: PARTITIONS }, (_, p) => ({
      topic: name,
      partition: p,
      replicas: [0, 1, 2],
      leader: leaderOf(p),
      leaderTerm: 1,
    })),
  };
}

function node(
  role: "broker" | "coordinator",
  nodeId: number,
  kafkaPort: number | undefined,
  alive = true,
): NodeInfo {
  return {
    role,
    nodeId,
    address: `127.0.0.1:${nodeId + 100}`,
    alive,
    incarnation: "1",
    ...(kafkaPort === undefined ? {} : { kafkaAddress: `127.0.0.1:${kafkaPort}` }),
  };
}

const metadata: ClusterMetadata = {
  version: "1",
  controllerLeader: 0,
  nodes: [
    node("broker", 0, 9390),
    node("broker", 1, 9391),
    node("broker", 2, 9392),
    node("coordinator", 0, 9490),
    node("coordinator", 1, 9491),
    node("coordinator", 2, undefined),
  ],
  // Offsets partition p is led by broker p % 3; transaction-log partition p by coordinator p % 3.
  topics: [
    topic("__consumer_offsets", "broker", (p) => p % 3),
    topic("__transaction_state", "coordinator", (p) => (p === 4 ? -1 : p % 3)),
  ],
};

/** A key of each kind hashing to partition `p`. */
function keyOn(p: number, prefix: string): string {
  for (let i = 0; i < 10_000; i++)
    if (partitionFor(`${prefix}-${i}`, PARTITIONS) === p) return `${prefix}-${i}`;
  throw new Error("no key found");
}

async function ask(
  version: number,
  keyType: number,
  key: string,
): Promise<{ error: number; message: string | null; nodeId: number; host: string; port: number }> {
  const w = new KafkaWriter(64).string(key);
  if (version >= 1) w.int8(keyType);
  const r = new KafkaReader(
    await findCoordinatorResponse(
      (t, k) => coordinatorFromMetadata(metadata, t, k),
      version,
      new KafkaReader(w.finish()),
    ),
  );
  if (version >= 1) r.int32();
  const error = r.int16();
  const message = version >= 1 ? r.nullableString() : null;
  const out = { error, message, nodeId: r.int32(), host: r.string(), port: r.int32() };
  expect(r.remaining()).toBe(0);
  return out;
}

describe("FindCoordinator", () => {
  it("maps coordinator ids above every broker id and back", () => {
    expect(kafkaNodeId("broker", 0)).toBe(0);
    expect(kafkaNodeId("coordinator", 0)).toBe(COORDINATOR_KAFKA_NODE_ID_BASE);
    expect(ternNodeOf(kafkaNodeId("coordinator", 7))).toEqual({ role: "coordinator", nodeId: 7 });
    expect(ternNodeOf(1_000_000)).toEqual({ role: "broker", nodeId: 1_000_000 });
    expect(kafkaNodeId("coordinator", 1_000_000)).toBeLessThan(2 ** 31);
  });

  it("answers the broker leading a group's offsets partition, in v0 and v2", async () => {
    const key = keyOn(2, "group");
    expect(await ask(0, 0, key)).toEqual({
      error: 0,
      message: null,
      nodeId: 2,
      host: "127.0.0.1",
      port: 9392,
    });
    expect(await ask(2, 0, key)).toEqual({
      error: 0,
      message: null,
      nodeId: 2,
      host: "127.0.0.1",
      port: 9392,
    });
  });

  it("answers the coordinator leading a transactional id's partition under its Kafka node id", async () => {
    expect(await ask(1, 1, keyOn(1, "txn"))).toEqual({
      error: 0,
      message: null,
      nodeId: COORDINATOR_KAFKA_NODE_ID_BASE + 1,
      host: "127.0.0.1",
      port: 9491,
    });
    // Coordinator 0 and broker 0 are different Kafka nodes.
    expect((await ask(2, 1, keyOn(0, "txn"))).nodeId).toBe(COORDINATOR_KAFKA_NODE_ID_BASE);
    expect((await ask(2, 0, keyOn(0, "group"))).nodeId).toBe(0);
  });

  it("answers COORDINATOR_NOT_AVAILABLE with no node for a leaderless partition or a leader without a Kafka listener", async () => {
    const leaderless = await ask(2, 1, keyOn(4, "txn"));
    expect(leaderless).toMatchObject({ error: 15, nodeId: -1, host: "", port: -1 });
    expect(leaderless.message).toContain("__transaction_state/4");
    expect(await ask(2, 1, keyOn(2, "txn"))).toMatchObject({ error: 15, nodeId: -1 });
    expect(coordinatorFromMetadata(undefined, 0, "g").error).toBe("COORDINATOR_NOT_AVAILABLE");
    const dead = {
      ...metadata,
      nodes: metadata.nodes.map((n) =>
        n.role === "broker" && n.nodeId === 2 ? { ...n, alive: false } : n,
      ),
    };
    expect(coordinatorFromMetadata(dead, 0, keyOn(2, "group")).error).toBe(
      "COORDINATOR_NOT_AVAILABLE",
    );
  });

  it("refuses an unknown key type and an empty key with INVALID_REQUEST", async () => {
    expect(await ask(2, 7, "x")).toMatchObject({ error: 42, nodeId: -1 });
    expect(await ask(1, 0, "")).toMatchObject({ error: 42, nodeId: -1 });
  });
});
