// Clock skew: every chaos node reads the offset in its own file (libs/common/clock-offset.ts,
// TERN_CLOCK_OFFSET_FILE) into its wall clock, re-reading it every 100 ms and acknowledging the
// value in effect in "<file>.applied". A jump rewrites the file; the acknowledgement is the proof
// the process's clock moved. The file outlives restarts, like a host's clock.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { parseClockOffset } from "../../../libs/common/clock-offset.js";
import type { ChaosCluster, NodeRef } from "../cluster/chaos-cluster.js";
import { pollUntil } from "../workloads/cluster-clients.js";

/** Bound on a process's wait to take a new offset (it re-reads every 100 ms). */
export const CLOCK_APPLY_WAIT_MS = 5_000;
/** Skews drawn by scenarios: seconds to minutes, either way. */
export const SKEW_MS_MIN = 2_000;
export const SKEW_MS_MAX = 180_000;

export function setClockOffset(cluster: ChaosCluster, node: NodeRef, offsetMs: number): void {
  const file = cluster.clockOffsetFile(node);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${Math.round(offsetMs)}\n`);
}

/** The offset the node's process says is in effect (undefined before it ever acknowledged one). */
export function appliedClockOffset(cluster: ChaosCluster, node: NodeRef): number | undefined {
  try {
    return parseClockOffset(readFileSync(`${cluster.clockOffsetFile(node)}.applied`, "utf8"));
  } catch {
    return undefined;
  }
}

/** Waits (bounded) until the node's process runs with offsetMs; false if it never did. */
export async function waitClockApplied(
  cluster: ChaosCluster,
  node: NodeRef,
  offsetMs: number,
): Promise<boolean> {
  const applied = await pollUntil(CLOCK_APPLY_WAIT_MS, 50, async () =>
    appliedClockOffset(cluster, node) === Math.round(offsetMs) ? true : undefined,
  );
  return applied === true;
}

export function formatOffset(offsetMs: number): string {
  return `${offsetMs >= 0 ? "+" : ""}${(offsetMs / 1000).toFixed(1)} s`;
}
