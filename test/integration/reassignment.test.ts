// Replica reassignment end to end (issue 4 item 7, docs/reassignment.md): 3 controllers and 4
// real broker processes. A partition's Raft leader is SIGKILLed for good; the controller re-places
// its replica on the spare broker; the group's new leader then changes the Raft membership so
// that every live replica's ConfState equals the new replica set, the records committed before
// the kill are all still there, and new produces commit without the dead node. Finally the
// leader of the moved group is killed too, so the remaining quorum NEEDS the new replica:
// produces still commit and every record is read back.
// Needs a build first (`npx tsc -p tsconfig.json`): the processes run from dist/.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { parsePeers } from "../../libs/common/config.js";
import { silentLogger } from "../../libs/common/logger.js";
import { ControllerClient } from "../../libs/metadata/controller-client.js";
import type { ClusterMetadata, PartitionInfo } from "../../libs/metadata/types.js";
import { startCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";
import { loggedVoters } from "./helpers/logged-voters.js";
import { BrokerClients } from "./helpers/broker-clients.js";
import { sleep, until } from "../../libs/common/poll.js";

const TOPIC = "moves";
const GROUP_ID = `${TOPIC}/0`;
const POLL_MS = 250;
const LEASE_MS = 3_000;
const REPLACE_AFTER_MS = 3_000;
const RECORDS_PER_ROUND = 20;
const RETRYABLE = new Set([
  "NOT_LEADER_OR_FOLLOWER",
  "REQUEST_TIMED_OUT",
  "LEADER_NOT_AVAILABLE",
  "THROTTLING_QUOTA_EXCEEDED",
  "UNKNOWN_TOPIC_OR_PARTITION",
  "NOT_ENOUGH_REPLICAS",
]);

let cluster: ProcessCluster;
let controller: ControllerClient;
let dataDir: string;
let failures = 0;
const brokers = new BrokerClients();

const waitFor = <T>(
  what: string,
  timeoutMs: number,
  probe: () => Promise<T | undefined> | T | undefined,
): Promise<T> => until(what, timeoutMs, probe, { intervalMs: POLL_MS });

const partitionOf = (m: ClusterMetadata): PartitionInfo | undefined =>
  m.topics.find((t) => t.name === TOPIC)?.partitions.find((p) => p.partition === 0);
const addressOf = (m: ClusterMetadata, id: number): string | undefined =>
  m.nodes.find((n) => n.role === "broker" && n.nodeId === id)?.address;

const votersLoggedBy = (id: number): number[] | undefined =>
  loggedVoters(cluster.spec("broker", id).logFile, GROUP_ID);

/** The conf-change steps brokers' reassignment drivers committed for the group. */
function loggedSteps(brokerId: number): Array<{ kind: string; nodeId?: number }> {
  let text: string;
  try {
    text = readFileSync(cluster.spec("broker", brokerId).logFile, "utf8");
  } catch {
    return [];
  }
  const out: Array<{ kind: string; nodeId?: number }> = [];
  for (const line of text.split("\n")) {
    if (!line.includes("reassignment step committed") || !line.includes(GROUP_ID)) continue;
    try {
      const o = JSON.parse(line) as { groupId?: string; step?: { kind: string; nodeId?: number } };
      if (o.groupId === GROUP_ID && o.step) out.push(o.step);
    } catch {
      // a line cut by the kill
    }
  }
  return out;
}

async function produceRound(round: number): Promise<string> {
  const records = Array.from({ length: RECORDS_PER_ROUND }, (_, i) => ({
    value: Buffer.from(`r${round}-${i}`),
  }));
  const deadline = Date.now() + 60_000;
  let last = "";
  while (Date.now() < deadline) {
    const m = await controller.metadata().catch(() => undefined);
    const p = m && partitionOf(m);
    const address = m && p && p.leader >= 0 ? addressOf(m, p.leader) : undefined;
    if (address !== undefined) {
      const r = await brokers
        .get(address)
        .produce(
          {
            acks: -1,
            timeoutMs: 5_000,
            partitions: [
              {
                topic: TOPIC,
                partition: 0,
                batch: { producerId: "-1", producerEpoch: -1, baseSequence: -1, records },
              },
            ],
          },
          8_000,
        )
        .catch((e: unknown) => ({ error: e }));
      const out = (
        r as {
          partitions?: Array<{ errorCode: string; baseOffset: string; errorMessage?: string }>;
        }
      ).partitions?.[0];
      if (out?.errorCode === "NONE") return out.baseOffset;
      if (out !== undefined && !RETRYABLE.has(out.errorCode))
        throw new Error(`produce round ${round}: ${out.errorCode} ${out.errorMessage ?? ""}`);
      last = out?.errorCode ?? String((r as { error?: unknown }).error);
    }
    await sleep(POLL_MS);
  }
  throw new Error(`produce round ${round} did not commit within 60 s (last: ${last})`);
}

/** Every record from offset 0 up to the high watermark, read from the current leader. */
async function readAll(expected: number): Promise<{ values: string[]; from: number }> {
  return waitFor(`${expected} records readable`, 60_000, async () => {
    const m = await controller.metadata();
    const p = partitionOf(m);
    const address = p && p.leader >= 0 ? addressOf(m, p.leader) : undefined;
    if (p === undefined || address === undefined) return undefined;
    const values: string[] = [];
    let offset = 0n;
    for (let i = 0; i < 100 && values.length < expected; i++) {
      const r = await brokers.get(address).fetch({
        maxWaitMs: 200,
        partitions: [{ topic: TOPIC, partition: 0, fetchOffset: offset.toString() }],
      });
      const out = r.partitions[0];
      if (out.errorCode !== "NONE") return undefined;
      let got = 0;
      for (const b of out.batches)
        for (const rec of b.records) {
          values.push(Buffer.from(rec.value).toString());
          got++;
        }
      if (got === 0) break;
      offset = BigInt(out.nextFetchOffset);
    }
    return values.length >= expected ? { values, from: p.leader } : undefined;
  });
}

afterEach((ctx) => {
  if (ctx.task.result?.state === "fail") failures += 1;
});

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "tern-reassignment-"));
  cluster = await startCluster({
    dataDir,
    controllers: 3,
    brokers: 4,
    coordinators: 0,
    basePort: await freeBasePort({ controllers: 3, brokers: 4, coordinators: 0 }),
    healthTimeoutMs: 120_000,
    env: {
      TERN_LOG_LEVEL: "info",
      TERN_NODE_LEASE_MS: String(LEASE_MS),
      TERN_REPLACE_DEAD_AFTER_MS: String(REPLACE_AFTER_MS),
      TERN_OFFSETS_PARTITIONS: "2",
    },
  });
  controller = new ControllerClient({
    controllers: parsePeers(cluster.controllers, "controllers"),
    logger: silentLogger(),
    requestTimeoutMs: 3_000,
    attemptsMax: 20,
  });
}, 180_000);

