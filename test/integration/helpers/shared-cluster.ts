// One default cluster (3 controllers, 3 brokers, 3 coordinators) for the suites in
// test/integration/shared-cluster/, which create their own topics and transactional ids and
// never stop, kill or pause a process. shared-cluster.test.ts runs them all in one file: each
// suite that shares it saves a cluster start and stop (10-15 s on a CI machine).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freeBasePort } from "../../../scripts/cluster/free-base-port.js";
import { startCluster, type ProcessCluster } from "../../../scripts/cluster/process-cluster.js";

let started: Promise<{ cluster: ProcessCluster; dataDir: string }> | undefined;

async function start(): Promise<{ cluster: ProcessCluster; dataDir: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), "tern-shared-cluster-"));
  const cluster = await startCluster({
    dataDir,
    basePort: await freeBasePort(),
    env: { TERN_LOG_LEVEL: "warn" },
    healthTimeoutMs: 180_000,
  });
  return { cluster, dataDir };
}

/** The shared cluster, started by the first suite that asks for it. */
export async function sharedCluster(): Promise<ProcessCluster> {
  started ??= start();
  return (await started).cluster;
}

/** Stops the shared cluster (if one started) and removes its data directory. */
export async function stopSharedCluster(): Promise<void> {
  const running = started;
  started = undefined;
  const s = await running?.catch(() => undefined);
  if (!s) return;
  await s.cluster.stop({ termTimeoutMs: 5_000 });
  rmSync(s.dataDir, { recursive: true, force: true });
}
