// Real processes: 3 controllers + 3 brokers (node dist/...; run `npx tsc -p tsconfig.json`
// first). Produce/fetch round trip at RF 3, idempotent duplicates, long-poll latency, LSO and
// read_committed through WriteTxnMarkers, and read_committed across a leader SIGKILL between
// the data and the marker. Transaction partition verification is switched off here
// (TERN_TXN_PARTITION_VERIFICATION=false) because these tests run without coordinators.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { silentLogger } from "../../libs/common/logger.js";
import { parsePeers } from "../../libs/common/config.js";
import { ControllerClient } from "../../libs/metadata/controller-client.js";
import type { ClusterMetadata } from "../../libs/metadata/types.js";
import { startCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import { until } from "../../libs/common/poll.js";
import { BrokerClients } from "./helpers/broker-clients.js";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";
import type { RecordBatch, Record as WireRecord } from "../../libs/common/proto-types/index.js";

let cluster: ProcessCluster;
let controller: ControllerClient;
let dataDir: string;
const brokers = new BrokerClients();

async function leaderAddress(
  topic: string,
  partition: number,
  avoid?: number,
): Promise<{ address: string; nodeId: number }> {
  return until(`leader of ${topic}/${partition}`, 30_000, async () => {
    const m: ClusterMetadata = await controller.metadata();
    const p = m.topics
      .find((t) => t.name === topic)
      ?.partitions.find((x) => x.partition === partition);
    if (!p || p.leader < 0 || p.leader === avoid) return undefined;
    const node = m.nodes.find((n) => n.role === "broker" && n.nodeId === p.leader);
    return node ? { address: node.address, nodeId: node.nodeId } : undefined;
  });
}

function record(value: string): WireRecord {
  return { key: Buffer.from("k"), value: Buffer.from(value), headers: [], timestampMs: "0" };
}

/** Produces to the current leader, following NOT_LEADER_OR_FOLLOWER (bounded). */
async function produce(
  topic: string,
  partition: number,
  batch: RecordBatch,
  extra: Record<string, unknown> = {},
): Promise<any> {
  return until(`produce to ${topic}/${partition}`, 60_000, async () => {
    const { address } = await leaderAddress(topic, partition);
    const r = await brokers.get(address).produce({
      acks: -1,
      timeoutMs: 10_000,
      ...extra,
      partitions: [{ topic, partition, batch }],
    });
    const p = r.partitions[0];
    if (
      ["NOT_LEADER_OR_FOLLOWER", "REQUEST_TIMED_OUT", "LEADER_NOT_AVAILABLE"].includes(p.errorCode)
    )
      return undefined;
    return p;
  });
}

async function fetchAll(
  topic: string,
  partition: number,
  isolation: "READ_COMMITTED" | "READ_UNCOMMITTED",
  from = 0n,
): Promise<{ values: string[]; offsets: bigint[]; result: any }> {
  const { address } = await leaderAddress(topic, partition);
  const r = await brokers.get(address).fetch({
    maxWaitMs: 0,
    isolationLevel: isolation,
    partitions: [{ topic, partition, fetchOffset: from.toString() }],
  });
  const p = r.partitions[0];
  expect(p.errorCode).toBe("NONE");
  const recs = p.batches.flatMap((b: any) => b.records);
  return {
    values: recs.map((x: any) => Buffer.from(x.value).toString()),
    offsets: recs.map((x: any) => BigInt(x.offset)),
    result: p,
  };
}

async function writeMarker(
  topic: string,
  partition: number,
  producerId: string,
  epoch: number,
  type: "COMMIT" | "ABORT",
  coordinatorEpoch = 1,
): Promise<string> {
  return until(`marker on ${topic}/${partition}`, 60_000, async () => {
    const { address } = await leaderAddress(topic, partition);
    const r = await brokers.get(address).call("WriteTxnMarkers", {
      markers: [
        {
          producerId,
          producerEpoch: epoch,
          controlType: type,
          coordinatorEpoch,
          transactionalId: "t",
          partitions: [{ topic, partition }],
        },
      ],
    });
    const code = r.results[0].partitions[0].errorCode;
    return code === "NOT_LEADER_OR_FOLLOWER" || code === "REQUEST_TIMED_OUT" ? undefined : code;
  });
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "tern-broker-it-"));
  cluster = await startCluster({
    dataDir,
    controllers: 3,
    brokers: 3,
    coordinators: 0,
    basePort: await freeBasePort(),
    env: { TERN_LOG_LEVEL: "warn", TERN_TXN_PARTITION_VERIFICATION: "false" },
    healthTimeoutMs: 180_000,
  });
  controller = new ControllerClient({
    controllers: parsePeers(cluster.controllers, "controllers"),
    logger: silentLogger(),
  });
  const created = await until("topic creation", 60_000, async () => {
    const out = await controller.createTopics([
      { name: "orders", partitions: 3, replicationFactor: 3 },
      { name: "txn", partitions: 1, replicationFactor: 3 },
    ]);
    return out.every((o) => !o.error || o.error.errorName === "TOPIC_ALREADY_EXISTS")
      ? out
      : undefined;
  });
  expect(created.length).toBe(2);
}, 180_000);

