// Node leases under a step of the controller leader's wall clock (the chaos suite's clock
// seam, libs/runtime/clock-offset.ts): 3 controllers and 2 brokers as real processes, each with
// its own clock offset file. The leader's clock jumps a minute forward: no live broker may be
// declared dead (its lease is not over on any real clock). Then it jumps back five minutes and
// a broker is SIGKILLed: its lease must still expire within a few leases, not after the five
// minutes it would take the wall clock to catch up with the replicated clock.
// Needs a build first (`npm run build`): the processes run from dist/.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { CLOCK_OFFSET_FILE_ENV } from "../../libs/runtime/clock-offset.js";
import { parsePeers } from "../../libs/common/config.js";
import { silentLogger } from "../../libs/common/logger.js";
import { sleep, until } from "../../libs/common/poll.js";
import { ControllerClient } from "../../libs/metadata/controller-client.js";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";
import { createCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";

const LEASE_MS = 3_000;
const SHAPE = { controllers: 3, brokers: 2, coordinators: 0 };
let cluster: ProcessCluster;
let controller: ControllerClient;
let dataDir: string;

const offsetFile = (role: string, id: number): string =>
  join(dataDir, "clock", `${role}-${id}.offset`);

/** Writes the controller's offset and waits until its process says it runs with it. */
async function stepClock(id: number, offsetMs: number): Promise<void> {
  writeFileSync(offsetFile("controller", id), `${offsetMs}\n`);
  await until("the offset applied", 5_000, () => {
    try {
      return readFileSync(`${offsetFile("controller", id)}.applied`, "utf8").trim() ===
        String(offsetMs)
        ? true
        : undefined;
    } catch {
      return undefined;
    }
  });
}

const aliveBrokers = async (): Promise<number[]> =>
  (await controller.metadata()).nodes
    .filter((n) => n.role === "broker" && n.alive)
    .map((n) => n.nodeId)
    .sort();

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "tern-clock-step-"));
  mkdirSync(join(dataDir, "clock"));
  cluster = createCluster({
    dataDir,
    ...SHAPE,
    basePort: await freeBasePort(SHAPE),
    env: { TERN_LOG_LEVEL: "warn", TERN_NODE_LEASE_MS: String(LEASE_MS) },
  });
  cluster.envOf = (spec) => ({ [CLOCK_OFFSET_FILE_ENV]: offsetFile(spec.role, spec.id) });
  cluster.startAll();
  await cluster.waitForHealth({ timeoutMs: 120_000 });
  controller = new ControllerClient({
    controllers: parsePeers(cluster.controllers, "controllers"),
    logger: silentLogger(),
    requestTimeoutMs: 5_000,
  });
  await until("both brokers alive", 60_000, async () =>
    (await aliveBrokers()).length === 2 ? true : undefined,
  );
}, 180_000);

afterAll(async () => {
  controller?.close();
  await cluster?.stop({ termTimeoutMs: 5_000 });
  rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

it("a step forward of the controller leader's wall clock expires no live broker's lease", async () => {
  const leader = (await controller.describeCluster()).leader;
  expect(leader).toBeGreaterThanOrEqual(0);
  // Past a new leader's one-lease grace: its ticks may expire leases from now on.
  await sleep(LEASE_MS * 2);
  await stepClock(leader, 60_000);
  // Two leases of watching, every 100 ms: no live broker may be declared dead meanwhile.
  const deadline = performance.now() + LEASE_MS * 2;
  while (performance.now() < deadline) {
    expect(await aliveBrokers()).toEqual([0, 1]);
    await sleep(100);
  }
  expect((await controller.describeCluster()).leader).toBe(leader);
}, 120_000);

it("after a step back of the leader's wall clock, a broker that dies is still found dead within a few leases", async () => {
  const leader = (await controller.describeCluster()).leader;
  await stepClock(leader, -240_000); // five minutes back from +1 min
  expect(await aliveBrokers()).toEqual([0, 1]);
  await sleep(LEASE_MS);
  cluster.kill("broker", 1, "SIGKILL");
  await until("the dead broker declared dead", LEASE_MS * 4, async () =>
    (await aliveBrokers()).join(",") === "0" ? true : undefined,
  );
}, 120_000);
