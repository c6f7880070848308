// A real broker process (3 controllers, 1 broker, snapshots every 20 entries so that a restart
// does not apply the segments' entries again from the Raft log) with a bit flipped inside a
// sealed segment, where opening does not look (before the segment index's last entry): after a
// restart the broker reports the damage (its scrub: tern_segment_damaged_total), and a Fetch
// never returns the damaged record: that partition answers KAFKA_STORAGE_ERROR while another
// partition in the same Fetch is served. docs/storage.md, "Corruption and repair".
// Build first (node dist/...).
import {
  closeSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readSync,
  rmSync,
  statSync,
  writeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { parsePeers } from "../../libs/common/config.js";
import { silentLogger } from "../../libs/common/logger.js";
import { until } from "../../libs/common/poll.js";
import { ControllerClient } from "../../libs/metadata/controller-client.js";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";
import { startCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import { BrokerClients } from "./helpers/broker-clients.js";

const TOPIC = "dmg";
const SEGMENT_BYTES = 64 * 1024;
const RECORDS = 200;
let cluster: ProcessCluster;
let controller: ControllerClient;
let dataDir: string;
const brokers = new BrokerClients();

function broker() {
  return brokers.get(cluster.spec("broker", 0).address);
}

async function produce(partition: number, i: number): Promise<void> {
  await until(`produce ${partition}/${i}`, 60_000, async () => {
    const p = (
      await broker().produce({
        transactionalId: "",
        partitions: [
          {
            topic: TOPIC,
            partition,
            batch: {
              producerId: "77",
              producerEpoch: 0,
              baseSequence: i,
              records: [{ value: Buffer.from(`${i}:`.padEnd(1000, "x")) }],
            },
          },
        ],
      })
    ).partitions[0];
    return p.errorCode === "NONE" ? true : undefined;
  });
}

async function damagedTotal(): Promise<number> {
  const text = await (
    await fetch(`http://127.0.0.1:${cluster.spec("broker", 0).metricsPort}/metrics`)
  ).text();
  const m = /^tern_segment_damaged_total(?:\{[^}]*\})? (\S+)$/m.exec(text);
  return m ? Number(m[1]) : -1;
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "tern-segment-damage-"));
  cluster = await startCluster({
    dataDir,
    controllers: 3,
    brokers: 1,
    coordinators: 0,
    basePort: await freeBasePort(),
    env: { TERN_LOG_LEVEL: "warn", TERN_BROKER_SNAPSHOT_ENTRIES: "20" },
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
        partitions: 2,
        replicationFactor: 1,
        config: { "segment.bytes": String(SEGMENT_BYTES) },
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

it("refuses a damaged record of a sealed segment, serves the rest, and reports the damage", async () => {
  for (let i = 0; i < RECORDS; i++) await produce(0, i);
  for (let i = 0; i < 5; i++) await produce(1, i);
  cluster.kill("broker", 0, "SIGKILL");
  await cluster.waitForExit("broker", 0, 10_000);
  const dir = join(cluster.spec("broker", 0).dataDir, "partitions", `${TOPIC}-0`);
  const logs = readdirSync(dir)
    .filter((n) => n.endsWith(".log"))
    .sort();
  // The first sealed segment with data (the very first holds only the group's first entries).
  const sealed = logs.slice(0, -1).find((n) => statSync(join(dir, n)).size > 32 * 1024);
  expect(sealed).toBeDefined();
  // 5000 bytes in: a few records into it, before its index's last entry (where open looks).
  const fd = openSync(join(dir, sealed!), "r+");
  const b = Buffer.alloc(1);
  readSync(fd, b, 0, 1, 5000);
  b[0] = b[0]! ^ 0x04;
  writeSync(fd, b, 0, 1, 5000);
  closeSync(fd);
  cluster.start("broker", 0);
  await cluster.waitForHealth({ timeoutMs: 120_000 });
  await until("the damage reported", 60_000, async () =>
    (await damagedTotal()) >= 1 ? true : undefined,
  );

  // After a restart the entries after each replica's snapshot are applied again: wait for all.
  await until("every record applied again", 60_000, async () => {
    const r = await broker().fetch({
      isolationLevel: "READ_UNCOMMITTED",
      partitions: [0, 1].map((partition) => ({
        topic: TOPIC,
        partition,
        fetchOffset: "0",
        partitionMaxBytes: 1,
      })),
    });
    const [p0, p1] = r.partitions;
    return p0.highWatermark === String(RECORDS) && p1.highWatermark === "5" ? true : undefined;
  });

  // Read partition 0 from offset 0, with partition 1 in every Fetch.
  const seen: string[] = [];
  let offset = "0";
  let refused: any;
  for (let round = 0; round < 100 && refused === undefined; round++) {
    const r = await broker().fetch({
      isolationLevel: "READ_UNCOMMITTED",
      maxBytes: 1 << 20,
      partitions: [
        { topic: TOPIC, partition: 1, fetchOffset: "0", partitionMaxBytes: 1 << 20 },
        { topic: TOPIC, partition: 0, fetchOffset: offset, partitionMaxBytes: 4096 },
      ],
    });
    const [p1, p0] = r.partitions;
    expect(p1.errorCode).toBe("NONE");
    expect(p1.batches.flatMap((x: any) => x.records)).toHaveLength(5);
    if (p0.errorCode !== "NONE") {
      refused = p0;
      break;
    }
    for (const x of p0.batches.flatMap((y: any) => y.records))
      seen.push(Buffer.from(x.value).toString().split(":")[0]!);
    offset = p0.nextFetchOffset;
  }
  expect(refused?.errorCode).toBe("KAFKA_STORAGE_ERROR");
  // Everything before the damaged record was served, in order, and nothing after it.
  expect(seen.length).toBeGreaterThan(0);
  expect(seen).toEqual(seen.map((_, i) => String(i)));
  expect(Number(offset)).toBe(seen.length);
}, 300_000);
