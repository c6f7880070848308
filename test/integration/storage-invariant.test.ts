// A broken storage invariant stops the broker instead of serving wrong data. A real broker (one
// controller, one broker) holds a partition in several small segments; after a restart (so a
// Fetch from offset 0 reads the files, not the tail cache) a planted fault makes the segment's
// in-memory index point one entry too far (libs/storage/segment.ts, DAMAGED_INDEX_FAULT): read
// from there, the Fetch would silently skip the records before that entry. The read asserts
// that the index named a record at or before the offset asked for: the Fetch is never answered,
// the process exits non-zero with the AssertionError in its log. docs/storage.md, "Invariants".
// Build first (node dist/...).
import { mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { parsePeers } from "../../libs/common/config.js";
import { silentLogger } from "../../libs/common/logger.js";
import { until } from "../../libs/common/poll.js";
import { ControllerClient } from "../../libs/metadata/controller-client.js";
import { DAMAGED_INDEX_FAULT } from "../../libs/storage/segment.js";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";
import { startCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import { BrokerClients } from "./helpers/broker-clients.js";

const TOPIC = "inv";
const SEGMENT_BYTES = 64 * 1024;
const RECORDS = 150;
const EXIT_CRASH = 1;
let cluster: ProcessCluster;
let controller: ControllerClient;
let dataDir: string;
let onceDir: string;
const brokers = new BrokerClients();

function broker() {
  return brokers.get(cluster.spec("broker", 0).address);
}

async function produce(i: number): Promise<void> {
  await until(`produce ${i}`, 60_000, async () => {
    const p = (
      await broker().produce({
        transactionalId: "",
        partitions: [
          {
            topic: TOPIC,
            partition: 0,
            batch: {
              producerId: "78",
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

function fetchFrom(offset: string, partitionMaxBytes: number) {
  return broker().fetch({
    isolationLevel: "READ_UNCOMMITTED",
    maxBytes: 1 << 20,
    partitions: [{ topic: TOPIC, partition: 0, fetchOffset: offset, partitionMaxBytes }],
  });
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "tern-storage-invariant-"));
  onceDir = mkdtempSync(join(tmpdir(), "tern-storage-invariant-once-"));
  // Listed, and disarmed while its file exists (libs/common/failpoints.ts).
  writeFileSync(join(onceDir, DAMAGED_INDEX_FAULT), "");
  cluster = await startCluster({
    dataDir,
    controllers: 1,
    brokers: 1,
    coordinators: 0,
    basePort: await freeBasePort(),
    env: {
      TERN_LOG_LEVEL: "warn",
      TERN_BROKER_SNAPSHOT_ENTRIES: "20",
      TERN_FAILPOINTS: DAMAGED_INDEX_FAULT,
      TERN_FAILPOINTS_ONCE_DIR: onceDir,
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
  rmSync(onceDir, { recursive: true, force: true });
}, 60_000);

it("a wrong in-memory index stops the broker: no Fetch is answered from it, the assertion is logged", async () => {
  for (let i = 0; i < RECORDS; i++) await produce(i);
  cluster.kill("broker", 0, "SIGKILL");
  await cluster.waitForExit("broker", 0, 10_000);
  cluster.start("broker", 0);
  await cluster.waitForHealth({ timeoutMs: 120_000 });
  await until("every record applied again", 60_000, async () => {
    const p = (await fetchFrom("0", 1)).partitions[0];
    return p.highWatermark === String(RECORDS) ? true : undefined;
  });
  // Sound so far: the first records come back in order.
  const sound = (await fetchFrom("0", 4096)).partitions[0];
  expect(sound.errorCode).toBe("NONE");
  const first = sound.batches.flatMap((b: any) => b.records)[0];
  expect(Buffer.from(first.value).toString().split(":")[0]).toBe("0");

  unlinkSync(join(onceDir, DAMAGED_INDEX_FAULT)); // armed: the index now points one entry too far
  // Fetch at offsets across the segments: one answered (served from the tail cache, or where no
  // later index entry exists) starts at the offset asked for; one read through the damaged index
  // is never answered.
  let refused: unknown;
  for (let offset = 0; offset < RECORDS && refused === undefined; offset += 7) {
    const answer = await fetchFrom(String(offset), 4096).then(
      (response) => ({ response, error: undefined }),
      (error: unknown) => ({ response: undefined, error }),
    );
    if (answer.error !== undefined) {
      refused = answer.error;
      break;
    }
    const p = answer.response!.partitions[0];
    expect(p.errorCode).toBe("NONE");
    const values = p.batches.flatMap((b: any) => b.records);
    expect(Buffer.from(values[0].value).toString().split(":")[0], `fetch at ${offset}`).toBe(
      String(offset),
    );
  }
  expect(refused).toBeDefined();

  expect(await cluster.waitForExit("broker", 0, 30_000)).toBe(true);
  const exit = await until(
    "the exit code",
    5_000,
    () => cluster.processes().find((p) => p.role === "broker" && p.id === 0)?.exit,
  );
  expect(exit).toBe(EXIT_CRASH);
  const log = readFileSync(cluster.spec("broker", 0).logFile, "utf8");
  expect(log).toContain("AssertionError");
  expect(log).toMatch(
    /the index of segment \d+ gave position \d+ for offset \d+, where offset \d+ is/,
  );
}, 300_000);
