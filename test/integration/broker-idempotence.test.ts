// Issue 5's acceptance test: an idempotent producer that retries every failed request sends
// RECORDS_TOTAL (100,000 unless TERN_IDEMPOTENCE_RECORDS says otherwise) records to 6 partitions (RF 3) while
// partition leaders are SIGKILLed and restarted; afterwards every partition holds every
// record exactly once, in send order, and a fetch from offset 0 returns them all.
// Real processes (node dist/...; build first).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { parsePeers } from "../../libs/common/config.js";
import { silentLogger } from "../../libs/common/logger.js";
import { ControllerClient } from "../../libs/metadata/controller-client.js";
import { startCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import { sleep } from "../../libs/common/poll.js";
import { BrokerClients } from "./helpers/broker-clients.js";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";

const PARTITIONS = 6;
const RECORDS_TOTAL = Number(process.env.TERN_IDEMPOTENCE_RECORDS ?? 100_000);
const BATCH_RECORDS = 100;
const KILLS = 8;
const KILL_INTERVAL_MS = Math.max(2_000, Math.min(8_000, RECORDS_TOTAL / 5));
const ATTEMPTS_PER_BATCH_MAX = 500;

let cluster: ProcessCluster;
let controller: ControllerClient;
let dataDir: string;
const brokers = new BrokerClients();

async function leaderOf(
  partition: number,
): Promise<{ nodeId: number; address: string } | undefined> {
  const m = await controller.metadata();
  const p = m.topics
    .find((t) => t.name === "idem")
    ?.partitions.find((x) => x.partition === partition);
  if (!p || p.leader < 0) return undefined;
  const n = m.nodes.find((x) => x.role === "broker" && x.nodeId === p.leader);
  return n ? { nodeId: n.nodeId, address: n.address } : undefined;
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "tern-idem-it-"));
  cluster = await startCluster({
    dataDir,
    controllers: 3,
    brokers: 3,
    coordinators: 0,
    basePort: await freeBasePort(),
    env: { TERN_LOG_LEVEL: "warn" },
    healthTimeoutMs: 180_000,
  });
  controller = new ControllerClient({
    controllers: parsePeers(cluster.controllers, "controllers"),
    logger: silentLogger(),
  });
  const deadline = Date.now() + 60_000;
  for (;;) {
    const out = await controller
      .createTopics([{ name: "idem", partitions: PARTITIONS, replicationFactor: 3 }])
      .catch(() => undefined);
    if (out && out.every((o) => !o.error || o.error.errorName === "TOPIC_ALREADY_EXISTS")) break;
    if (Date.now() > deadline) throw new Error("topic creation timed out");
    await sleep(300);
  }
}, 180_000);

afterAll(async () => {
  brokers.closeAll();
  controller?.close();
  await cluster?.stop({ termTimeoutMs: 5_000 });
  rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

/** Waits (bounded) until the killer has done `n` kills, so a fast run cannot finish before the faults. */
async function killsAtLeast(n: number, progress: { kills: number }): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (progress.kills < n && Date.now() < deadline) await sleep(100);
}

async function sendPartition(
  partition: number,
  count: number,
  stats: { retries: number; kills: number },
): Promise<void> {
  const producerId = String(5000 + partition);
  for (let seq = 0; seq < count; seq += BATCH_RECORDS) {
    // Half of the records go before the first kill is done, the last batch after the second.
    if (seq >= count / 2) await killsAtLeast(1, stats);
    if (seq + BATCH_RECORDS >= count) await killsAtLeast(2, stats);
    const records = Array.from({ length: Math.min(BATCH_RECORDS, count - seq) }, (_, i) => ({
      value: Buffer.from(`p${partition}-${seq + i}`),
    }));
    const batch = { producerId, producerEpoch: 0, baseSequence: seq, records };
    for (let attempt = 0; ; attempt++) {
      if (attempt >= ATTEMPTS_PER_BATCH_MAX)
        throw new Error(`partition ${partition} seq ${seq}: gave up`);
      const leader = await leaderOf(partition).catch(() => undefined);
      if (leader) {
        const r = await brokers
          .get(leader.address)
          .produce(
            { acks: -1, timeoutMs: 5_000, partitions: [{ topic: "idem", partition, batch }] },
            8_000,
          )
          .catch(() => undefined);
        const code = r?.partitions[0].errorCode;
        if (code === "NONE") break;
        if (
          code !== undefined &&
          ![
            "NOT_LEADER_OR_FOLLOWER",
            "REQUEST_TIMED_OUT",
            "LEADER_NOT_AVAILABLE",
            "THROTTLING_QUOTA_EXCEEDED",
            "UNKNOWN_TOPIC_OR_PARTITION",
          ].includes(code)
        ) {
          throw new Error(
            `partition ${partition} seq ${seq}: ${code} ${r?.partitions[0]?.errorMessage}`,
          );
        }
      }
      stats.retries++;
      await sleep(100);
    }
  }
}

async function readPartition(partition: number, expected: number): Promise<string[]> {
  const values: string[] = [];
  let offset = 0n;
  const deadline = Date.now() + 60_000;
  while (values.length < expected && Date.now() < deadline) {
    const leader = await leaderOf(partition).catch(() => undefined);
    const r = leader
      ? await brokers
          .get(leader.address)
          .fetch({
            maxWaitMs: 500,
            partitions: [{ topic: "idem", partition, fetchOffset: offset.toString() }],
          })
          .catch(() => undefined)
      : undefined;
    const p = r?.partitions[0];
    if (p?.errorCode !== "NONE") {
      await sleep(200);
      continue;
    }
    for (const b of p.batches)
      for (const rec of b.records) {
        // Dense offsets: no markers here, so the k-th record sits at offset k.
        expect(BigInt(rec.offset)).toBe(BigInt(values.length));
        values.push(Buffer.from(rec.value).toString());
      }
    offset = BigInt(p.nextFetchOffset);
  }
  return values;
}

it(`keeps ${RECORDS_TOTAL} records exactly once and in order across leader SIGKILLs`, async () => {
  const perPartition = Math.floor(RECORDS_TOTAL / PARTITIONS);
  const stats = { retries: 0, kills: 0 };
  let sending = true;
  const senders = Promise.all(
    Array.from({ length: PARTITIONS }, (_, p) => sendPartition(p, perPartition, stats)),
  ).finally(() => {
    sending = false;
  });
  let kills = 0;
  const killer = (async () => {
    // Spread the kills over the whole run (bounded by KILLS).
    for (let i = 0; i < KILLS && sending; i++) {
      await sleep(KILL_INTERVAL_MS);
      const victim = await leaderOf(i % PARTITIONS).catch(() => undefined);
      if (!victim || !sending) continue;
      cluster.kill("broker", victim.nodeId, "SIGKILL");
      await cluster.waitForExit("broker", victim.nodeId, 10_000);
      kills++;
      stats.kills = kills;
      cluster.start("broker", victim.nodeId);
      await cluster.waitForHealth({
        timeoutMs: 60_000,
        only: [{ role: "broker", id: victim.nodeId }],
      });
    }
  })();
  await Promise.all([senders, killer]);
  process.stderr.write(
    `idempotence: ${RECORDS_TOTAL} records, ${kills} leader kills, ${stats.retries} retries\n`,
  );
  expect(kills).toBeGreaterThanOrEqual(2);
  for (let p = 0; p < PARTITIONS; p++) {
    const values = await readPartition(p, perPartition);
    expect(values.length).toBe(perPartition);
    expect(values).toEqual(Array.from({ length: perPartition }, (_, i) => `p${p}-${i}`));
  }
}, 420_000);
