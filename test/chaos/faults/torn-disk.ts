// What a crash leaves on a broker's disk beyond lost process memory, done to its data directory
// while the process is down: a torn last write (a record cut short, or whole but with a bad
// checksum: the tail of a writev the kernel had only partly written) at the end of the newest
// entry-journal file and of every partition's active segment, and derived files that were never
// synced (a segment index deleted, another cut mid-entry). Only bytes past the last fsync are
// touched: what was acknowledged stays on disk, as after a real crash. On restart the broker
// must truncate the torn tails, rebuild the indexes, catch up from the leaders and serve
// nothing corrupt (docs/storage.md, "Durability and crash safety").
import { appendFileSync, existsSync, readdirSync, rmSync, statSync, truncateSync } from "node:fs";
import { join } from "node:path";
import { SeededRandom } from "../../../libs/common/prng.js";

export type TornKind = "short" | "bad-checksum";

export interface TearPlan {
  /** How the appended tail is torn. */
  readonly kind: TornKind;
  /** Bytes of the torn tail after its length field. */
  readonly tailBytes: number;
  /** Seeds the tail's bytes (the schedule stays plain data). */
  readonly seed: number;
}

/** Bytes of a record's length field, in journal and segment records alike (u32, big-endian). */
const LENGTH_BYTES = 4;

/** A record prefix: the length field, then fewer bytes than it announces (short) or exactly as many (whose checksum cannot match). */
function tornTail(plan: TearPlan, rng: SeededRandom): Buffer {
  const body = Buffer.alloc(plan.tailBytes);
  for (let i = 0; i < body.length; i++) body[i] = rng.int(0, 256);
  const head = Buffer.alloc(LENGTH_BYTES);
  head.writeUInt32BE(
    plan.kind === "short" ? plan.tailBytes + 1 + rng.int(0, 4096) : plan.tailBytes,
  );
  return Buffer.concat([head, body]);
}

function newest(dir: string, suffix: string): string | undefined {
  if (!existsSync(dir)) return undefined;
  const names = readdirSync(dir)
    .filter((n) => n.endsWith(suffix))
    .sort();
  return names.length === 0 ? undefined : join(dir, names[names.length - 1]!);
}

/** Tears a stopped broker's data directory; returns what it did, one line per file. */
export function tearBrokerDisk(dataDir: string, plan: TearPlan): string[] {
  const rng = new SeededRandom(plan.seed);
  const done: string[] = [];
  const journal = newest(join(dataDir, "entry-journal"), ".journal");
  if (journal !== undefined) {
    appendFileSync(journal, tornTail(plan, rng));
    done.push(`${journal}: ${plan.kind} tail`);
  }
  const partitions = join(dataDir, "partitions");
  for (const name of existsSync(partitions) ? readdirSync(partitions).sort() : []) {
    const dir = join(partitions, name);
    const log = newest(dir, ".log");
    if (log === undefined) continue;
    appendFileSync(log, tornTail(plan, rng));
    done.push(`${log}: ${plan.kind} tail`);
    // Indexes are never synced: a crash can lose one, or leave it cut mid-entry.
    const index = log.replace(/\.log$/, ".index");
    if (!existsSync(index)) continue;
    if (rng.bool(0.5)) {
      rmSync(index);
      done.push(`${index}: deleted`);
    } else {
      const size = statSync(index).size;
      truncateSync(index, Math.max(0, size - 1 - rng.int(0, Math.min(size, 39))));
      done.push(`${index}: cut mid-entry`);
    }
  }
  return done;
}

/** "3 short tail, 2 deleted, 1 cut mid-entry": what tearBrokerDisk did, counted by kind. */
export function tornSummary(done: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const line of done) {
    const what = line.slice(line.lastIndexOf(": ") + 2);
    counts.set(what, (counts.get(what) ?? 0) + 1);
  }
  return [...counts].map(([what, n]) => `${n} ${what}`).join(", ");
}
