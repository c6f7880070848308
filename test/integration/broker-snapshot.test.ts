// Real processes with snapshots forced every 20 entries, 1 KiB segments and a retention.bytes
// that keeps about a sixth of the 150 batches written while a follower is down: retention
// removes the segments the follower would need, so it comes back through InstallSnapshot (the
// oldest remaining segment's checkpoint, metadata only) and then gets the retained entries
// streamed from the leader's segments. Then every broker is SIGKILLed and restarted from disk.
// The partition keeps every retained record, its producer state (a retried batch is still
// answered with its original offsets), its open transaction (LSO) and its aborted index
// (read_committed filtering). Build first (node dist/...).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { parsePeers } from "../../libs/common/config.js";
import { silentLogger } from "../../libs/common/logger.js";
import { ControllerClient } from "../../libs/metadata/controller-client.js";
import { startCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import { until } from "../../libs/common/poll.js";
import type { BrokerClient } from "../../services/broker/broker-client.js";
import { BrokerClients } from "./helpers/broker-clients.js";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";

const TOPIC = "snap";
const BATCHES = 150;
/** Segment files hold each entry with a 56-byte header: a two-record batch takes about 140 bytes. */
const RETENTION_BYTES = 4_000;
const SEGMENT_BYTES = 1_024;
let cluster: ProcessCluster;
let controller: ControllerClient;
let dataDir: string;
const brokers = new BrokerClients();

async function leader(): Promise<{ nodeId: number; c: BrokerClient }> {
  return until("leader", 60_000, async () => {
    const m = await controller.metadata();
    const p = m.topics.find((t) => t.name === TOPIC)?.partitions[0];
    const n =
      p && p.leader >= 0
        ? m.nodes.find((x) => x.role === "broker" && x.nodeId === p.leader)
        : undefined;
    return n ? { nodeId: n.nodeId, c: brokers.get(n.address) } : undefined;
  });
}

const RETRY = [
  "NOT_LEADER_OR_FOLLOWER",
  "REQUEST_TIMED_OUT",
  "LEADER_NOT_AVAILABLE",
  "UNKNOWN_TOPIC_OR_PARTITION",
];

async function produce(batch: Record<string, unknown>, transactionalId = ""): Promise<any> {
  return until("produce", 60_000, async () => {
    const p = (
      await (
        await leader()
      ).c.produce({ transactionalId, partitions: [{ topic: TOPIC, partition: 0, batch }] })
    ).partitions[0];
    return RETRY.includes(p.errorCode) ? undefined : p;
  });
}

/** Everything from the log start offset on. */
async function readAll(
  isolation: "READ_COMMITTED" | "READ_UNCOMMITTED",
): Promise<{ values: string[]; p: any; start: number }> {
  return until("fetch", 60_000, async () => {
    const values: string[] = [];
    const probe = (
      await (
        await leader()
      ).c.fetch({
        isolationLevel: isolation,
        partitions: [{ topic: TOPIC, partition: 0, fetchOffset: "0" }],
      })
    ).partitions[0];
    if (probe.errorCode !== "NONE" && probe.errorCode !== "OFFSET_OUT_OF_RANGE") return undefined;
    const start = Number(probe.logStartOffset);
    let offset = String(start);
    let last: any;
    for (let i = 0; i < 1_000; i++) {
      const r = await (
        await leader()
      ).c.fetch({
        isolationLevel: isolation,
        partitions: [{ topic: TOPIC, partition: 0, fetchOffset: offset }],
      });
      last = r.partitions[0];
      if (last.errorCode !== "NONE") return undefined;
      for (const b of last.batches)
        for (const x of b.records) values.push(Buffer.from(x.value).toString());
      if (last.nextFetchOffset === offset) break;
      offset = last.nextFetchOffset;
    }
    return { values, p: last, start };
  });
}

/** tern_raft_snapshots_total{kind} of one broker, from its metrics endpoint. */
async function snapshotsOf(id: number, kind: "taken" | "installed"): Promise<number> {
  const text = await (
    await fetch(`http://127.0.0.1:${cluster.spec("broker", id).metricsPort}/metrics`)
  ).text();
  // The service adds its own labels (role, node_id) after kind.
  const line = text
    .split("\n")
    .find((l) => l.startsWith(`tern_raft_snapshots_total{kind="${kind}"`));
  return line ? Number(line.split(" ").at(-1)) : 0;
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "tern-broker-snap-"));
  cluster = await startCluster({
    dataDir,
    controllers: 3,
    brokers: 3,
    coordinators: 0,
    basePort: await freeBasePort(),
    env: {
      TERN_LOG_LEVEL: "warn",
      TERN_TXN_PARTITION_VERIFICATION: "false",
      TERN_BROKER_SNAPSHOT_ENTRIES: "20",
      TERN_BROKER_COMPACTION_MARGIN_ENTRIES: "5",
    },
    healthTimeoutMs: 180_000,
  });
  controller = new ControllerClient({
    controllers: parsePeers(cluster.controllers, "controllers"),
    logger: silentLogger(),
  });
  await until("topic", 60_000, async () => {
    const out = await controller.createTopics([
      {
        name: TOPIC,
        partitions: 1,
        replicationFactor: 3,
        config: {
          "retention.bytes": String(RETENTION_BYTES),
          "segment.bytes": String(SEGMENT_BYTES),
        },
      },
    ]);
    return out.every((o) => !o.error || o.error.errorName === "TOPIC_ALREADY_EXISTS")
      ? true
      : undefined;
  });
}, 240_000);

