// Real processes: 3 controllers + 3 brokers (node dist/...; build first with
// `npx tsc -p tsconfig.json`). Consumer offsets through the brokers' GroupCoordinator service
// and transactional offsets ended by WriteTxnMarkers, which this test sends itself in the
// role of the transaction coordinator (no coordinator processes run here, so transaction
// partition verification is switched off with TERN_TXN_PARTITION_VERIFICATION=false).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parsePeers } from "../../libs/common/config.js";
import { isTernError } from "../../libs/common/errors.js";
import { fromGrpcError } from "../../libs/common/grpc-errors.js";
import { partitionFor } from "../../libs/common/hash.js";
import { silentLogger } from "../../libs/common/logger.js";
import { loadTernProto } from "../../libs/common/proto.js";
import { ControllerClient } from "../../libs/metadata/controller-client.js";
import { CONSUMER_OFFSETS_TOPIC, type ClusterMetadata } from "../../libs/metadata/types.js";
import { startCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import { BrokerClient } from "../../services/broker/broker-client.js";
import { until as poll } from "../../libs/common/poll.js";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";

const GROUP = "copier-group";
const OFFSETS_PARTITION = partitionFor(GROUP, 50);
const RETRIABLE = new Set([
  "NOT_COORDINATOR",
  "NOT_LEADER_OR_FOLLOWER",
  "COORDINATOR_LOAD_IN_PROGRESS",
  "REQUEST_TIMED_OUT",
  "NETWORK_EXCEPTION",
  "LEADER_NOT_AVAILABLE",
]);

let cluster: ProcessCluster;
let controller: ControllerClient;
let dataDir: string;
const brokers = new Map<string, BrokerClient>();
const groupClients = new Map<string, any>();

function broker(address: string): BrokerClient {
  let c = brokers.get(address);
  if (!c) brokers.set(address, (c = new BrokerClient(address)));
  return c;
}

function groupCall(address: string, method: string, request: unknown): Promise<any> {
  let c = groupClients.get(address);
  if (!c)
    groupClients.set(
      address,
      (c = new (loadTernProto().grpc.tern.v1.GroupCoordinator)(
        address,
        grpc.credentials.createInsecure(),
      )),
    );
  return new Promise((resolve, reject) =>
    c[method](request, { deadline: Date.now() + 15_000 }, (e: unknown, r: unknown) =>
      e ? reject(fromGrpcError(e)) : resolve(r),
    ),
  );
}

/** Retries only the retriable codes: any other error fails the test at once. */
const until = <T>(
  what: string,
  timeoutMs: number,
  probe: () => Promise<T | undefined>,
): Promise<T> =>
  poll(what, timeoutMs, probe, { fatal: (e) => isTernError(e) && !RETRIABLE.has(e.errorName) });

async function leader(
  topic: string,
  partition: number,
  avoid?: number,
): Promise<{ address: string; nodeId: number }> {
  return until(`leader of ${topic}/${partition}`, 60_000, async () => {
    const m: ClusterMetadata = await controller.metadata();
    const p = m.topics
      .find((t) => t.name === topic)
      ?.partitions.find((x) => x.partition === partition);
    if (!p || p.leader < 0 || p.leader === avoid) return undefined;
    const node = m.nodes.find((n) => n.role === "broker" && n.nodeId === p.leader && n.alive);
    return node ? { address: node.address, nodeId: node.nodeId } : undefined;
  });
}

/** A GroupCoordinator call sent to the group's coordinator, following NOT_COORDINATOR (bounded). */
async function toCoordinator(method: string, request: Record<string, unknown>): Promise<any> {
  return until(`${method} on the group coordinator`, 60_000, async () => {
    const { address } = await leader(CONSUMER_OFFSETS_TOPIC, OFFSETS_PARTITION);
    return groupCall(address, method, { groupId: GROUP, ...request });
  });
}

async function committed(
  partition: number,
  requireStable: boolean,
): Promise<{ offset: string; errorCode: string }> {
  const r = await toCoordinator("OffsetFetch", {
    partitions: [{ topic: "in", partition }],
    requireStable,
  });
  return r.partitions[0];
}

async function writeMarker(
  topic: string,
  partition: number,
  producerId: string,
  producerEpoch: number,
  controlType: "COMMIT" | "ABORT",
  coordinatorEpoch = 1,
): Promise<string> {
  return until(`marker on ${topic}/${partition}`, 60_000, async () => {
    const { address } = await leader(topic, partition);
    const r = await broker(address).call("WriteTxnMarkers", {
      markers: [
        {
          producerId,
          producerEpoch,
          controlType,
          coordinatorEpoch,
          transactionalId: "copier",
          partitions: [{ topic, partition }],
        },
      ],
    });
    const code = r.results[0].partitions[0].errorCode;
    return RETRIABLE.has(code) ? undefined : code;
  });
}

async function produceTxn(producerId: string, value: string): Promise<void> {
  await until("transactional produce to out/0", 60_000, async () => {
    const { address } = await leader("out", 0);
    const r = await broker(address).produce({
      transactionalId: "copier",
      acks: -1,
      timeoutMs: 10_000,
      partitions: [
        {
          topic: "out",
          partition: 0,
          batch: {
            producerId,
            producerEpoch: 0,
            baseSequence: 0,
            isTransactional: true,
            records: [{ key: Buffer.from("k"), value: Buffer.from(value), timestampMs: "0" }],
          },
        },
      ],
    });
    const p = r.partitions[0];
    if (RETRIABLE.has(p.errorCode)) return undefined;
    expect(p.errorCode).toBe("NONE");
    return true;
  });
}

async function readCommitted(): Promise<string[]> {
  const { address } = await leader("out", 0);
  const r = await broker(address).fetch({
    maxWaitMs: 0,
    isolationLevel: "READ_COMMITTED",
    partitions: [{ topic: "out", partition: 0, fetchOffset: "0" }],
  });
  return r.partitions[0].batches
    .flatMap((b: any) => b.records)
    .map((x: any) => Buffer.from(x.value).toString());
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "tern-group-it-"));
  cluster = await startCluster({
    dataDir,
    controllers: 3,
    brokers: 3,
    coordinators: 0,
    basePort: await freeBasePort(),
    env: { TERN_LOG_LEVEL: "warn", TERN_TXN_PARTITION_VERIFICATION: "false" },
    healthTimeoutMs: 90_000,
  });
  controller = new ControllerClient({
    controllers: parsePeers(cluster.controllers, "controllers"),
    logger: silentLogger(),
  });
  await until("topic creation", 60_000, async () => {
    const out = await controller.createTopics([
      { name: "in", partitions: 2, replicationFactor: 3 },
      { name: "out", partitions: 1, replicationFactor: 3 },
    ]);
    return out.every((o) => !o.error || o.error.errorName === "TOPIC_ALREADY_EXISTS")
      ? out
      : undefined;
  });
}, 180_000);

