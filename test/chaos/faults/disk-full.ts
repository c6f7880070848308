// A broker's disk fills up while it runs. Each chaos broker keeps its data directory on a small
// tmpfs of its own (BrokerDisks, mounted when the cluster starts, where mount is permitted), so
// filling one disk touches nothing else. The fault writes a filler file that leaves less free
// space than the broker's reserve (--disk-reserve-bytes): the broker must refuse produce with
// the retriable KAFKA_STORAGE_ERROR (its tern_broker_disk_below_reserve gauge shows 1), keep
// replicating and serving fetches, lose and corrupt nothing, and accept writes again once the
// filler is gone (docs/storage.md, "Disk full").
import { execFileSync } from "node:child_process";
import { closeSync, mkdirSync, openSync, rmSync, statfsSync, writeSync } from "node:fs";
import { join } from "node:path";

/** Each broker's tmpfs: room for a chaos run's logs (all scenarios), far below the machine's memory. */
export const BROKER_DISK_BYTES = 1024 * 1024 * 1024;
/** The reserve chaos brokers run with (the default, 256 MiB, is a quarter of their disk). */
export const BROKER_DISK_RESERVE_BYTES = 64 * 1024 * 1024;
const FILLER_NAME = "chaos-disk-filler";
const FILL_CHUNK_BYTES = 4 * 1024 * 1024;
const METRICS_TIMEOUT_MS = 2_000;

/** The tmpfs mounts of the brokers' data directories (none when mount is not permitted). */
export class BrokerDisks {
  private readonly mounted = new Set<string>();
  /** Why the disks could not be mounted, when they could not. */
  refusal: string | undefined;

  /** Mounts a tmpfs at each directory; on the first refusal unmounts what it mounted and records why. */
  mountAll(dirs: readonly string[]): void {
    for (const dir of dirs) {
      mkdirSync(dir, { recursive: true });
      try {
        execFileSync("mount", ["-t", "tmpfs", "-o", `size=${BROKER_DISK_BYTES}`, "tmpfs", dir], {
          stdio: "pipe",
        });
        this.mounted.add(dir);
      } catch (e) {
        this.refusal = `mount of a tmpfs refused (${String(e).split("\n")[0]}): disk-full faults need root`;
        this.unmountAll();
        return;
      }
    }
  }

  has(dir: string): boolean {
    return this.mounted.has(dir);
  }

  unmountAll(): void {
    for (const dir of this.mounted) {
      try {
        execFileSync("umount", ["-l", dir], { stdio: "pipe" });
      } catch {
        // already gone: nothing to undo
      }
    }
    this.mounted.clear();
  }
}

export function freeBytes(dir: string): number {
  const s = statfsSync(dir);
  return Number(s.bavail) * Number(s.bsize);
}

/** Writes a filler so that about leaveFreeBytes stay free in dir's filesystem; returns its path and size. */
export function fillDisk(dir: string, leaveFreeBytes: number): { path: string; bytes: number } {
  const path = join(dir, FILLER_NAME);
  const bytes = Math.max(0, freeBytes(dir) - leaveFreeBytes);
  const chunk = Buffer.alloc(FILL_CHUNK_BYTES);
  const fd = openSync(path, "w");
  try {
    for (let written = 0; written < bytes;)
      written += writeSync(fd, chunk, 0, Math.min(chunk.length, bytes - written));
  } finally {
    closeSync(fd);
  }
  return { path, bytes };
}

export function removeFiller(dir: string): void {
  rmSync(join(dir, FILLER_NAME), { force: true });
}

/** The broker's tern_broker_disk_below_reserve gauge (undefined when the scrape fails). */
export async function belowReserve(metricsAddress: string): Promise<boolean | undefined> {
  try {
    const res = await fetch(`http://${metricsAddress}/metrics`, {
      signal: AbortSignal.timeout(METRICS_TIMEOUT_MS),
    });
    const text = await res.text();
    const m = /^tern_broker_disk_below_reserve(?:\{[^}]*\})? (\S+)$/m.exec(text);
    return m ? Number(m[1]) === 1 : undefined;
  } catch {
    return undefined;
  }
}
