// FindCoordinator's answers from a cluster metadata view: a group key answers the broker leading
// its __consumer_offsets partition under the broker's own id, a transactional id the coordinator
// leading its __transaction_state partition under 1_000_000_000 + its id (broker 0 and
// coordinator 0 both exist), in the v0 and v1-v2 layouts; no leader, a dead leader or one without
// a Kafka listener is COORDINATOR_NOT_AVAILABLE, an unknown key type INVALID_REQUEST. v3 in the
// flexible layout, v4-v5 with batched keys answered one by one (frames written field by field
// from Kafka's FindCoordinatorRequest/Response.json); an unknown tagged field is skipped, a
// truncated frame refused.
import { describe, expect, it } from "vitest";
import { partitionFor } from "../../libs/common/hash.js";
import type { ClusterMetadata, NodeInfo, TopicInfo } from "../../libs/metadata/types.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { coordinatorFromMetadata, findCoordinatorResponse } from "./find-coordinator-api.js";
import { FIND_COORDINATOR_KEYS_MAX } from "./find-coordinator-codec.js";
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

/** A v4+ request as a Kafka client writes it, with an unknown tagged field at the end. */
function batchedRequest(keyType: number, keys: readonly string[]): Buffer {
  const w = new KafkaWriter(128).int8(keyType);
  w.compactArray(keys, (x, k) => x.compactNullableString(k));
  w.uvarint(1).uvarint(9).uvarint(3).int8(1).int8(2).int8(3); // tag 9, 3 bytes: skipped
  return w.finish();
}

async function answer(version: number, body: Buffer): Promise<KafkaReader> {
  return new KafkaReader(
    await findCoordinatorResponse(
      (t, k) => coordinatorFromMetadata(metadata, t, k),
      version,
      new KafkaReader(body),
    ),
  );
}

describe("FindCoordinator, flexible", () => {
  it("answers v3 in the flexible layout, an unknown tagged field skipped", async () => {
    const key = keyOn(1, "txn");
    const w = new KafkaWriter(64).compactNullableString(key).int8(1);
    w.uvarint(1).uvarint(4).uvarint(1).int8(0); // tag 4, 1 byte
    const r = await answer(3, w.finish());
    expect(r.int32()).toBe(0);
    expect(r.int16()).toBe(0);
    expect(r.compactNullableString()).toBeNull();
    expect([r.int32(), r.compactString(), r.int32()]).toEqual([
      COORDINATOR_KAFKA_NODE_ID_BASE + 1,
      "127.0.0.1",
      9491,
    ]);
    r.taggedFields();
    expect(r.remaining()).toBe(0);
  });

  it("answers each key of a v4 batch on its own, in request order (v5 alike)", async () => {
    const keys = [keyOn(2, "group"), "", keyOn(0, "group")];
    for (const version of [4, 5]) {
      const r = await answer(version, batchedRequest(0, keys));
      expect(r.int32()).toBe(0);
      const entries = r.compactArray((x) => {
        const e = {
          key: x.compactString(),
          nodeId: x.int32(),
          host: x.compactString(),
          port: x.int32(),
          error: x.int16(),
          message: x.compactNullableString(),
        };
        x.taggedFields();
        return e;
      });
      r.taggedFields();
      expect(r.remaining()).toBe(0);
      expect(entries).toEqual([
        { key: keys[0], nodeId: 2, host: "127.0.0.1", port: 9392, error: 0, message: null },
        {
          key: "",
          nodeId: -1,
          host: "",
          port: -1,
          error: 42,
          message: "FindCoordinator needs a key",
        },
        { key: keys[2], nodeId: 0, host: "127.0.0.1", port: 9390, error: 0, message: null },
      ]);
    }
  });

  it("refuses a truncated flexible frame and a batch over its bound", async () => {
    const body = batchedRequest(1, ["a", "b"]);
    await expect(answer(4, body.subarray(0, body.length - 4))).rejects.toThrow();
    const w = new KafkaWriter(64).compactNullableString("g");
    await expect(answer(3, w.finish())).rejects.toThrow(); // no key type, no tagged fields
    const many = Array.from({ length: FIND_COORDINATOR_KEYS_MAX + 1 }, () => "g");
    await expect(answer(4, batchedRequest(0, many))).rejects.toThrow(/keys/);
  });
});
