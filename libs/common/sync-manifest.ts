// Test seam of the chaos suite's lost-unfsynced-writes fault (docs/chaos.md): with
// TERN_SYNC_MANIFEST=1, a process records in <data dir>/sync-manifest.chaos the durable length
// of every file it makes durable (entry journal writes, segment fdatasyncs, level's synced
// batches), right after the sync returns and before anything that relied on it runs. After a
// SIGKILL the chaos runner cuts every such file back to its last recorded length: what a crash
// of the machine (not just the process) leaves, as Jepsen's LazyFS does. A no-op otherwise.
//
// The manifest is appended to (one "<bytes> <path relative to the data dir>" line per sync; a
// SIGKILL keeps every completed write: the runner reads it after the process died) and
// rewritten from memory (temporary file, rename) once it grows past MANIFEST_BYTES_MAX.
import {
  closeSync,
  existsSync,
  openSync,
  readFileSync,
  renameSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { join, relative } from "node:path";

export const SYNC_MANIFEST_FILE = "sync-manifest.chaos";
const MANIFEST_BYTES_MAX = 1024 * 1024;

interface Manifest {
  readonly dataDir: string;
  readonly path: string;
  fd: number;
  bytes: number;
  readonly synced: Map<string, number>;
}

let manifest: Manifest | undefined;

/** Starts recording for this process's data directory when TERN_SYNC_MANIFEST=1 (once per process). */
export function openSyncManifest(dataDir: string): void {
  if (process.env.TERN_SYNC_MANIFEST !== "1" || manifest !== undefined) return;
  const path = join(dataDir, SYNC_MANIFEST_FILE);
  // An earlier incarnation's lines stay: files it synced and this one has not touched since
  // are still durable up to there.
  const text = existsSync(path) ? readFileSync(path, "utf8") : "";
  manifest = {
    dataDir,
    path,
    fd: openSync(path, "a"),
    bytes: Buffer.byteLength(text),
    synced: parseSyncManifest(text),
  };
}

/** `path` is durable up to `bytes` (called right after the sync that made it so returned). */
export function noteSynced(path: string, bytes: number): void {
  const m = manifest;
  if (m === undefined) return;
  const rel = relative(m.dataDir, path);
  m.synced.set(rel, bytes);
  const line = `${bytes} ${rel}\n`;
  m.bytes += writeSync(m.fd, line);
  if (m.bytes > MANIFEST_BYTES_MAX) rewrite(m);
}

/** Whether syncs are being recorded (callers skip the work of finding lengths otherwise). */
export function recordingSyncs(): boolean {
  return manifest !== undefined;
}

function rewrite(m: Manifest): void {
  let text = "";
  for (const [rel, bytes] of m.synced) {
    if (!existsSync(join(m.dataDir, rel))) {
      m.synced.delete(rel);
      continue;
    }
    text += `${bytes} ${rel}\n`;
  }
  const tmp = `${m.path}.tmp`;
  writeFileSync(tmp, text);
  renameSync(tmp, m.path);
  closeSync(m.fd);
  m.fd = openSync(m.path, "a");
  m.bytes = Buffer.byteLength(text);
}

/** Parses a manifest's text: the last length recorded for each path (relative to the data dir). */
export function parseSyncManifest(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    const m = /^(\d+) (.+)$/.exec(line);
    if (m) out.set(m[2]!, Number(m[1]));
  }
  return out;
}
