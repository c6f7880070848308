// Raft benchmark: 3 real processes on loopback (dist/test/integration/helpers/raft-node-process.js),
// fsync on, proposals issued inside the leader's process (POST /load to it).
//   (a) one group, 1 KiB entries, 1 and 64 proposals in flight: entries/s, MB/s, commit latency p50/p99,
//       CPU per entry of the leader alone and of all three processes (less load-dependent)
//   (b) 50 groups at once (each loaded by its own leader): total entries/s
//   (c) CPU of a process hosting 150 idle groups, over ~10 s
// JSON Lines on stdout (one figure per line, see /work/shared/CONVENTIONS.md); progress on stderr.
// Usage: node dist/test/bench/raft.js [--duration-ms 5000] [--idle-ms 10000] [--inflight-per-group 16]
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { RaftProcessCluster } from "../integration/helpers/raft-cluster.js";

interface LoadResult {
  entries: number;
  errors: number;
  elapsedMs: number;
  bytes: number;
  p50Ms: number;
  p99Ms: number;
  writes: number;
  fsyncs: number;
  /** CPU time of the leader process during the load. */
  cpuMs: number;
}

const ENTRY_BYTES = 1024;
const TIMING = { tickMs: 50, electionTicks: 30, heartbeatTicks: 3 };

function emit(
  testCase: string,
  metric: string,
  value: number,
  unit: string,
  extra: Record<string, unknown> = {},
): void {
  const rounded = Math.round(value * 100) / 100;
  // The machine's load average goes with every figure: on a shared 2-core box it dominates latency.
  const loadAvg1m = Math.round(loadavg()[0]! * 100) / 100;
  process.stdout.write(
    JSON.stringify({
      bench: "raft",
      case: testCase,
      metric,
      value: rounded,
      unit,
      load_avg_1m: loadAvg1m,
      ...extra,
    }) + "\n",
  );
}

function progress(message: string): void {
  process.stderr.write(`[bench raft] ${message}\n`);
}

interface Usage {
  cpuMs: number;
  turns: { fsyncs: number };
}

/** CPU ms and fsyncs of all processes together since `before` (or the cumulative reading). */
async function clusterUsage(c: RaftProcessCluster, before?: Usage): Promise<Usage> {
  const all = await Promise.all(c.nodes.map((n) => c.get<Usage>(n.id, "/usage")));
  const cpuMs = all.reduce((s, u) => s + u.cpuMs, 0) - (before?.cpuMs ?? 0);
  const fsyncs = all.reduce((s, u) => s + u.turns.fsyncs, 0) - (before?.turns.fsyncs ?? 0);
  return { cpuMs, turns: { fsyncs } };
}

async function loadOnLeaders(
  c: RaftProcessCluster,
  groups: string[],
  inflight: number,
  durationMs: number,
): Promise<LoadResult[]> {
  const leaders = await c.waitForLeaders(groups, 60_000);
  const byNode = new Map<number, string[]>();
  for (const g of groups) byNode.set(leaders.get(g)!, [...(byNode.get(leaders.get(g)!) ?? []), g]);
  return Promise.all(
    [...byNode.entries()].map(([id, gs]) =>
      c.post<LoadResult>(
        id,
        "/load",
        { groups: gs, inflight, entryBytes: ENTRY_BYTES, durationMs },
        durationMs + 60_000,
      ),
    ),
  );
}