afterAll(async () => {
  brokers.closeAll();
  controller?.close();
  await cluster?.stop({ termTimeoutMs: 5_000 });
  rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

describe("broker data plane (real processes, RF 3)", () => {
  it("round-trips records and answers retried idempotent batches with the original offsets", async () => {
    const first = await produce("orders", 0, {
      producerId: "-1",
      records: [record("a"), record("b")],
    });
    expect(first.errorCode).toBe("NONE");
    const batch = { producerId: "1000", producerEpoch: 0, baseSequence: 0, records: [record("c")] };
    const idem = await produce("orders", 0, batch);
    const again = await produce("orders", 0, batch);
    expect(again).toMatchObject({ errorCode: "NONE", baseOffset: idem.baseOffset });
    const gap = await produce("orders", 0, { ...batch, baseSequence: 5 });
    expect(gap.errorCode).toBe("OUT_OF_ORDER_SEQUENCE_NUMBER");
    const { values, offsets, result } = await fetchAll("orders", 0, "READ_UNCOMMITTED");
    expect(values).toEqual(["a", "b", "c"]);
    expect(offsets).toEqual([0n, 1n, 2n]);
    expect(result.highWatermark).toBe("3");
    const listed = await brokers.get((await leaderAddress("orders", 0)).address).listOffsets({
      partitions: [
        { topic: "orders", partition: 0, timestampMs: "-1" },
        { topic: "orders", partition: 0, timestampMs: "-2" },
      ],
    });
    expect(listed.partitions.map((p: any) => p.offset)).toEqual(["3", "0"]);
  }, 120_000);

  it("validates requests with clear codes", async () => {
    const { address } = await leaderAddress("orders", 1);
    const r = await brokers.get(address).produce({
      partitions: [
        { topic: "nope", partition: 0, batch: { producerId: "-1", records: [record("x")] } },
        { topic: "orders", partition: 1, batch: { producerId: "-1", records: [] } },
        {
          topic: "orders",
          partition: 1,
          batch: { producerId: "-1", records: [{ value: Buffer.from("x"), timestampMs: "-5" }] },
        },
      ],
    });
    expect(r.partitions.map((p: any) => p.errorCode)).toEqual([
      "UNKNOWN_TOPIC_OR_PARTITION",
      "INVALID_RECORD",
      "INVALID_REQUEST",
    ]);
    const big = await brokers.get(address).produce({
      partitions: [
        {
          topic: "orders",
          partition: 1,
          // Over the 4 MiB batch bound (a record has no bound of its own, as in Kafka).
          batch: { producerId: "-1", records: [{ value: Buffer.alloc(5 * 1024 * 1024) }] },
        },
      ],
    });
    expect(big.partitions[0].errorCode).toBe("MESSAGE_TOO_LARGE");
  }, 60_000);

  it("long-polls: answers at max_wait_ms when idle and promptly when data arrives", async () => {
    const { address } = await leaderAddress("orders", 2);
    const c = brokers.get(address);
    const idleStart = Date.now();
    const idle = await c.fetch({
      maxWaitMs: 800,
      minBytes: 1,
      partitions: [{ topic: "orders", partition: 2, fetchOffset: "0" }],
    });
    const idleMs = Date.now() - idleStart;
    expect(idle.partitions[0].batches).toEqual([]);
    expect(idleMs).toBeGreaterThanOrEqual(750);
    expect(idleMs).toBeLessThan(5_000); // far from the next wait's 20 s, loose for a loaded machine
    const waitStart = Date.now();
    const waiting = c.fetch({
      maxWaitMs: 20_000,
      minBytes: 1,
      partitions: [{ topic: "orders", partition: 2, fetchOffset: "0" }],
    });
    await new Promise((r) => setTimeout(r, 300));
    await produce("orders", 2, { producerId: "-1", records: [record("wake")] });
    const woke = await waiting;
    const wokeMs = Date.now() - waitStart;
    expect(woke.partitions[0].batches[0].records[0].value.toString()).toBe("wake");
    // Woken by the data, not by max_wait_ms (20 s); the path includes an RF 3 produce.
    expect(wokeMs).toBeLessThan(10_000);
  }, 60_000);

  it("holds the LSO at an open transaction, advances it at the marker, and filters aborted records", async () => {
    const pid = "2000";
    await produce("txn", 0, { producerId: "-1", records: [record("plain")] });
    const t1 = await produce(
      "txn",
      0,
      {
        producerId: pid,
        producerEpoch: 0,
        baseSequence: 0,
        isTransactional: true,
        records: [record("aborted")],
      },
      { transactionalId: "tx" },
    );
    expect(t1.errorCode).toBe("NONE");
    let rc = await fetchAll("txn", 0, "READ_COMMITTED");
    expect(rc.result.lastStableOffset).toBe(t1.baseOffset);
    expect(rc.values).toEqual(["plain"]);
    expect(await writeMarker("txn", 0, pid, 0, "ABORT")).toBe("NONE");
    rc = await fetchAll("txn", 0, "READ_COMMITTED");
    expect(rc.result.lastStableOffset).toBe(rc.result.highWatermark);
    expect(rc.values).toEqual(["plain"]);

    // Data, then SIGKILL the leader, then the marker to the new leader.
    const t2 = await produce(
      "txn",
      0,
      {
        producerId: pid,
        producerEpoch: 0,
        baseSequence: 1,
        isTransactional: true,
        records: [record("committed")],
      },
      { transactionalId: "tx" },
    );
    expect(t2.errorCode).toBe("NONE");
    const t3 = await produce(
      "txn",
      0,
      {
        producerId: "2001",
        producerEpoch: 0,
        baseSequence: 0,
        isTransactional: true,
        records: [record("aborted-after-failover")],
      },
      { transactionalId: "tx2" },
    );
    expect(t3.errorCode).toBe("NONE");
    const old = await leaderAddress("txn", 0);
    expect(cluster.kill("broker", old.nodeId, "SIGKILL")).toBe(true);
    await cluster.waitForExit("broker", old.nodeId, 10_000);
    await leaderAddress("txn", 0, old.nodeId);
    expect(await writeMarker("txn", 0, pid, 0, "COMMIT")).toBe("NONE");
    expect(await writeMarker("txn", 0, "2001", 0, "ABORT")).toBe("NONE");
    // A retried marker is harmless; a marker from an older coordinator epoch is refused.
    expect(await writeMarker("txn", 0, pid, 0, "COMMIT")).toBe("NONE");
    expect(await writeMarker("txn", 0, pid, 0, "ABORT", 0)).toBe("TRANSACTION_COORDINATOR_FENCED");
    rc = await fetchAll("txn", 0, "READ_COMMITTED");
    expect(rc.values).toEqual(["plain", "committed"]);
    const ru = await fetchAll("txn", 0, "READ_UNCOMMITTED");
    expect(ru.values).toEqual(["plain", "aborted", "committed", "aborted-after-failover"]);
    cluster.start("broker", old.nodeId);
    await cluster.waitForHealth({ timeoutMs: 60_000, only: [{ role: "broker", id: old.nodeId }] });
  }, 180_000);
});