afterAll(async () => {
  brokers.closeAll();
  controller?.close();
  await cluster?.stop({ termTimeoutMs: 5_000 });
  if (dataDir && failures === 0) rmSync(dataDir, { recursive: true, force: true });
  else if (dataDir) console.error(`reassignment test data and logs kept in ${dataDir}`);
}, 60_000);

it("moves a dead leader's replica to the spare broker through Raft membership change, losing nothing", async () => {
  const [created] = await controller.createTopics([
    { name: TOPIC, partitions: 1, replicationFactor: 3 },
  ]);
  expect(created!.error).toBeUndefined();
  const before = await waitFor("a leader for the partition", 60_000, async () => {
    const p = partitionOf(await controller.metadata());
    return p && p.leader >= 0 ? p : undefined;
  });
  await produceRound(0);
  await produceRound(1);
  const start = await waitFor("leader known after the first produces", 30_000, async () => {
    const p = partitionOf(await controller.metadata());
    return p && p.leader >= 0 ? p : undefined;
  });
  const victim = start.leader;
  const spare = [0, 1, 2, 3].find((id) => !before.replicas.includes(id))!;
  expect(before.replicas).toContain(victim);

  cluster.kill("broker", victim, "SIGKILL");
  expect(await cluster.waitForExit("broker", victim, 5_000)).toBe(true);
  const moved = await waitFor("the victim's replica re-placed on the spare", 60_000, async () => {
    const p = partitionOf(await controller.metadata({ linearizable: true }));
    return p && !p.replicas.includes(victim) && p.replicas.includes(spare) ? p : undefined;
  });
  const target = [...moved.replicas].sort((a, b) => a - b);
  expect(target.length).toBe(3);

  // Every live replica (the spare included) applies the configuration = the new replica set.
  const sameSet = (v: number[] | undefined): boolean =>
    v !== undefined &&
    v.length === target.length &&
    [...v].sort((a, b) => a - b).every((x, i) => x === target[i]);
  await waitFor(
    `ConfState voters ${target.join(",")} on brokers ${target.join(",")}`,
    60_000,
    () => (target.every((id) => sameSet(votersLoggedBy(id))) ? true : undefined),
  );

  // Committed before the kill: all still readable; new produces commit with the dead node gone.
  await produceRound(2);
  const afterMove = await readAll(3 * RECORDS_PER_ROUND);
  expect(afterMove.values.slice(0, 2 * RECORDS_PER_ROUND)).toEqual(
    [0, 1].flatMap((r) => Array.from({ length: RECORDS_PER_ROUND }, (_, i) => `r${r}-${i}`)),
  );

  // Kill the current leader too: the remaining 2 of 3 voters are one original replica and the
  // new one, so a commit now needs the new replica's log (Raft log matching: it holds every
  // earlier entry), and whoever leads must serve every record.
  const current = await waitFor("a live leader after the move", 30_000, async () => {
    const p = partitionOf(await controller.metadata());
    return p && p.leader >= 0 && p.leader !== victim ? p.leader : undefined;
  });
  cluster.kill("broker", current, "SIGKILL");
  expect(await cluster.waitForExit("broker", current, 5_000)).toBe(true);
  await waitFor("a new leader reported", 60_000, async () => {
    const p = partitionOf(await controller.metadata());
    return p && p.leader >= 0 && p.leader !== current && p.leader !== victim ? true : undefined;
  });
  await produceRound(3);
  const all = await readAll(4 * RECORDS_PER_ROUND);
  expect(all.values).toEqual(
    [0, 1, 2, 3].flatMap((r) => Array.from({ length: RECORDS_PER_ROUND }, (_, i) => `r${r}-${i}`)),
  );
  // The move was made by conf changes of the group's leaders: remove the dead node, add the spare.
  const steps = [0, 1, 2, 3].flatMap((id) => loggedSteps(id));
  expect(steps).toContainEqual({ kind: "remove", nodeId: victim });
  expect(steps).toContainEqual({ kind: "add-voter", nodeId: spare });
  process.stderr.write(
    `reassignment: victim ${victim}, spare ${spare}, voters ${target.join(",")}, second kill ${current}, final read from ${all.from}\n`,
  );
}, 300_000);
