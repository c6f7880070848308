// Replica reassignment of a transaction-log partition (docs/reassignment.md): 3 controllers and 4
// real coordinator processes. The coordinator leading the __transaction_state partition of a
// transactional id is SIGKILLed for good; the controller re-places its replica on the spare
// coordinator; the group's new leader changes the Raft membership to the new replica set, and
// the transactional id's state (its producer id and epoch) survives: InitProducerId on the moved
// partition returns the same producer id with a higher epoch, also after the next leader dies.
// Needs a build first (`npx tsc -p tsconfig.json`): the processes run from dist/.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { parsePeers } from "../../libs/common/config.js";
import { partitionFor } from "../../libs/common/hash.js";
import { silentLogger } from "../../libs/common/logger.js";
import { ControllerClient } from "../../libs/metadata/controller-client.js";
import type { PartitionInfo } from "../../libs/metadata/types.js";
import { startCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import { TxnHarness, until } from "./helpers/txn-harness.js";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";
import { loggedVoters } from "./helpers/logged-voters.js";

const TXN_TOPIC = "__transaction_state";
const TID = "reassign-me";
const PARTITION = partitionFor(TID, 50);
const GROUP_ID = `${TXN_TOPIC}/${PARTITION}`;

let cluster: ProcessCluster;
let controller: ControllerClient;
let h: TxnHarness;
let dataDir: string;
let failures = 0;

async function txnPartition(): Promise<PartitionInfo | undefined> {
  const m = await controller.metadata();
  return m.topics
    .find((t) => t.name === TXN_TOPIC)
    ?.partitions.find((p) => p.partition === PARTITION);
}

const votersLoggedBy = (id: number): number[] | undefined =>
  loggedVoters(cluster.spec("coordinator", id).logFile, GROUP_ID);

afterEach((ctx) => {
  if (ctx.task.result?.state === "fail") failures += 1;
});

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "tern-reassignment-coord-"));
  cluster = await startCluster({
    dataDir,
    controllers: 3,
    brokers: 0,
    coordinators: 4,
    basePort: await freeBasePort({ controllers: 3, brokers: 0, coordinators: 4 }),
    healthTimeoutMs: 120_000,
    env: {
      TERN_LOG_LEVEL: "info",
      TERN_NODE_LEASE_MS: "3000",
      TERN_REPLACE_DEAD_AFTER_MS: "3000",
      TERN_OFFSETS_PARTITIONS: "1",
    },
  });
  controller = new ControllerClient({
    controllers: parsePeers(cluster.controllers, "controllers"),
    logger: silentLogger(),
    requestTimeoutMs: 3_000,
    attemptsMax: 20,
  });
  h = new TxnHarness(controller, cluster.addresses("coordinator"));
}, 180_000);

afterAll(async () => {
  h?.close();
  controller?.close();
  await cluster?.stop({ termTimeoutMs: 5_000 });
  if (dataDir && failures === 0) rmSync(dataDir, { recursive: true, force: true });
  else if (dataDir) console.error(`coordinator reassignment test data and logs kept in ${dataDir}`);
}, 60_000);

it("moves a dead coordinator's transaction-log replica to the spare coordinator; the id's state survives", async () => {
  const first = await h.init(TID);
  const before = await until("a leader for the transaction-log partition", 60_000, async () => {
    const p = await txnPartition();
    return p && p.leader >= 0 ? p : undefined;
  });
  const victim = before.leader;
  const spare = [0, 1, 2, 3].find((id) => !before.replicas.includes(id))!;
  cluster.kill("coordinator", victim, "SIGKILL");
  expect(await cluster.waitForExit("coordinator", victim, 5_000)).toBe(true);
  const moved = await until("the victim's replica re-placed on the spare", 60_000, async () => {
    const p = await txnPartition();
    return p && !p.replicas.includes(victim) && p.replicas.includes(spare) ? p : undefined;
  });
  const target = [...moved.replicas].sort((a, b) => a - b);
  const same = (v: number[] | undefined): boolean =>
    v !== undefined &&
    v.length === target.length &&
    [...v].sort((a, b) => a - b).every((x, i) => x === target[i]);
  await until(
    `ConfState voters ${target.join(",")} on coordinators ${target.join(",")}`,
    90_000,
    async () => (target.every((id) => same(votersLoggedBy(id))) ? true : undefined),
  );

  const second = await h.init(TID);
  expect(second.producerId).toBe(first.producerId);
  expect(second.producerEpoch).toBeGreaterThan(first.producerEpoch);

  // The next leader dies too: the surviving quorum includes the new replica, which must hold the log.
  const leader = await h.leader(TXN_TOPIC, PARTITION, "coordinator", victim);
  cluster.kill("coordinator", leader.nodeId, "SIGKILL");
  expect(await cluster.waitForExit("coordinator", leader.nodeId, 5_000)).toBe(true);
  const third = await h.init(TID, undefined, 90_000);
  expect(third.producerId).toBe(first.producerId);
  expect(third.producerEpoch).toBeGreaterThan(second.producerEpoch);
  process.stderr.write(
    `coordinator reassignment: partition ${PARTITION}, victim ${victim}, spare ${spare}, voters ${target.join(",")}, second kill ${leader.nodeId}\n`,
  );
}, 300_000);
