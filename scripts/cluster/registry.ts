// <data-dir>/cluster.json: what `up` started (pids, addresses, paths), so that `status` and
// `down` — separate invocations — can find the processes again.
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import type { ProcessSpec } from "./layout.js";
import { registryPath } from "../../cli/local-cluster.js";

export interface RegisteredProcess extends ProcessSpec {
  pid: number;
  startedAt: string;
}

export interface ClusterRegistry {
  readonly version: 1;
  readonly dataDir: string;
  readonly basePort: number;
  readonly controllers: string;
  readonly processes: RegisteredProcess[];
  /** Set when the cluster runs with TLS (`up --tls`): where clients find the CA and a client certificate. */
  readonly tls?: {
    readonly caFile: string;
    readonly clientCertFile: string;
    readonly clientKeyFile: string;
  };
}

export { registryPath };

export function readRegistry(dataDir: string): ClusterRegistry | undefined {
  const path = registryPath(dataDir);
  if (!existsSync(path)) return undefined;
  const parsed = JSON.parse(readFileSync(path, "utf8")) as ClusterRegistry;
  if (parsed.version !== 1 || !Array.isArray(parsed.processes))
    throw new Error(`${path} is not a cluster registry this version understands`);
  return parsed;
}

/** Written to a temp file then renamed, so a reader never sees half a registry. */
export function writeRegistry(registry: ClusterRegistry): void {
  mkdirSync(registry.dataDir, { recursive: true });
  const path = registryPath(registry.dataDir);
  writeFileSync(`${path}.tmp`, `${JSON.stringify(registry, null, 2)}\n`);
  renameSync(`${path}.tmp`, path);
}
