// Real processes: 3 controllers, 3 brokers, 3 coordinators (node dist/...; build first). The
// "Done when" scenarios of issue 6, each ending with a read_committed fetch of every partition
// involved. Coordinators are killed by failpoints (libs/common/failpoints.ts): every process
// starts with all of them listed in TERN_FAILPOINTS but disarmed by a file in
// TERN_FAILPOINTS_ONCE_DIR; a scenario arms one by deleting its file, and the coordinator
// leading the transactional id SIGKILLs itself at that exact point.
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parsePeers } from "../../libs/common/config.js";
import { partitionFor } from "../../libs/common/hash.js";
import { silentLogger } from "../../libs/common/logger.js";
import { ControllerClient } from "../../libs/metadata/controller-client.js";
import { startCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import { TxnHarness, until, type Identity } from "./helpers/txn-harness.js";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";

const FAILPOINTS = [
  "coordinator.after-prepare-before-markers",
  "coordinator.after-k-markers",
  "coordinator.before-end-txn-response",
];
const TOPIC = "txn-it";
let cluster: ProcessCluster;
let controller: ControllerClient;
let h: TxnHarness;
let dataDir: string;
let onceDir: string;

function arm(name: string): void {
  rmSync(join(onceDir, name), { force: true });
}

/** Waits for the coordinator that hit the armed failpoint to die, then restarts it. */
async function reviveKilledCoordinator(name: string): Promise<number> {
  await until(`failpoint ${name} to fire`, 60_000, async () =>
    existsSync(join(onceDir, name)) ? true : undefined,
  );
  const dead = await until("a dead coordinator", 30_000, async () =>
    cluster.processes().find((p) => p.role === "coordinator" && !p.alive),
  );
  cluster.start("coordinator", dead.id);
  await cluster.waitForHealth({ timeoutMs: 90_000, only: [{ role: "coordinator", id: dead.id }] });
  return dead.id;
}

async function openTxn(
  tid: string,
  partitions: number[],
  tag: string,
  held?: Identity,
): Promise<Identity> {
  const id = await h.init(tid, held);
  const codes = await h.addPartitions(
    tid,
    id,
    partitions.map((partition) => ({ topic: TOPIC, partition })),
  );
  expect(codes.every((c) => c === "NONE")).toBe(true);
  for (const p of partitions)
    expect(await h.produce(tid, id, TOPIC, p, [`${tag}-${p}`])).toBe("NONE");
  return id;
}

async function expectVisible(partitions: number[], tag: string, visible: boolean): Promise<void> {
  for (const p of partitions) {
    const values = await h.readCommitted(TOPIC, p);
    if (visible) expect(values).toContain(`${tag}-${p}`);
    else expect(values.filter((v) => v.startsWith(`${tag}-`))).toEqual([]);
  }
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "tern-coordinator-it-"));
  onceDir = join(dataDir, "failpoints");
  mkdirSync(onceDir);
  for (const f of FAILPOINTS) writeFileSync(join(onceDir, f), "disarmed");
  cluster = await startCluster({
    dataDir,
    controllers: 3,
    brokers: 3,
    coordinators: 3,
    basePort: await freeBasePort(),
    env: {
      TERN_LOG_LEVEL: "warn",
      TERN_FAILPOINTS: `${FAILPOINTS[0]},${FAILPOINTS[1]}=2,${FAILPOINTS[2]}`,
      TERN_FAILPOINTS_ONCE_DIR: onceDir,
    },
    healthTimeoutMs: 120_000,
  });
  controller = new ControllerClient({
    controllers: parsePeers(cluster.controllers, "controllers"),
    logger: silentLogger(),
  });
  await until("topic creation", 60_000, async () => {
    const out = await controller.createTopics([
      { name: TOPIC, partitions: 3, replicationFactor: 3 },
    ]);
    return out.every((o) => !o.error || o.error.errorName === "TOPIC_ALREADY_EXISTS")
      ? out
      : undefined;
  });
  h = new TxnHarness(controller, cluster.addresses("coordinator"));
}, 240_000);

