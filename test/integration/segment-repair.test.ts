// Real processes (3 controllers, 3 brokers, a partition of 3 replicas, snapshots every 20
// entries so that a restart does not apply the segments' entries again from the Raft log): a
// bit flipped inside a follower's sealed segment, where opening does not look, while it is
// down. After its restart it reports the damage (its scrub: tern_segment_damaged_total), then
// repairs the segment from another replica's records (tern_segment_repaired_total). Then that
// replica is made the leader (the other follower killed, the leader stopped gracefully: it
// hands its leadership to the most caught-up live follower) and a Fetch from it serves every
// record intact, equal to what was produced. docs/storage.md, "Corruption and repair".
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

const TOPIC = "repair";
const SEGMENT_BYTES = 64 * 1024;
const RECORDS = 200;
const BROKERS = [0, 1, 2];
let cluster: ProcessCluster;
let controller: ControllerClient;
let dataDir: string;
const brokers = new BrokerClients();

function broker(id: number) {
  return brokers.get(cluster.spec("broker", id).address);
}

function value(i: number): string {
  return `${i}:`.padEnd(1000, "x");
}

/** The broker that serves the partition now (answers a Fetch without NOT_LEADER_OR_FOLLOWER). */
async function leader(alive: readonly number[] = BROKERS): Promise<number | undefined> {
  for (const id of alive) {
    const r = await broker(id)
      .fetch(
        {
          isolationLevel: "READ_UNCOMMITTED",
          partitions: [{ topic: TOPIC, partition: 0, fetchOffset: "0", partitionMaxBytes: 1 }],
        },
        2_000,
      )
      .catch(() => undefined);
    if (r?.partitions[0]?.errorCode === "NONE") return id;
  }
  return undefined;
}

async function produce(i: number, alive: readonly number[] = BROKERS): Promise<void> {
  await until(`produce ${i}`, 60_000, async () => {
    const id = await leader(alive);
    if (id === undefined) return undefined;
    const p = (
      await broker(id)
        .produce({
          transactionalId: "",
          partitions: [
            {
              topic: TOPIC,
              partition: 0,
              batch: {
                producerId: "78",
                producerEpoch: 0,
                baseSequence: i,
                records: [{ value: Buffer.from(value(i)) }],
              },
            },
          ],
        })
        .catch(() => undefined)
    )?.partitions[0];
    return p?.errorCode === "NONE" ? true : undefined;
  });
}

async function counter(id: number, name: string): Promise<number> {
  const text = await (
    await fetch(`http://127.0.0.1:${cluster.spec("broker", id).metricsPort}/metrics`)
  ).text();
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, "m").exec(text);
  return m ? Number(m[1]) : -1;
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "tern-segment-repair-"));
  cluster = await startCluster({
    dataDir,
    controllers: 3,
    brokers: 3,
    coordinators: 0,
    basePort: await freeBasePort(),
    env: { TERN_LOG_LEVEL: "info", TERN_BROKER_SNAPSHOT_ENTRIES: "20" },
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

it("repairs a follower's damaged sealed segment from the leader's records; as leader it serves every record", async () => {
  for (let i = 0; i < RECORDS; i++) await produce(i);
  const first = (await leader())!;
  expect(first).toBeDefined();
  const [damaged, other] = BROKERS.filter((id) => id !== first) as [number, number];
  // Every follower has applied everything (its high watermark is the log end it has applied).
  await until("followers applied every record", 60_000, async () => {
    for (const id of [damaged, other]) {
      const dir = join(cluster.spec("broker", id).dataDir, "partitions", `${TOPIC}-0`);
      const bytes = readdirSync(dir)
        .filter((n) => n.endsWith(".log"))
        .reduce((n, f) => n + statSync(join(dir, f)).size, 0);
      if (bytes < RECORDS * 1000) return undefined;
    }
    return true;
  });

  cluster.kill("broker", damaged, "SIGKILL");
  expect(await cluster.waitForExit("broker", damaged, 10_000)).toBe(true);
  const dir = join(cluster.spec("broker", damaged).dataDir, "partitions", `${TOPIC}-0`);
  const logs = readdirSync(dir)
    .filter((n) => n.endsWith(".log"))
    .sort();
  const sealed = logs.slice(0, -1).find((n) => statSync(join(dir, n)).size > 32 * 1024);
  expect(sealed).toBeDefined();
  // 5000 bytes in: a few records into it, before its index's last entry (where open looks).
  const fd = openSync(join(dir, sealed!), "r+");
  const b = Buffer.alloc(1);
  readSync(fd, b, 0, 1, 5000);
  b[0] = b[0]! ^ 0x04;
  writeSync(fd, b, 0, 1, 5000);
  closeSync(fd);
  cluster.start("broker", damaged);
  await cluster.waitForHealth({ timeoutMs: 120_000 });
  await until("the damage reported", 60_000, async () =>
    (await counter(damaged, "tern_segment_damaged_total")) >= 1 ? true : undefined,
  );
  await until("the segment repaired", 60_000, async () =>
    (await counter(damaged, "tern_segment_repaired_total")) >= 1 ? true : undefined,
  );

  // Make the repaired replica the leader: the other follower down, one more record (so the
  // repaired replica is the most caught-up live follower), the leader stopped gracefully (it
  // hands its leadership over), then both started again.
  cluster.kill("broker", other, "SIGKILL");
  expect(await cluster.waitForExit("broker", other, 10_000)).toBe(true);
  await produce(RECORDS, [first, damaged]);
  cluster.kill("broker", first, "SIGTERM");
  expect(await cluster.waitForExit("broker", first, 30_000)).toBe(true);
  cluster.start("broker", other);
  cluster.start("broker", first);
  await cluster.waitForHealth({ timeoutMs: 120_000 });
  await until("the repaired replica leads", 60_000, async () =>
    (await leader([damaged])) === damaged ? true : undefined,
  );

  // Every record from the repaired replica, from offset 0, intact and as produced.
  const seen: string[] = [];
  let offset = "0";
  for (let round = 0; round < 200 && seen.length < RECORDS + 1; round++) {
    const r = await broker(damaged).fetch({
      isolationLevel: "READ_UNCOMMITTED",
      maxBytes: 1 << 20,
      partitions: [{ topic: TOPIC, partition: 0, fetchOffset: offset, partitionMaxBytes: 16384 }],
    });
    const p = r.partitions[0];
    expect(p.errorCode).toBe("NONE");
    for (const x of p.batches.flatMap((y: any) => y.records))
      seen.push(Buffer.from(x.value).toString());
    offset = p.nextFetchOffset;
  }
  expect(seen).toHaveLength(RECORDS + 1);
  expect(seen).toEqual(Array.from({ length: RECORDS + 1 }, (_, i) => value(i)));
  // Serving it found no damage beyond the one repaired.
  expect(await counter(damaged, "tern_segment_damaged_total")).toBe(1);
  expect(await counter(damaged, "tern_segment_repaired_total")).toBe(1);
}, 600_000);
