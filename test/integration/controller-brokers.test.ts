// A dead broker's partitions return to 3 replicas on the remaining brokers (4 real broker
// processes + 3 controllers). Checked at the metadata level: the controller marks the killed
// broker dead and re-places every replica it held onto the 3 live brokers, and the brokers'
// leader reports for the affected partitions name live brokers. That each broker then moves
// its Raft group's voters to the new replica list is the broker's part (see docs/controller.md).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { parsePeers } from "../../libs/common/config.js";
import { silentLogger } from "../../libs/common/logger.js";
import { ControllerClient } from "../../libs/metadata/controller-client.js";
import type { ClusterMetadata } from "../../libs/metadata/types.js";
import { startCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";
import { until } from "../../libs/common/poll.js";

const POLL_MS = 200;
const LEASE_MS = 3_000;
const REPLACE_AFTER_MS = 3_000;
const logger = silentLogger();
let failures = 0;
let cluster: ProcessCluster;
let client: ControllerClient;
let dataDir: string;

const waitFor = <T>(
  what: string,
  timeoutMs: number,
  probe: () => Promise<T | undefined>,
): Promise<T> => until(what, timeoutMs, probe, { intervalMs: POLL_MS });

afterEach((ctx) => {
  if (ctx.task.result?.state === "fail") failures += 1;
});

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "tern-controller-brokers-"));
  cluster = await startCluster({
    dataDir,
    controllers: 3,
    brokers: 4,
    coordinators: 0,
    basePort: await freeBasePort({ controllers: 3, brokers: 4, coordinators: 0 }),
    healthTimeoutMs: 90_000,
    env: {
      TERN_LOG_LEVEL: "warn",
      TERN_NODE_LEASE_MS: String(LEASE_MS),
      TERN_REPLACE_DEAD_AFTER_MS: String(REPLACE_AFTER_MS),
      TERN_OFFSETS_PARTITIONS: "4",
    },
  });
  client = new ControllerClient({
    controllers: parsePeers(cluster.controllers, "controllers"),
    logger,
    requestTimeoutMs: 3_000,
    attemptsMax: 20,
  });
});

afterAll(async () => {
  client?.close();
  await cluster?.stop({ termTimeoutMs: 5_000 });
  // Kept on failure: the process logs are under <dataDir>/logs.
  if (dataDir && failures === 0) rmSync(dataDir, { recursive: true, force: true });
  else if (dataDir) console.error(`controller test data and logs kept in ${dataDir}`);
});

const brokerPartitions = (m: ClusterMetadata) =>
  m.topics.filter((t) => t.role === "broker").flatMap((t) => t.partitions);

it("re-places a SIGKILLed broker's replicas onto the 3 remaining brokers", async () => {
  const [created] = await client.createTopics([
    { name: "orders", partitions: 6, replicationFactor: 3 },
  ]);
  expect(created!.error).toBeUndefined();
  const victim = 3;
  const before = await waitFor("every partition led, some on the victim", 30_000, async () => {
    const m = await client.metadata();
    const ps = brokerPartitions(m);
    const offsets = m.topics.find((t) => t.name === "__consumer_offsets");
    return offsets && ps.every((p) => p.leader >= 0) && ps.some((p) => p.replicas.includes(victim))
      ? m
      : undefined;
  });
  expect(before.nodes.filter((n) => n.role === "broker" && n.alive).map((n) => n.nodeId)).toEqual([
    0, 1, 2, 3,
  ]);
  const affected = brokerPartitions(before)
    .filter((p) => p.replicas.includes(victim))
    .map((p) => `${p.topic}/${p.partition}`);

  cluster.kill("broker", victim, "SIGKILL");
  expect(await cluster.waitForExit("broker", victim, 5_000)).toBe(true);
  const after = await waitFor("the victim's replicas re-placed", 30_000, async () => {
    const m = await client.metadata({ linearizable: true });
    const dead = m.nodes.find((n) => n.role === "broker" && n.nodeId === victim);
    return dead && !dead.alive && brokerPartitions(m).every((p) => !p.replicas.includes(victim))
      ? m
      : undefined;
  });
  for (const p of brokerPartitions(after)) {
    expect(new Set(p.replicas).size).toBe(3);
    expect(p.replicas.every((id) => [0, 1, 2].includes(id))).toBe(true);
  }
  // The affected groups report leaders on live brokers again.
  await waitFor("live leaders for the affected partitions", 30_000, async () => {
    const m = await client.metadata();
    const ps = brokerPartitions(m).filter((p) => affected.includes(`${p.topic}/${p.partition}`));
    return ps.every((p) => p.leader >= 0 && p.leader !== victim) ? true : undefined;
  });
});