afterAll(async () => {
  h?.close();
  controller?.close();
  await cluster?.stop({ termTimeoutMs: 5_000 });
  rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

describe("transaction coordinator (real processes)", () => {
  it("commits across partitions; a retried EndTxn gets the same answer", async () => {
    const tid = "it-basic";
    const id = await openTxn(tid, [0, 1, 2], "basic");
    const next = await h.endTxn(tid, id, true);
    expect(next).toEqual({ producerId: id.producerId, producerEpoch: id.producerEpoch + 1 });
    expect(await h.endTxn(tid, id, true)).toEqual(next);
    await expectVisible([0, 1, 2], "basic", true);
    // The markers are visible before the coordinator has every acknowledgement and has written
    // CompleteCommit: poll for it.
    const d = await until("the commit to complete", 30_000, async () => {
      const x = await h.describe(tid);
      return x.state === "COMPLETE_COMMIT" ? x : undefined;
    });
    expect(d).toMatchObject({
      errorCode: "NONE",
      state: "COMPLETE_COMMIT",
      pendingMarkerPartitions: [],
    });
  }, 180_000);

  it("SIGKILL after PrepareCommit, before any marker: committed on every partition", async () => {
    const tid = "it-after-prepare";
    const id = await openTxn(tid, [0, 1, 2], "prep");
    arm(FAILPOINTS[0]!);
    // The leader dies inside EndTxn; the client's retry reaches the new leader and is recognised.
    const next = await h.endTxn(tid, id, true, 90_000);
    expect(next.producerEpoch).toBe(id.producerEpoch + 1);
    await reviveKilledCoordinator(FAILPOINTS[0]!);
    await expectVisible([0, 1, 2], "prep", true);
  }, 240_000);

  it("SIGKILL after some but not all markers: committed on every partition", async () => {
    const tid = "it-partial-markers";
    const id = await openTxn(tid, [0, 1, 2], "partial");
    arm(FAILPOINTS[1]!);
    await h.endTxn(tid, id, true, 90_000);
    await reviveKilledCoordinator(FAILPOINTS[1]!);
    await expectVisible([0, 1, 2], "partial", true);
  }, 240_000);

  it("SIGKILL before the EndTxn response: the retry answers the same decision", async () => {
    const tid = "it-before-response";
    const id = await openTxn(tid, [1, 2], "beforeresp");
    arm(FAILPOINTS[2]!);
    const next = await h.endTxn(tid, id, true, 90_000);
    expect(next.producerEpoch).toBe(id.producerEpoch + 1);
    await reviveKilledCoordinator(FAILPOINTS[2]!);
    await expectVisible([1, 2], "beforeresp", true);
  }, 240_000);

  it("SIGKILL of the coordinator leader before EndTxn: the next InitProducerId aborts it, nothing is visible", async () => {
    const tid = "it-before-end";
    const id = await openTxn(tid, [0, 2], "lost");
    const leader = await h.leader("__transaction_state", partitionFor(tid, 50), "coordinator");
    cluster.kill("coordinator", leader.nodeId, "SIGKILL");
    await cluster.waitForExit("coordinator", leader.nodeId, 10_000);
    const fresh = await h.init(tid, undefined);
    expect(fresh.producerEpoch).toBeGreaterThan(id.producerEpoch);
    await expectVisible([0, 2], "lost", false);
    cluster.start("coordinator", leader.nodeId);
    await cluster.waitForHealth({
      timeoutMs: 90_000,
      only: [{ role: "coordinator", id: leader.nodeId }],
    });
  }, 240_000);

  it("two producers with one transactional id: the older is refused on every path", async () => {
    const tid = "it-zombie";
    const zombie = await openTxn(tid, [0], "zombie");
    const fresh = await h.init(tid);
    expect(fresh.producerEpoch).toBeGreaterThan(zombie.producerEpoch);
    await expect(
      h.addPartitions(tid, zombie, [{ topic: TOPIC, partition: 1 }]),
    ).rejects.toMatchObject({ errorName: "PRODUCER_FENCED" });
    await expect(h.addOffsets(tid, zombie, "g-zombie")).rejects.toMatchObject({
      errorName: "PRODUCER_FENCED",
    });
    await expect(h.endTxn(tid, zombie, true)).rejects.toMatchObject({
      errorName: "PRODUCER_FENCED",
    });
    expect(["INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED"]).toContain(
      await h.produce(tid, zombie, TOPIC, 0, ["zombie-late"]),
    );
    expect(await h.addPartitions(tid, fresh, [{ topic: TOPIC, partition: 0 }])).toEqual(["NONE"]);
    expect(await h.produce(tid, fresh, TOPIC, 0, ["fresh-0"])).toBe("NONE");
    await h.endTxn(tid, fresh, true);
    const values = await h.readCommitted(TOPIC, 0);
    expect(values).toContain("fresh-0");
    expect(values.filter((v) => v.startsWith("zombie"))).toEqual([]);
  }, 180_000);

  it("a late EndTxn or produce of an earlier transaction never affects a later one", async () => {
    const tid = "it-late";
    const first = await openTxn(tid, [1], "late1");
    const second = await h.endTxn(tid, first, true);
    expect(await h.addPartitions(tid, second, [{ topic: TOPIC, partition: 1 }])).toEqual(["NONE"]);
    expect(await h.produce(tid, second, TOPIC, 1, ["late2-1"])).toBe("NONE");
    await expect(h.endTxn(tid, first, false)).rejects.toMatchObject({
      errorName: "PRODUCER_FENCED",
    });
    expect(["INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED"]).toContain(
      await h.produce(tid, first, TOPIC, 1, ["late1-stale"]),
    );
    await h.endTxn(tid, second, true);
    const values = await h.readCommitted(TOPIC, 1);
    expect(values).toEqual(expect.arrayContaining(["late1-1", "late2-1"]));
    expect(values).not.toContain("late1-stale");
  }, 180_000);
});
