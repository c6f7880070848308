// The local cluster of this checkout (`npm run cluster -- up`, scripts/cluster/): where it keeps
// its data, and what its registry (<data-dir>/cluster.json, written by scripts/cluster/
// registry.ts) tells a client: the processes' addresses and, with `up --tls`, the CA and client
// certificate. The CLI reads it to talk to that cluster over TLS without flags; the scripts
// import this file, never the other way round.
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** How far up from this file the repository root is looked for. */
const PARENT_LEVELS_MAX = 6;

/** <repository>/.data/cluster: the repository found above this file (cli/ or dist/cli/). */
export function localClusterDataDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let level = 0; level < PARENT_LEVELS_MAX; level++) {
    if (dir.endsWith("/dist") || dir.endsWith("\\dist"))
      return join(dirname(dir), ".data", "cluster");
    if (existsSync(join(dir, "package.json"))) return join(dir, ".data", "cluster");
    dir = dirname(dir);
  }
  throw new Error(`cannot find the repository above ${fileURLToPath(import.meta.url)}`);
}

export function registryPath(dataDir: string): string {
  return join(resolve(dataDir), "cluster.json");
}

/** What a client needs from the registry. */
export interface LocalClusterAccess {
  readonly addresses: ReadonlySet<string>;
  readonly tls?: { readonly caFile: string; readonly certFile: string; readonly keyFile: string };
}

/** The registry's addresses and TLS files; undefined without a registry. */
export function readLocalClusterAccess(dataDir: string): LocalClusterAccess | undefined {
  const path = registryPath(dataDir);
  if (!existsSync(path)) return undefined;
  const registry = JSON.parse(readFileSync(path, "utf8")) as {
    processes?: Array<{ address?: unknown }>;
    tls?: { caFile: string; clientCertFile: string; clientKeyFile: string };
  };
  const addresses = new Set(
    (registry.processes ?? []).map((p) => p.address).filter((a) => typeof a === "string"),
  );
  const tls = registry.tls;
  return tls
    ? {
        addresses,
        tls: { caFile: tls.caFile, certFile: tls.clientCertFile, keyFile: tls.clientKeyFile },
      }
    : { addresses };
}