afterAll(async () => {
  brokers.closeAll();
  controller?.close();
  await cluster?.stop({ termTimeoutMs: 5_000 });
  rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

it("restores retained records, producer state, open transactions and the aborted index from snapshots", async () => {
  const first = await leader();
  const follower = [0, 1, 2].find((id) => id !== first.nodeId)!;
  cluster.kill("broker", follower, "SIGKILL");
  await cluster.waitForExit("broker", follower, 10_000);
  const expected: string[] = [];
  let lastBatch: Record<string, unknown> = {};
  let lastOffset = "";
  for (let i = 0; i < BATCHES; i++) {
    const values = [`v${i}-0`, `v${i}-1`];
    lastBatch = {
      producerId: "77",
      producerEpoch: 0,
      baseSequence: i * 2,
      records: values.map((v) => ({ value: Buffer.from(v) })),
    };
    const r = await produce(lastBatch);
    expect(r.errorCode).toBe("NONE");
    lastOffset = r.baseOffset;
    expected.push(...values);
  }
  // An aborted transaction, then one left open.
  expect(
    (
      await produce(
        {
          producerId: "88",
          producerEpoch: 0,
          baseSequence: 0,
          isTransactional: true,
          records: [{ value: Buffer.from("aborted") }],
        },
        "t",
      )
    ).errorCode,
  ).toBe("NONE");
  const abort = await (
    await leader()
  ).c.call("WriteTxnMarkers", {
    markers: [
      {
        producerId: "88",
        producerEpoch: 0,
        controlType: "ABORT",
        coordinatorEpoch: 1,
        partitions: [{ topic: TOPIC, partition: 0 }],
      },
    ],
  });
  expect(abort.results[0].partitions[0].errorCode).toBe("NONE");
  const open = await produce(
    {
      producerId: "99",
      producerEpoch: 0,
      baseSequence: 0,
      isTransactional: true,
      records: [{ value: Buffer.from("open") }],
    },
    "t",
  );
  expect(open.errorCode).toBe("NONE");

  cluster.start("broker", follower);
  await cluster.waitForHealth({ timeoutMs: 120_000, only: [{ role: "broker", id: follower }] });
  // It caught up through a snapshot (the leader's segments no longer reached back to it).
  await until("snapshot installed on the restarted follower", 60_000, async () =>
    (await snapshotsOf(follower, "installed")) > 0 ? true : undefined,
  );
  for (const id of [0, 1, 2]) cluster.kill("broker", id, "SIGKILL");
  for (const id of [0, 1, 2]) await cluster.waitForExit("broker", id, 10_000);
  for (const id of [0, 1, 2]) cluster.start("broker", id);
  await cluster.waitForHealth({
    timeoutMs: 120_000,
    only: [0, 1, 2].map((id) => ({ role: "broker" as const, id })),
  });

  const rc = await readAll("READ_COMMITTED");
  // Retention dropped the oldest segments (whole batches: two records each).
  expect(rc.start).toBeGreaterThan(50);
  expect(rc.start % 2).toBe(0);
  expect(rc.values).toEqual(expected.slice(rc.start));
  expect(rc.p.lastStableOffset).toBe(open.baseOffset);
  const ru = await readAll("READ_UNCOMMITTED");
  expect(ru.values).toEqual([...expected.slice(ru.start), "aborted", "open"]);
  const retried = await produce(lastBatch);
  expect(retried).toMatchObject({ errorCode: "NONE", baseOffset: lastOffset });
  const described = await (
    await leader()
  ).c.call("DescribeProducers", { partitions: [{ topic: TOPIC, partition: 0 }] });
  const ids = described.partitions[0].producers.map((p: any) => p.producerId).sort();
  expect(ids).toEqual(["77", "88", "99"]);
}, 400_000);
