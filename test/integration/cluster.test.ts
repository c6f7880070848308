// The local cluster script end to end (nine real processes), and the process-cluster library
// that tests, chaos and benchmarks use (SIGKILL + restart from the same data dir).
// Needs `npm run build` (npm test does it first).
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { checkHealth } from "../../libs/server/health-client.js";
import { startCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import { processAlive, waitForExit } from "../../scripts/cluster/process-control.js";
import { clusterCli } from "./helpers/cluster-cli.js";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";

// The bar: nine processes healthy within 30 s. CLUSTER_READY_TIMEOUT_MS relaxes it on
// an overloaded machine.
const READY_TIMEOUT_MS = Number(process.env.CLUSTER_READY_TIMEOUT_MS ?? 30_000);
const CLI_MARGIN_MS = 15_000;

interface StatusJson {
  ok: boolean;
  registered: boolean;
  processes: Array<{
    role: string;
    id: number;
    pid: number;
    alive: boolean;
    address: string;
    health: string;
  }>;
}

describe("cluster script", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "tern-cluster-"));
  let pids: number[] = [];

  afterAll(async () => {
    // Whatever happened, leave nothing running.
    await clusterCli(["down", "--data-dir", dataDir], 30_000);
    for (const pid of pids) if (processAlive(pid)) process.kill(pid, "SIGKILL");
  });

  it("up --wait brings nine processes to SERVING within the bound", async () => {
    const basePort = await freeBasePort();
    const t0 = Date.now();
    const result = await clusterCli(
      [
        "up",
        "--data-dir",
        dataDir,
        "--base-port",
        String(basePort),
        "--wait",
        "--wait-timeout-ms",
        String(READY_TIMEOUT_MS),
      ],
      READY_TIMEOUT_MS + CLI_MARGIN_MS,
    );
    const registry = JSON.parse(readFileSync(join(dataDir, "cluster.json"), "utf8")) as {
      processes: Array<{ pid: number }>;
    };
    pids = registry.processes.map((p) => p.pid);
    expect(result.code, result.stderr + result.stdout).toBe(0);
    expect(Date.now() - t0).toBeLessThan(READY_TIMEOUT_MS + CLI_MARGIN_MS);
    expect(pids).toHaveLength(9);
    expect(result.stdout.match(/ SERVING$/gm)).toHaveLength(9);
    // The first-run cluster says once that it is plaintext.
    expect(
      result.stdout.match(/^plaintext on 127\.0\.0\.1: no TLS, authentication or ACLs/gm),
    ).toHaveLength(1);
  });

  it("status --json reports every process alive and SERVING, and exits 0", async () => {
    const result = await clusterCli(["status", "--json", "--data-dir", dataDir], 20_000);
    expect(result.code, result.stderr).toBe(0);
    const status = JSON.parse(result.stdout) as StatusJson;
    expect(status.ok).toBe(true);
    expect(status.processes.map((p) => `${p.role}-${p.id}`).sort()).toEqual([
      "broker-0",
      "broker-1",
      "broker-2",
      "controller-0",
      "controller-1",
      "controller-2",
      "coordinator-0",
      "coordinator-1",
      "coordinator-2",
    ]);
    for (const p of status.processes) {
      expect(p.alive).toBe(true);
      expect(p.health).toBe("SERVING");
      expect(await checkHealth(p.address)).toBe("SERVING");
    }
    const logs = readFileSync(join(dataDir, "logs", "broker-1.log"), "utf8");
    expect(logs).toContain('"component":"broker"');
  });

  it("up refuses while the cluster is running", async () => {
    const result = await clusterCli(["up", "--data-dir", dataDir], 20_000);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/already running/);
  });

  it("status exits non-zero when a process is down", async () => {
    process.kill(pids[4]!, "SIGKILL");
    expect(await waitForExit([pids[4]!], 5_000)).toEqual([]);
    const result = await clusterCli(["status", "--data-dir", dataDir], 20_000);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/^broker +1 +\d+ +no +\S+ +\S+ +unreachable$/m);
  });

  it("down stops every process and leaves none behind", async () => {
    const result = await clusterCli(["down", "--data-dir", dataDir], 30_000);
    expect(result.code, result.stderr).toBe(0);
    expect(pids.filter(processAlive)).toEqual([]);
    const after = await clusterCli(["status", "--json", "--data-dir", dataDir], 20_000);
    expect(after.code).toBe(1);
    expect((JSON.parse(after.stdout) as StatusJson).registered).toBe(false);
  });
});

describe("process-cluster library", () => {
  let cluster: ProcessCluster | undefined;

  afterAll(async () => {
    await cluster?.stop({ termTimeoutMs: 5_000 });
  });

  it("SIGKILLs a process and restarts it from the same data dir", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "tern-pc-"));
    const basePort = await freeBasePort({ controllers: 1, brokers: 1, coordinators: 0 });
    cluster = await startCluster({
      dataDir,
      controllers: 1,
      brokers: 1,
      coordinators: 0,
      basePort,
      healthTimeoutMs: READY_TIMEOUT_MS,
    });
    const before = cluster.pid("broker", 0)!;
    expect(cluster.kill("broker", 0, "SIGKILL")).toBe(true);
    expect(await cluster.waitForExit("broker", 0, 5_000)).toBe(true);
    expect(await checkHealth(cluster.address("broker", 0), { timeoutMs: 500 })).toBe("unreachable");
    const after = await cluster.restart("broker", 0);
    expect(after).not.toBe(before);
    await cluster.waitForHealth({ timeoutMs: READY_TIMEOUT_MS });
    expect(
      readFileSync(join(dataDir, "logs", "broker-0.log"), "utf8").match(/"msg":"started"/g),
    ).toHaveLength(2);
    const result = await cluster.stop();
    expect(result.survivors).toEqual([]);
    expect(cluster.processes().every((p) => !p.alive)).toBe(true);
  });
});