async function throughputCases(
  baseDir: string,
  durationMs: number,
  inflightPerGroup: number,
): Promise<void> {
  progress("starting 3 processes with 50 groups");
  const c = await RaftProcessCluster.start({
    baseDir: join(baseDir, "load"),
    groups: 50,
    record: false,
    ...TIMING,
  });
  try {
    const all = Array.from({ length: 50 }, (_, i) => `g/${i}`);
    await c.waitForLeaders(all, 60_000);
    // Warm up the JIT and the connections.
    await loadOnLeaders(c, ["g/0"], 16, 1_000);
    for (const inflight of [1, 64]) {
      progress(`(a) one group, ${inflight} in flight, ${durationMs} ms`);
      const usageBefore = await clusterUsage(c);
      const [r] = await loadOnLeaders(c, ["g/0"], inflight, durationMs);
      const usage = await clusterUsage(c, usageBefore);
      const name = `1-group-${inflight}-inflight`;
      const settings = {
        entry_bytes: ENTRY_BYTES,
        inflight,
        fsyncs: r!.fsyncs,
        fsyncs_all_processes: usage.turns.fsyncs,
        errors: r!.errors,
      };
      emit(name, "entries_per_s", (r!.entries / r!.elapsedMs) * 1000, "1/s", settings);
      emit(name, "mb_per_s", ((r!.bytes / r!.elapsedMs) * 1000) / 1e6, "MB/s", settings);
      emit(name, "commit_latency_p50", r!.p50Ms, "ms", settings);
      emit(name, "commit_latency_p99", r!.p99Ms, "ms", settings);
      // What the leader's CPU alone would allow (entries per CPU-second): independent of other load.
      emit(name, "leader_cpu_bound_entries_per_s", r!.entries / (r!.cpuMs / 1000), "1/s", settings);
      // CPU of all three processes per 1,000 entries (they share the machine's cores).
      emit(name, "cluster_cpu_per_1k_entries", (usage.cpuMs / r!.entries) * 1000, "ms", settings);
    }
    progress(`(b) 50 groups, ${inflightPerGroup} in flight each, ${durationMs} ms`);
    const results = await loadOnLeaders(c, all, inflightPerGroup, durationMs);
    const entries = results.reduce((s, r) => s + r.entries, 0);
    const elapsedMs = Math.max(...results.map((r) => r.elapsedMs));
    const p99 = Math.max(...results.map((r) => r.p99Ms));
    const settings = {
      entry_bytes: ENTRY_BYTES,
      inflight_per_group: inflightPerGroup,
      leader_processes: results.length,
      errors: results.reduce((s, r) => s + r.errors, 0),
    };
    emit("50-groups", "entries_per_s", (entries / elapsedMs) * 1000, "1/s", settings);
    emit(
      "50-groups",
      "mb_per_s",
      (((entries * ENTRY_BYTES) / elapsedMs) * 1000) / 1e6,
      "MB/s",
      settings,
    );
    emit("50-groups", "commit_latency_p99", p99, "ms", settings);
  } finally {
    await c.stop();
  }
}

async function idleCase(baseDir: string, idleMs: number): Promise<void> {
  progress("(c) starting 3 processes with 150 idle groups");
  const c = await RaftProcessCluster.start({
    baseDir: join(baseDir, "idle"),
    groups: 150,
    record: false,
    ...TIMING,
  });
  try {
    await c.waitForLeaders(
      Array.from({ length: 150 }, (_, i) => `g/${i}`),
      90_000,
    );
    // Let elections and catch-up settle before measuring.
    await new Promise((r) => setTimeout(r, 2_000));
    progress(`(c) measuring CPU over ${idleMs} ms`);
    const usage = await Promise.all(
      c.nodes.map((n) => c.get<{ cpuPct: number }>(n.id, `/cpu?ms=${idleMs}`)),
    );
    const pcts = usage.map((u) => u.cpuPct);
    emit("150-idle-groups", "cpu_pct", Math.max(...pcts), "%", {
      of: "one core, busiest of 3 processes",
      per_process: pcts.map((p) => Math.round(p * 100) / 100),
      tick_ms: TIMING.tickMs,
    });
  } finally {
    await c.stop();
  }
}

export async function run(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      "duration-ms": { type: "string", default: "5000" },
      "idle-ms": { type: "string", default: "10000" },
      "inflight-per-group": { type: "string", default: "16" },
      only: { type: "string" },
    },
  });
  const baseDir = mkdtempSync(join(tmpdir(), "tern-bench-raft-"));
  try {
    if (values.only !== "idle")
      await throughputCases(
        baseDir,
        Number(values["duration-ms"]),
        Number(values["inflight-per-group"]),
      );
    if (values.only !== "load") await idleCase(baseDir, Number(values["idle-ms"]));
  } finally {
    rmSync(baseDir, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  run(process.argv.slice(2)).catch((err) => {
    process.stderr.write(`[bench raft] failed: ${(err as Error).stack ?? err}\n`);
    process.exit(1);
  });
}