afterAll(async () => {
  for (const c of brokers.values()) c.close();
  for (const c of groupClients.values()) c.close();
  controller?.close();
  await cluster?.stop({ termTimeoutMs: 5_000 });
  rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

describe("consumer offsets on the brokers (real processes, RF 3)", () => {
  it("commits and fetches on the group coordinator; other brokers answer NOT_COORDINATOR", async () => {
    const r = await toCoordinator("OffsetCommit", {
      generationId: -1,
      partitions: [
        { topic: "in", partition: 0, offset: "3", leaderEpoch: -1, metadata: "m" },
        { topic: "nope", partition: 0, offset: "1" },
      ],
    });
    expect(r.partitions.map((p: any) => p.errorCode)).toEqual([
      "NONE",
      "UNKNOWN_TOPIC_OR_PARTITION",
    ]);
    expect(await committed(0, true)).toMatchObject({
      offset: "3",
      errorCode: "NONE",
      metadata: "m",
    });
    const { nodeId } = await leader(CONSUMER_OFFSETS_TOPIC, OFFSETS_PARTITION);
    const other = cluster.addresses("broker").find((a) => a !== cluster.address("broker", nodeId))!;
    await expect(groupCall(other, "OffsetFetch", { groupId: GROUP })).rejects.toMatchObject({
      errorName: "NOT_COORDINATOR",
    });
    await expect(
      toCoordinator("OffsetCommit", { groupId: "", partitions: [] }),
    ).rejects.toMatchObject({ errorName: "INVALID_GROUP_ID" });
  }, 120_000);

  it("shows transactional offsets only after the COMMIT marker, together with the output records", async () => {
    await produceTxn("7000", "copied-1");
    const txn = await toCoordinator("TxnOffsetCommit", {
      transactionalId: "copier",
      producerId: "7000",
      producerEpoch: 0,
      generationId: -1,
      partitions: [{ topic: "in", partition: 0, offset: "5", leaderEpoch: -1 }],
    });
    expect(txn.partitions[0].errorCode).toBe("NONE");
    expect(await committed(0, true)).toMatchObject({ errorCode: "UNSTABLE_OFFSET_COMMIT" });
    expect(await committed(0, false)).toMatchObject({ offset: "3", errorCode: "NONE" });
    expect(await readCommitted()).toEqual([]);
    expect(await writeMarker("out", 0, "7000", 0, "COMMIT")).toBe("NONE");
    expect(await writeMarker(CONSUMER_OFFSETS_TOPIC, OFFSETS_PARTITION, "7000", 0, "COMMIT")).toBe(
      "NONE",
    );
    expect(await readCommitted()).toEqual(["copied-1"]);
    expect(await committed(0, true)).toMatchObject({ offset: "5", errorCode: "NONE" });
    // A retried marker is harmless; an older coordinator epoch is refused.
    expect(await writeMarker(CONSUMER_OFFSETS_TOPIC, OFFSETS_PARTITION, "7000", 0, "COMMIT")).toBe(
      "NONE",
    );
    expect(
      await writeMarker(CONSUMER_OFFSETS_TOPIC, OFFSETS_PARTITION, "7000", 0, "ABORT", 0),
    ).toBe("TRANSACTION_COORDINATOR_FENCED");
    expect(await committed(0, true)).toMatchObject({ offset: "5", errorCode: "NONE" });
  }, 120_000);

  it("never shows offsets of a transaction aborted after the group coordinator was SIGKILLed", async () => {
    await produceTxn("7001", "aborted-1");
    const txn = await toCoordinator("TxnOffsetCommit", {
      transactionalId: "copier",
      producerId: "7001",
      producerEpoch: 0,
      generationId: -1,
      partitions: [{ topic: "in", partition: 0, offset: "50", leaderEpoch: -1 }],
    });
    expect(txn.partitions[0].errorCode).toBe("NONE");
    const seen = new Set<string>([(await committed(0, false)).offset]);
    const old = await leader(CONSUMER_OFFSETS_TOPIC, OFFSETS_PARTITION);
    expect(cluster.kill("broker", old.nodeId, "SIGKILL")).toBe(true);
    await cluster.waitForExit("broker", old.nodeId, 10_000);
    await leader(CONSUMER_OFFSETS_TOPIC, OFFSETS_PARTITION, old.nodeId);
    // The new coordinator still holds the pending commit.
    expect(
      await until("the new coordinator answers", 60_000, async () => {
        const r = await committed(0, true);
        return r.errorCode === "UNSTABLE_OFFSET_COMMIT" ? r : undefined;
      }),
    ).toMatchObject({ errorCode: "UNSTABLE_OFFSET_COMMIT" });
    seen.add((await committed(0, false)).offset);
    expect(await writeMarker("out", 0, "7001", 0, "ABORT", 2)).toBe("NONE");
    expect(
      await writeMarker(CONSUMER_OFFSETS_TOPIC, OFFSETS_PARTITION, "7001", 0, "ABORT", 2),
    ).toBe("NONE");
    seen.add((await committed(0, true)).offset);
    expect([...seen]).toEqual(["5"]);
    expect(await readCommitted()).toEqual(["copied-1"]);
    cluster.start("broker", old.nodeId);
    await cluster.waitForHealth({ timeoutMs: 60_000, only: [{ role: "broker", id: old.nodeId }] });
    expect(await committed(0, true)).toMatchObject({ offset: "5", errorCode: "NONE" });
  }, 180_000);
});
