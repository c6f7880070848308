// Disk full on a real filesystem: the whole cluster's data lives on a small tmpfs mounted for
// this test. A filler file takes the free space below the broker's reserve: produce is refused
// with the retriable KAFKA_STORAGE_ERROR while fetches keep serving every acknowledged record;
// once the filler is gone, produce is accepted again and nothing acknowledged is lost. Where
// mount is not permitted the same happens on the temporary directory's own filesystem, with
// the reserve set just below its free space. Build first (node dist/...).
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, statfsSync, writeFileSync } from "node:fs";
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

const TOPIC = "full";
const MOUNT_BYTES = 256 * 1024 * 1024;
const RESERVE_BYTES = 64 * 1024 * 1024;
let mount: string;
let cluster: ProcessCluster;
let controller: ControllerClient;
const brokers = new BrokerClients();
const filler = (): string => join(mount, "filler");

let mounted = false;
let reserveBytes = RESERVE_BYTES;

function freeBytes(): number {
  const s = statfsSync(mount);
  return Number(s.bavail) * Number(s.bsize);
}

beforeAll(async () => {
  mount = mkdtempSync(join(tmpdir(), "tern-disk-full-"));
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${MOUNT_BYTES}`, "tmpfs", mount], {
      stdio: "pipe",
    });
    mounted = true;
  } catch (e) {
    // No permission to mount: a reserve just below today's free space of this filesystem.
    reserveBytes = freeBytes() - RESERVE_BYTES;
    console.warn(
      `disk-full test: mount refused (${String(e).split("\n")[0]}); using ${tmpdir()} with a reserve of ${reserveBytes} bytes`,
    );
  }
  cluster = await startCluster({
    dataDir: join(mount, "data"),
    controllers: 1,
    brokers: 1,
    coordinators: 0,
    basePort: await freeBasePort(),
    env: { TERN_LOG_LEVEL: "warn", TERN_DISK_RESERVE_BYTES: String(reserveBytes) },
    healthTimeoutMs: 120_000,
  });
  controller = new ControllerClient({
    controllers: parsePeers(cluster.controllers, "controllers"),
    logger: silentLogger(),
  });
  await until("topic", 60_000, async () => {
    const out = await controller.createTopics([
      { name: TOPIC, partitions: 1, replicationFactor: 1 },
    ]);
    return out.every((o) => !o.error || o.error.errorName === "TOPIC_ALREADY_EXISTS")
      ? true
      : undefined;
  });
}, 180_000);

afterAll(async () => {
  brokers.closeAll();
  controller?.close();
  await cluster?.stop({ termTimeoutMs: 5_000 });
  if (mounted) execFileSync("umount", ["-l", mount]);
  if (mount) rmSync(mount, { recursive: true, force: true });
}, 60_000);

async function broker(): Promise<ReturnType<BrokerClients["get"]>> {
  return until("broker address", 30_000, async () => {
    const m = await controller.metadata();
    const n = m.nodes.find((x) => x.role === "broker");
    return n ? brokers.get(n.address) : undefined;
  });
}

async function produceOnce(
  value: string,
): Promise<{ errorCode: string; errorMessage?: string; baseOffset: string }> {
  const r = await (
    await broker()
  ).produce({
    partitions: [
      {
        topic: TOPIC,
        partition: 0,
        batch: { producerId: "-1", records: [{ value: Buffer.from(value) }] },
      },
    ],
  });
  return r.partitions[0];
}

async function readAll(): Promise<string[]> {
  const values: string[] = [];
  let offset = "0";
  for (let i = 0; i < 1_000; i++) {
    const p = (
      await (
        await broker()
      ).fetch({ partitions: [{ topic: TOPIC, partition: 0, fetchOffset: offset }] })
    ).partitions[0];
    expect(p.errorCode).toBe("NONE");
    for (const b of p.batches)
      for (const x of b.records) values.push(Buffer.from(x.value).toString());
    if (p.nextFetchOffset === offset) break;
    offset = p.nextFetchOffset;
  }
  return values;
}

it("refuses produce below the free-space reserve, keeps serving fetches, and recovers when space is back", async () => {
  const acked: string[] = [];
  for (let i = 0; i < 50; i++) {
    const v = `before-${i}`;
    const r = await until("produce", 30_000, async () => {
      const p = await produceOnce(v);
      return p.errorCode === "NONE"
        ? p
        : ["NOT_LEADER_OR_FOLLOWER", "LEADER_NOT_AVAILABLE", "REQUEST_TIMED_OUT"].includes(
              p.errorCode,
            )
          ? undefined
          : p;
    });
    expect(r.errorCode).toBe("NONE");
    acked.push(v);
  }
  // Leave half the reserve free: below it, but room for the processes' own small writes.
  writeFileSync(filler(), Buffer.alloc(freeBytes() - reserveBytes + RESERVE_BYTES / 2));
  const refused = await until("produce refused", 15_000, async () => {
    const p = await produceOnce("while-full");
    if (p.errorCode === "NONE") acked.push("while-full");
    return p.errorCode === "KAFKA_STORAGE_ERROR" ? p : undefined;
  });
  expect(refused.errorMessage).toContain(
    `below the reserve of ${reserveBytes} (--disk-reserve-bytes)`,
  );
  expect(await readAll()).toEqual(acked);
  rmSync(filler());
  await until("produce accepted again", 15_000, async () => {
    const p = await produceOnce("after");
    return p.errorCode === "NONE" ? p : undefined;
  });
  acked.push("after");
  expect(await readAll()).toEqual(acked);
}, 240_000);
