// `cluster up | down | status`: the local cluster of separate processes, found again through
// <data-dir>/cluster.json. Each returns the process exit code; output goes to stdout, problems
// to stderr.
import { rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { checkHealth, type HealthAnswer } from "../../libs/server/health-client.js";
import { DEFAULT_BASE_PORT, HOST } from "./layout.js";
import { portInUse } from "./port-check.js";
import { createCluster } from "./process-cluster.js";
import { processAlive, terminate } from "./process-control.js";
import {
  readRegistry,
  registryPath,
  type ClusterRegistry,
  type RegisteredProcess,
} from "./registry.js";
import { useClientTlsFiles } from "../../libs/server/tls/credentials.js";
import { localClusterDataDir } from "../../cli/local-cluster.js";

const UP_WAIT_TIMEOUT_MS = 60_000;
const DOWN_TERM_TIMEOUT_MS = 10_000;
const STATUS_CHECK_TIMEOUT_MS = 1_500;

/** <repository>/.data/cluster (cli/local-cluster.ts: the CLI finds the cluster there too). */
export function defaultDataDir(): string {
  return localClusterDataDir();
}

export interface StatusRow {
  role: string;
  id: number;
  pid: number;
  alive: boolean;
  address: string;
  metricsAddress: string;
  /** Brokers: HOST:PORT of the Kafka protocol listener. */
  kafkaAddress?: string;
  health: HealthAnswer;
  logFile: string;
}

/** The one line a plaintext `cluster up` (and so `npm start`) prints. */
export const PLAINTEXT_NOTICE = `plaintext on ${HOST}: no TLS, authentication or ACLs, for a first run on this machine only (secure: TERN_SECURITY=acl TERN_SUPER_USERS=User:tern-admin cluster up --tls; docs/security.md)\n`;

export async function up(options: {
  dataDir: string;
  basePort?: number;
  wait: boolean;
  waitTimeoutMs?: number;
  reuse?: boolean;
  tls?: boolean;
}): Promise<number> {
  const dataDir = resolve(options.dataDir);
  const registry = readRegistry(dataDir);
  const registered = registry?.processes ?? [];
  const running = registered.filter((p) => processAlive(p.pid));
  if (running.length > 0 && options.reuse && running.length === registered.length) {
    useRegistryTls(registry);
    return reuseRunning(dataDir, running, options);
  }
  if (running.length > 0) {
    const partly =
      running.length < registered.length
        ? `only ${running.length} of ${registered.length} processes alive`
        : `${running.length} processes alive`;
    process.stderr.write(
      `cluster: already running in ${dataDir} (${partly}); run \`cluster down\` first\n`,
    );
    return 1;
  }
  const cluster = createCluster({
    dataDir,
    basePort: options.basePort ?? DEFAULT_BASE_PORT,
    tls: options.tls === true,
  });
  const specs = cluster.specs;
  for (const spec of specs) {
    for (const port of [spec.port, spec.metricsPort]) {
      if (await portInUse(HOST, port)) {
        process.stderr.write(
          `cluster: port ${port} (${spec.role} ${spec.id}) is already in use; pick another --base-port\n`,
        );
        return 1;
      }
    }
  }
  cluster.startAll();
  process.stdout.write(
    `started ${specs.length} processes in ${dataDir} (logs in ${join(dataDir, "logs")})\n`,
  );
  // Said once, at start: the first-run cluster is open to anything on this machine.
  if (options.tls !== true) process.stdout.write(PLAINTEXT_NOTICE);
  if (!options.wait) return 0;
  let failure: string | undefined;
  try {
    await cluster.waitForHealth({ timeoutMs: options.waitTimeoutMs ?? UP_WAIT_TIMEOUT_MS });
  } catch (e) {
    failure = (e as Error).message;
  }
  const rows = await statusRows(dataDir);
  process.stdout.write(formatTable(rows ?? []));
  if (failure) {
    process.stderr.write(`cluster: ${failure}\n`);
    return 1;
  }
  return 0;
}

/** `up --reuse` on a running cluster (what `npm start` does twice in a row): use it as it is. */
async function reuseRunning(
  dataDir: string,
  running: readonly RegisteredProcess[],
  options: { wait: boolean; waitTimeoutMs?: number },
): Promise<number> {
  process.stdout.write(
    `using the cluster already running in ${dataDir} (${running.length} processes)\n`,
  );
  if (!options.wait) return 0;
  const deadline = Date.now() + (options.waitTimeoutMs ?? UP_WAIT_TIMEOUT_MS);
  let rows = await statusRows(dataDir);
  while (!(rows ?? []).every((r) => r.alive && r.health === "SERVING") && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 250));
    rows = await statusRows(dataDir);
  }
  process.stdout.write(formatTable(rows ?? []));
  if ((rows ?? []).every((r) => r.alive && r.health === "SERVING")) return 0;
  process.stderr.write("cluster: the running cluster is not healthy within the wait bound\n");
  return 1;
}

