// npm run chaos:matrix -- --scenarios kill-group-member,kill-group-coordinator --seeds 1-5
//   [--duration S] [--report-dir DIR] [--lock FILE]
// The seed matrix: every scenario × seed as its own `npm run chaos` run (a fresh cluster each,
// one after another), each run's one-line JSON report on stdout as it finishes, a table of all
// of them on stderr at the end; exit 0 only when every run passed. --lock FILE runs each run
// under `flock FILE` (a machine shared with other CPU-heavy jobs): one run holds it at a time.
import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Command } from "commander";
import { parseArgs } from "./parse-args.js";
import { scenarioNamed } from "./scenarios/scenarios.js";

const SEEDS_MAX = 1_000;
/** A run's own watchdog ends it at duration + 15 min; this one is the backstop. */
const RUN_EXTRA_MS = 20 * 60_000;

interface Line {
  scenario: string;
  seed: number;
  pass: boolean;
  committed?: number;
  aborted?: number;
  unknown?: number;
  anomalies?: Record<string, number>;
  recovery?: Record<string, number | null>;
  report?: string;
  error?: string;
}

function parseSeeds(spec: string): number[] {
  const seeds = spec.split(",").flatMap((part) => {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
    if (!m) throw new Error(`--seeds: "${part}" is not N or N-M`);
    const lo = Number(m[1]);
    const hi = m[2] === undefined ? lo : Number(m[2]);
    if (hi < lo) throw new Error(`--seeds: ${part} is empty`);
    return Array.from({ length: hi - lo + 1 }, (_, i) => lo + i);
  });
  if (seeds.length === 0 || seeds.length > SEEDS_MAX)
    throw new Error(`--seeds: 1..${SEEDS_MAX} seeds`);
  return seeds;
}

function runOne(
  scenario: string,
  seed: number,
  durationS: number,
  reportDir: string,
  lock: string | undefined,
): Promise<Line> {
  const main = join(dirname(fileURLToPath(import.meta.url)), "main.js");
  const args = [
    main,
    "--scenario",
    scenario,
    "--seed",
    String(seed),
    "--duration",
    String(durationS),
    "--report-dir",
    reportDir,
  ];
  const [cmd, argv] = lock
    ? ["flock", [lock, process.execPath, ...args]]
    : [process.execPath, args];
  return new Promise((resolve) => {
    const child = spawn(cmd, argv, { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout!.on("data", (d: Buffer) => (out = (out + d.toString()).slice(-100_000)));
    const timer = setTimeout(() => child.kill("SIGTERM"), durationS * 1000 + RUN_EXTRA_MS);
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      const last = out.trim().split("\n").pop() ?? "";
      try {
        resolve(JSON.parse(last) as Line);
      } catch {
        resolve({ scenario, seed, pass: false, error: `no report line (exit ${code ?? signal})` });
      }
    });
  });
}

function table(lines: readonly Line[]): string {
  const rows = lines.map((l) => [
    l.scenario,
    String(l.seed),
    l.pass ? "PASS" : "FAIL",
    String(l.committed ?? "-"),
    String(l.aborted ?? "-"),
    String(l.unknown ?? "-"),
    Object.keys(l.anomalies ?? {}).length === 0 ? "none" : JSON.stringify(l.anomalies),
    String(l.recovery?.kill_to_leader_s ?? "-"),
    String(l.recovery?.kill_to_commit_s ?? "-"),
    String(l.recovery?.heal_to_lso_s ?? "-"),
    l.error ?? "",
  ]);
  const head = [
    "scenario",
    "seed",
    "result",
    "committed",
    "aborted",
    "unknown",
    "anomalies",
    "kill->leader s",
    "kill->commit s",
    "heal->LSO s",
    "error",
  ];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  return [head, ...rows]
    .map((r) =>
      r
        .map((c, i) => c.padEnd(widths[i]!))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

async function main(): Promise<number> {
  const program = new Command()
    .name("chaos-matrix")
    .requiredOption("--scenarios <a,b>", "scenario names (see npm run chaos -- --list)")
    .option("--seeds <spec>", "seeds: N, N-M, or a comma list of those", "1-5")
    .option("--duration <s>", "seconds of workload under faults per run", "45")
    .option("--report-dir <dir>", "where the full JSON reports go", "chaos-reports")
    .option("--lock <file>", "run each run under flock FILE");
  // Errors become one line from main's handler (exit 2); help goes to stdout (exit 0).
  if (!parseArgs(program, process.argv)) return 0;
  const opts = program.opts<{
    scenarios: string;
    seeds: string;
    duration: string;
    reportDir: string;
    lock?: string;
  }>();
  const scenarios = opts.scenarios
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  for (const s of scenarios) scenarioNamed(s);
  const seeds = parseSeeds(opts.seeds);
  const durationS = Number(opts.duration);
  if (!Number.isFinite(durationS) || durationS < 5)
    throw new Error(`--duration must be at least 5 seconds, got ${opts.duration}`);
  const lines: Line[] = [];
  for (const scenario of scenarios) {
    for (const seed of seeds) {
      process.stderr.write(`[matrix] ${scenario} seed ${seed}\n`);
      const line = await runOne(scenario, seed, durationS, opts.reportDir, opts.lock);
      lines.push(line);
      process.stdout.write(`${JSON.stringify(line)}\n`);
    }
  }
  process.stderr.write(`${table(lines)}\n`);
  const failed = lines.filter((l) => !l.pass);
  process.stderr.write(
    `[matrix] ${lines.length - failed.length} of ${lines.length} runs passed${failed.length > 0 ? `; failing: ${failed.map((l) => `${l.scenario} seed ${l.seed}`).join(", ")}` : ""}\n`,
  );
  return failed.length === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (e) => {
    process.stderr.write(`chaos-matrix: ${(e as Error).message}\n`);
    process.exit(2);
  },
);
