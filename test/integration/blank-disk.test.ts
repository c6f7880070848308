// Real processes (3 controllers, 1 broker, 1 coordinator; build first with `npx tsc -p
// tsconfig.json`): a node that lost its disk comes back under its old id with an empty data
// directory. A broker still listed as a replica, and a controller its peers record as a voter
// with a data directory, must refuse to start with a clear message (exit code 2, one line)
// instead of rejoining their Raft groups with an empty log (docs/controller.md, "A node that
// lost its disk").
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parsePeers, type Role } from "../../libs/common/config.js";
import { silentLogger } from "../../libs/common/logger.js";
import { until } from "../../libs/common/poll.js";
import { ControllerClient } from "../../libs/metadata/controller-client.js";
import { partitionsHostedBy } from "../../libs/metadata/lookup.js";
import { startCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";

const EXIT_TIMEOUT_MS = 90_000;

let cluster: ProcessCluster;
let dataDir: string;
let controller: ControllerClient;

/** Stops a node, empties its data directory (a lost disk), starts it again. */
async function restartBlank(role: Role, id: number): Promise<void> {
  cluster.kill(role, id, "SIGTERM");
  expect(await cluster.waitForExit(role, id, 30_000)).toBe(true);
  const dir = cluster.spec(role, id).dataDir;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  cluster.start(role, id);
}

/** Waits for the process to end; its exit code and the tail of its log. */
async function exitOf(
  role: Role,
  id: number,
): Promise<{ exit: number | string | undefined; log: string }> {
  const exited = await cluster.waitForExit(role, id, EXIT_TIMEOUT_MS);
  const state = cluster.processes().find((p) => p.role === role && p.id === id);
  const log = readFileSync(cluster.spec(role, id).logFile, "utf8").slice(-20_000);
  return {
    exit: exited
      ? await until(
          "exit code",
          5_000,
          () => cluster.processes().find((p) => p.role === role && p.id === id)?.exit,
        )
      : state?.exit,
    log,
  };
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "tern-blank-disk-"));
  cluster = await startCluster({
    dataDir,
    controllers: 3,
    brokers: 1,
    coordinators: 1,
    basePort: await freeBasePort(),
    healthTimeoutMs: 120_000,
    env: {
      TERN_LOG_LEVEL: "info",
      TERN_TXN_STATE_PARTITIONS: "1",
      TERN_TXN_STATE_REPLICATION_FACTOR: "1",
      TERN_OFFSETS_PARTITIONS: "1",
      TERN_OFFSETS_REPLICATION_FACTOR: "1",
    },
  });
  controller = new ControllerClient({
    controllers: parsePeers(cluster.controllers, "controllers"),
    logger: silentLogger(),
  });
  // Every controller recorded its data directory; the broker holds the offsets partition.
  await until("directory ids recorded and replicas placed", 60_000, async () => {
    const q = await controller.describeCluster().catch(() => undefined);
    const m = await controller.metadata().catch(() => undefined);
    const recorded =
      q !== undefined &&
      q.voters.filter((v) => v.voter).length === 3 &&
      q.voters.every((v) => !v.voter || v.directoryId !== "");
    return recorded &&
      m !== undefined &&
      partitionsHostedBy(m, "broker", 0).length > 0 &&
      partitionsHostedBy(m, "coordinator", 0).length > 0
      ? true
      : undefined;
  });
}, 180_000);

afterAll(async () => {
  controller?.close();
  await cluster?.stop({ termTimeoutMs: 5_000 });
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

describe("a node that lost its disk refuses to rejoin its Raft groups", () => {
  it("a broker listed as a replica refuses to start with a blank data directory", async () => {
    await restartBlank("broker", 0);
    const { exit, log } = await exitOf("broker", 0);
    expect(exit).toBe(2);
    expect(log).toMatch(
      /broker 0 has a blank data directory .* lists it as a replica of 1 partition\(s\) \(__consumer_offsets\/0\): it lost its disk/,
    );
  }, 150_000);

  it("a coordinator listed as a replica refuses too", async () => {
    await restartBlank("coordinator", 0);
    const { exit, log } = await exitOf("coordinator", 0);
    expect(exit).toBe(2);
    expect(log).toMatch(/coordinator 0 has a blank data directory .*__transaction_state\/0/);
  }, 150_000);

  it("a controller recorded as a voter with a data directory refuses to start with a blank one; the quorum keeps working", async () => {
    await restartBlank("controller", 2);
    const { exit, log } = await exitOf("controller", 2);
    expect(exit).toBe(2);
    expect(log).toMatch(
      /controller 2 has a blank data directory .* lists it as a voter of the __controller group that ran with data directory [0-9a-f-]{36}: it lost its disk/,
    );
    // Nothing was written: the directory is still blank, so the next start refuses again.
    expect(() =>
      readFileSync(join(cluster.spec("controller", 2).dataDir, "meta.properties")),
    ).toThrow();
    const q = await controller.describeCluster(0);
    expect(q.leader).toBeGreaterThanOrEqual(0);
  }, 150_000);
});