/** A cluster started with --tls is checked over TLS, with the client certificate it recorded. */
function useRegistryTls(registry: ClusterRegistry | undefined): void {
  if (registry?.tls)
    useClientTlsFiles({
      caFile: registry.tls.caFile,
      certFile: registry.tls.clientCertFile,
      keyFile: registry.tls.clientKeyFile,
    });
}

export async function statusRows(dataDir: string): Promise<StatusRow[] | undefined> {
  const registry = readRegistry(dataDir);
  if (!registry) return undefined;
  useRegistryTls(registry);
  return Promise.all(registry.processes.map(rowOf));
}

async function rowOf(p: RegisteredProcess): Promise<StatusRow> {
  const alive = processAlive(p.pid);
  const health: HealthAnswer = alive
    ? await checkHealth(p.address, { timeoutMs: STATUS_CHECK_TIMEOUT_MS })
    : "unreachable";
  return {
    role: p.role,
    id: p.id,
    pid: p.pid,
    alive,
    address: p.address,
    metricsAddress: p.metricsAddress,
    ...(p.kafkaPort !== undefined ? { kafkaAddress: `127.0.0.1:${p.kafkaPort}` } : {}),
    health,
    logFile: p.logFile,
  };
}

export async function status(options: { dataDir: string; json: boolean }): Promise<number> {
  const dataDir = resolve(options.dataDir);
  const rows = await statusRows(dataDir);
  const ok =
    rows !== undefined && rows.length > 0 && rows.every((r) => r.alive && r.health === "SERVING");
  if (options.json) {
    process.stdout.write(
      `${JSON.stringify({ dataDir, registered: rows !== undefined, ok, processes: rows ?? [] })}\n`,
    );
  } else if (rows === undefined) {
    process.stdout.write(`no cluster registered in ${dataDir}\n`);
  } else {
    process.stdout.write(formatTable(rows));
    process.stdout.write(
      ok ? "all processes are up and SERVING\n" : "NOT all processes are up and SERVING\n",
    );
  }
  return ok ? 0 : 1;
}

export async function down(options: { dataDir: string }): Promise<number> {
  const dataDir = resolve(options.dataDir);
  const registry = readRegistry(dataDir);
  if (!registry) {
    process.stdout.write(`no cluster registered in ${dataDir}\n`);
    return 0;
  }
  const pids = registry.processes.map((p) => p.pid).filter(processAlive);
  const result = await terminate(pids, { termTimeoutMs: DOWN_TERM_TIMEOUT_MS });
  const left = registry.processes.filter((p) => processAlive(p.pid));
  if (left.length > 0 || result.survivors.length > 0) {
    process.stderr.write(
      `cluster: processes still alive after SIGKILL: ${left.map((p) => `${p.role}-${p.id}(${p.pid})`).join(", ")}\n`,
    );
    return 1;
  }
  rmSync(registryPath(dataDir), { force: true });
  const killed =
    result.killed.length > 0
      ? ` (${result.killed.length} needed SIGKILL after ${DOWN_TERM_TIMEOUT_MS} ms)`
      : "";
  process.stdout.write(`stopped ${pids.length} processes${killed}; data kept in ${dataDir}\n`);
  return 0;
}

export function formatTable(rows: readonly StatusRow[]): string {
  const header = ["ROLE", "ID", "PID", "ALIVE", "ADDRESS", "KAFKA", "HEALTH"];
  const lines = rows.map((r) => [
    r.role,
    String(r.id),
    String(r.pid),
    r.alive ? "yes" : "no",
    r.address,
    r.kafkaAddress ?? "-",
    r.health,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const format = (cells: string[]): string =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join("  ")
      .trimEnd();
  return [format(header), ...lines.map(format)].join("\n") + "\n";
}
