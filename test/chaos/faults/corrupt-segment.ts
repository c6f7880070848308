// Damage a disk does to data written long ago: a bit flipped inside a sealed segment (one that
// is no longer appended to, synced when it was rolled) or the segment cut short, on one replica
// of a partition (a minority), done while that broker is down. The replica must find it (the
// scrub after open, or the read that hits it), never serve it, keep the partition served by its
// sound replicas, and repair the segment (docs/storage.md, "Corruption and repair"). The
// broker's tern_segment_damaged_total and tern_segment_repaired_total counters say whether it
// found and repaired it.
import {
  existsSync,
  readdirSync,
  readSync,
  openSync,
  closeSync,
  statSync,
  truncateSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { SeededRandom } from "../../../libs/common/prng.js";

export type CorruptKind = "bit-flip" | "truncate";

export interface CorruptPlan {
  readonly kind: CorruptKind;
  /** Seeds which sealed segment and where. */
  readonly seed: number;
}

/** Topic configs that make a few-second run seal segments (16 KiB each). */
export const SMALL_SEGMENT_CONFIG = { "segment.bytes": "16384" } as const;

/** The non-empty segment logs of a replica before its active one (none when it has not rolled yet). */
export function sealedSegments(partitionDir: string): string[] {
  if (!existsSync(partitionDir)) return [];
  const logs = readdirSync(partitionDir)
    .filter((n) => /^\d{20}\.log$/.test(n))
    .sort();
  return logs.slice(0, -1).filter((n) => statSync(join(partitionDir, n)).size > 0);
}

/**
 * Damages one sealed segment of a stopped broker's replica in partitionDir; returns what it did,
 * or undefined when the replica has no sealed segment yet.
 */
export function corruptSealedSegment(partitionDir: string, plan: CorruptPlan): string | undefined {
  const sealed = sealedSegments(partitionDir);
  if (sealed.length === 0) return undefined;
  const rng = new SeededRandom(plan.seed);
  const path = join(partitionDir, sealed[rng.int(0, sealed.length)]!);
  const size = statSync(path).size;
  if (plan.kind === "truncate") {
    const keep = rng.int(0, size);
    truncateSync(path, keep);
    return `${path}: cut from ${size} to ${keep} bytes`;
  }
  const at = rng.int(0, size);
  const bit = rng.int(0, 8);
  const fd = openSync(path, "r+");
  try {
    const b = Buffer.alloc(1);
    readSync(fd, b, 0, 1, at);
    b[0] = b[0]! ^ (1 << bit);
    writeSync(fd, b, 0, 1, at);
  } finally {
    closeSync(fd);
  }
  return `${path}: bit ${bit} of byte ${at} of ${size} flipped`;
}

/** The broker's tern_segment_damaged_total (undefined when the scrape fails). */
export function segmentsDamaged(metricsAddress: string): Promise<number | undefined> {
  return counter(metricsAddress, "tern_segment_damaged_total");
}

/** The broker's tern_segment_repaired_total (undefined when the scrape fails). */
export function segmentsRepaired(metricsAddress: string): Promise<number | undefined> {
  return counter(metricsAddress, "tern_segment_repaired_total");
}

async function counter(metricsAddress: string, name: string): Promise<number | undefined> {
  try {
    const res = await fetch(`http://${metricsAddress}/metrics`, {
      signal: AbortSignal.timeout(2_000),
    });
    const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, "m").exec(await res.text());
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}
