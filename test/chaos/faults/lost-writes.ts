// What a crash of the machine (power cut, kernel panic) leaves beyond a process crash: every
// byte the page cache held and no fsync had made durable is gone (Jepsen's LazyFS). There is no
// FUSE here, so the processes record instead: with TERN_SYNC_MANIFEST=1 each one appends the
// durable length of every file it syncs to <data dir>/sync-manifest.chaos, right after the sync
// returns (libs/common/sync-manifest.ts). Once the process is SIGKILLed, this cuts every file of
// the kinds a process leaves unsynced back to its last recorded length (0 when it was never
// synced): the entry journal's files, the partitions' segment logs, indexes and checkpoints (a
// new log's first checkpoint is synced late; the others are written with an fsync, and
// recorded), and level's write-ahead logs. Files level syncs itself (tables, MANIFEST, CURRENT)
// are left as they are.
import { existsSync, readdirSync, readFileSync, statSync, truncateSync } from "node:fs";
import { join } from "node:path";
import { parseSyncManifest, SYNC_MANIFEST_FILE } from "../../../libs/common/sync-manifest.js";

export type UnsyncedKind = "journal" | "segment" | "index" | "checkpoint" | "level-wal";

export interface LostWrites {
  /** Files cut, by kind. */
  readonly files: Record<UnsyncedKind, number>;
  /** Bytes dropped, by kind. */
  readonly bytes: Record<UnsyncedKind, number>;
  /** One line per file cut: "<path>: <size> -> <synced>". */
  readonly cuts: string[];
  /** Whether the data directory had a manifest at all (a process that never synced has none). */
  readonly manifest: boolean;
}

function filesOf(dir: string, pattern: RegExp): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((n) => pattern.test(n))
    .sort()
    .map((n) => join(dir, n));
}

/** The files of a stopped process's data directory whose unsynced tails a machine crash loses. */
function volatileFiles(dataDir: string): Array<{ kind: UnsyncedKind; path: string }> {
  const out: Array<{ kind: UnsyncedKind; path: string }> = [];
  for (const path of filesOf(dataDir, /^\d+\.log$/)) out.push({ kind: "level-wal", path });
  for (const path of filesOf(join(dataDir, "entry-journal"), /\.journal$/))
    out.push({ kind: "journal", path });
  const partitions = join(dataDir, "partitions");
  for (const name of existsSync(partitions) ? readdirSync(partitions).sort() : []) {
    const dir = join(partitions, name);
    for (const path of filesOf(dir, /^\d{20}\.log$/)) out.push({ kind: "segment", path });
    for (const path of filesOf(dir, /^\d{20}\.index$/)) out.push({ kind: "index", path });
    // A new log's first checkpoint is synced late (libs/storage/segment.ts): until then, lost.
    for (const path of filesOf(dir, /^\d{20}\.checkpoint$/)) out.push({ kind: "checkpoint", path });
  }
  return out;
}

/** Cuts a stopped process's files back to what its last syncs made durable. */
export function loseUnsyncedWrites(dataDir: string): LostWrites {
  const manifestPath = join(dataDir, SYNC_MANIFEST_FILE);
  const manifest = existsSync(manifestPath);
  const synced = parseSyncManifest(manifest ? readFileSync(manifestPath, "utf8") : "");
  const zero = (): Record<UnsyncedKind, number> => ({
    journal: 0,
    segment: 0,
    index: 0,
    checkpoint: 0,
    "level-wal": 0,
  });
  const result: LostWrites = { files: zero(), bytes: zero(), cuts: [], manifest };
  for (const { kind, path } of volatileFiles(dataDir)) {
    const size = statSync(path).size;
    const durable = synced.get(path.slice(dataDir.length + 1)) ?? 0;
    if (size <= durable) continue;
    truncateSync(path, durable);
    result.files[kind] += 1;
    result.bytes[kind] += size - durable;
    result.cuts.push(`${path}: ${size} -> ${durable}`);
  }
  return result;
}

/** "journal 0 files, segment 3 files (12345 bytes), ...": what loseUnsyncedWrites dropped. */
export function lostSummary(lost: LostWrites): string {
  const kinds = Object.keys(lost.files) as UnsyncedKind[];
  return kinds.map((k) => `${k} ${lost.files[k]} cut (${lost.bytes[k]} B)`).join(", ");
}
