// npm run chaos -- --scenario NAME --seed N --duration S [--report-dir DIR] [--keep-data] [--tls]
// npm run chaos -- --list
// Starts its own cluster (3+3+3 processes, temp data dir, free base port), runs one scenario,
// always stops the cluster, prints a summary on stderr and the one-line JSON report as the
// last stdout line; exit 0 only when the run passed. Bounded: a watchdog ends it.
import { rmSync } from "node:fs";
import { Command } from "commander";
import { parseArgs } from "./parse-args.js";
import { startChaosCluster, type ChaosCluster } from "./cluster/chaos-cluster.js";
import { failedLine, oneLine, summary } from "./report.js";
import { planRun, runScenario } from "./run-scenario.js";
import { SCENARIOS, scenarioNamed } from "./scenarios/scenarios.js";

const WATCHDOG_EXTRA_MS = 15 * 60_000;
const DURATION_S_MAX = 24 * 3600;

function log(line: string): void {
  process.stderr.write(`[chaos] ${line}\n`);
}

async function main(): Promise<number> {
  const program = new Command()
    .name("chaos")
    .option("--scenario <name>", "scenario to run (see --list)")
    .option("--seed <n>", "seed of the workload and fault schedule", "1")
    .option("--duration <s>", "seconds of workload under faults", "60")
    .option(
      "--seeds <k>",
      "run seeds N..N+k-1 one after another on the same cluster (one JSON line each)",
      "1",
    )
    .option("--report-dir <dir>", "where the full JSON report goes", "chaos-reports")
    .option("--keep-data", "keep the cluster's data dir (logs) after the run")
    .option(
      "--log-level <level>",
      "TERN_LOG_LEVEL of every cluster process (logs under <data dir>/logs)",
      "warn",
    )
    .option(
      "--tls",
      "TLS on every listener and mutual TLS between the processes (docs/security.md)",
    )
    .option("--print-schedule", "print the seed's fault schedule and exit (no cluster)")
    .option("--list", "list the scenarios");
  // Errors become one line from main's handler (exit 2); help goes to stdout (exit 0).
  if (!parseArgs(program, process.argv)) return 0;
  const opts = program.opts<{
    scenario?: string;
    seed: string;
    seeds: string;
    duration: string;
    reportDir: string;
    keepData?: boolean;
    logLevel: string;
    printSchedule?: boolean;
    list?: boolean;
    tls?: boolean;
  }>();
  if (opts.list) {
    for (const s of SCENARIOS) process.stdout.write(`${s.name}\t${s.description}\n`);
    return 0;
  }
  if (!opts.scenario) throw new Error("--scenario is required (see --list)");
  scenarioNamed(opts.scenario);
  const seed = Number(opts.seed);
  const durationS = Number(opts.duration);
  const seeds = Number(opts.seeds);
  if (!Number.isSafeInteger(seeds) || seeds < 1 || seeds > 10_000)
    throw new Error(`--seeds must be 1..10000, got ${opts.seeds}`);
  if (!Number.isSafeInteger(seed) || seed < 0)
    throw new Error(`--seed must be a non-negative integer, got ${opts.seed}`);
  if (!Number.isFinite(durationS) || durationS < 5 || durationS > DURATION_S_MAX)
    throw new Error(`--duration must be 5..${DURATION_S_MAX} seconds, got ${opts.duration}`);
  if (opts.printSchedule) {
    process.stdout.write(`${JSON.stringify(planRun(opts.scenario, seed, durationS * 1000))}\n`);
    return 0;
  }
  const watchdog = setTimeout(
    () => {
      log(`watchdog: run exceeded ${durationS} s + ${WATCHDOG_EXTRA_MS / 60_000} min; stopping`);
      void stopCluster().finally(() => {
        process.stdout.write(`${failedLine(opts.scenario!, seed, "watchdog timeout")}\n`);
        process.exit(1);
      });
    },
    seeds * (durationS * 1000 + WATCHDOG_EXTRA_MS),
  );
  watchdog.unref();
  let cluster: ChaosCluster | undefined;
  const stopCluster = async (): Promise<void> => {
    const c = cluster;
    cluster = undefined;
    if (c) await c.stop().catch((e) => log(`stopping the cluster: ${(e as Error).message}`));
    if (c && !opts.keepData) rmSync(c.dataDir, { recursive: true, force: true });
  };
  for (const signal of ["SIGINT", "SIGTERM"] as const)
    process.once(signal, () => void stopCluster().finally(() => process.exit(1)));
  try {
    log(`starting a 3+3+3 cluster${opts.tls ? " with TLS" : ""}`);
    cluster = await startChaosCluster({ logLevel: opts.logLevel, tls: opts.tls === true });
    log(`cluster up in ${cluster.dataDir}`);
    let pass = true;
    for (let s = seed; s < seed + seeds; s++) {
      const report = await runScenario(cluster, {
        scenario: opts.scenario,
        seed: s,
        durationMs: durationS * 1000,
        reportDir: opts.reportDir,
        log,
      });
      pass &&= report.pass;
      process.stderr.write(`${summary(report)}\n`);
      process.stdout.write(`${oneLine(report)}\n`);
    }
    if (!pass) opts.keepData = true; // keep the logs of a failing run
    await stopCluster();
    return pass ? 0 : 1;
  } catch (e) {
    log(`run failed: ${(e as Error).stack ?? String(e)}`);
    if (cluster) log(`cluster data and logs kept in ${cluster.dataDir}`);
    opts.keepData = true;
    await stopCluster();
    process.stdout.write(`${failedLine(opts.scenario, seed, (e as Error).message)}\n`);
    return 1;
  } finally {
    clearTimeout(watchdog);
  }
}

main().then(
  (code) => process.exit(code),
  (e) => {
    process.stderr.write(`chaos: ${(e as Error).message}\n`);
    process.exit(2);
  },
);
