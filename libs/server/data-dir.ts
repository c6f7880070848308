// Makes sure the data directory exists and is writable before anything opens it, so a bad
// path is a one-line startup error rather than a stack trace from deep inside level, and
// checks whose directory it is. Like KRaft's meta.properties, `meta.properties` records the
// cluster id, the node id and role, and a random directory id (KIP-853): written once, when a
// blank directory is first claimed, and checked on every start. A directory of another
// cluster, node or role refuses to start. A blank directory (no meta.properties and nothing
// else) is reported as such so the role can refuse to rejoin Raft groups it is recorded in
// (docs/controller.md, "A node that lost its disk"); it is claimed only after those checks.
import { randomUUID } from "node:crypto";
import {
  chmodSync,
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join, resolve } from "node:path";
import type { Role } from "../common/config.js";
import { describeOsError, StartupError } from "./startup-error.js";

export const META_FILE = "meta.properties";
const META_VERSION = "1";
/** Data directories are readable by their owner only. */
export const DATA_DIR_MODE = 0o700;
/** Files a start may leave in a directory before it is claimed (the write probe). */
const PROBE_PREFIX = ".write-probe-";

export interface DataDirIdentity {
  readonly clusterId: string;
  readonly nodeId: number;
  readonly role: Role;
}

export interface DataDir {
  readonly path: string;
  readonly clusterId: string;
  /** This directory's id: from meta.properties, or new (random) for a blank directory. */
  readonly directoryId: string;
  /** True when the directory held nothing at start: a first start, or a node that lost its disk. */
  readonly blank: boolean;
  /** Writes meta.properties (once; later calls do nothing). Call after the blank-disk checks passed. */
  claim(): void;
}

/** A directory of this user that others may read (made before 0700 was the rule) is closed to them. */
function restrictToOwner(dir: string): void {
  const st = statSync(dir);
  if (
    (st.mode & 0o077) !== 0 &&
    typeof process.getuid === "function" &&
    st.uid === process.getuid()
  )
    chmodSync(dir, DATA_DIR_MODE);
}

/** The directory, created and writable; with `identity`, also its meta.properties checked against it. */
export function prepareDataDir(dataDir: string, identity?: DataDirIdentity): DataDir {
  const absolute = resolve(dataDir);
  try {
    // Owner only: the controller's log and snapshots hold SCRAM keys (StoredKey and ServerKey
    // are enough to impersonate the server and to mount a dictionary attack).
    mkdirSync(absolute, { recursive: true, mode: DATA_DIR_MODE });
    restrictToOwner(absolute);
  } catch (e) {
    throw new StartupError(`data directory ${absolute} cannot be created: ${describeOsError(e)}`, {
      cause: e,
    });
  }
  const probe = join(absolute, `${PROBE_PREFIX}${process.pid}`);
  try {
    writeFileSync(probe, "ok");
    rmSync(probe, { force: true });
  } catch (e) {
    throw new StartupError(`data directory ${absolute} is not writable: ${describeOsError(e)}`, {
      cause: e,
    });
  }
  if (identity === undefined)
    return { path: absolute, clusterId: "", directoryId: "", blank: false, claim: () => undefined };
  const existing = readMeta(absolute);
  if (existing !== undefined) {
    checkMeta(absolute, existing, identity);
    return {
      path: absolute,
      clusterId: identity.clusterId,
      directoryId: existing["directory.id"]!,
      blank: false,
      claim: () => undefined,
    };
  }
  const directoryId = randomUUID();
  const blank = readdirSync(absolute).every((name) => name.startsWith(PROBE_PREFIX));
  let claimed = false;
  const claim = (): void => {
    if (claimed) return;
    writeMeta(absolute, {
      version: META_VERSION,
      "cluster.id": identity.clusterId,
      "node.id": String(identity.nodeId),
      role: identity.role,
      "directory.id": directoryId,
    });
    claimed = true;
  };
  // A directory with data but no meta.properties predates it: adopt it now (it is not blank).
  if (!blank) claim();
  return { path: absolute, clusterId: identity.clusterId, directoryId, blank, claim };
}

function checkMeta(path: string, meta: Record<string, string>, identity: DataDirIdentity): void {
  const where = `data directory ${path} (${META_FILE})`;
  if (meta.version !== META_VERSION)
    throw new StartupError(
      `${where} has version ${meta.version ?? "(none)"}; this build reads version ${META_VERSION}`,
    );
  if (meta["cluster.id"] !== identity.clusterId) {
    throw new StartupError(
      `${where} belongs to cluster "${meta["cluster.id"]}", but this node is configured for cluster "${identity.clusterId}" (--cluster-id / TERN_CLUSTER_ID): refusing to start with another cluster's data; point --data-dir at this cluster's directory`,
    );
  }
  if (meta["node.id"] !== String(identity.nodeId) || meta.role !== identity.role) {
    throw new StartupError(
      `${where} belongs to ${meta.role} ${meta["node.id"]}, but this process is ${identity.role} ${identity.nodeId}: refusing to start with another node's data`,
    );
  }
  if (!/^[0-9a-f-]{36}$/.test(meta["directory.id"] ?? ""))
    throw new StartupError(`${where} has no valid directory.id`);
}

function readMeta(dir: string): Record<string, string> | undefined {
  let text: string;
  try {
    text = readFileSync(join(dir, META_FILE), "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new StartupError(
      `data directory ${dir}: ${META_FILE} cannot be read: ${describeOsError(e)}`,
      { cause: e },
    );
  }
  const out: Record<string, string> = {};
  for (const line of text.split("\n")) {
    const trimmed = line.trim();
    if (trimmed === "" || trimmed.startsWith("#")) continue;
    const eq = trimmed.indexOf("=");
    if (eq <= 0)
      throw new StartupError(
        `data directory ${dir}: ${META_FILE} has a malformed line "${trimmed.slice(0, 80)}"`,
      );
    out[trimmed.slice(0, eq)] = trimmed.slice(eq + 1);
  }
  return out;
}

/** Atomic and durable: a temp file, fsync, rename, fsync of the directory. */
function writeMeta(dir: string, meta: Record<string, string>): void {
  const body = `# tern data directory identity: written once, checked on every start\n${Object.entries(
    meta,
  )
    .map(([k, v]) => `${k}=${v}`)
    .join("\n")}\n`;
  const tmp = join(dir, `${META_FILE}.tmp`);
  try {
    writeFileSync(tmp, body);
    const fd = openSync(tmp, "r");
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, join(dir, META_FILE));
    const dfd = openSync(dir, "r");
    try {
      fsyncSync(dfd);
    } finally {
      closeSync(dfd);
    }
  } catch (e) {
    throw new StartupError(
      `data directory ${dir}: ${META_FILE} cannot be written: ${describeOsError(e)}`,
      { cause: e },
    );
  }
}
