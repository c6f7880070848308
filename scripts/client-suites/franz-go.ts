// franz-go's pkg/kgo tests against a tern cluster: the test binary scripts/setup/franz-go.sh
// builds, run in its package directory with KGO_SEEDS naming the brokers' Kafka listeners (RF 3,
// as the cluster has three brokers). Each top-level test's outcome is parsed from `-test.v`
// output; the whole output goes to a log file for the failures' details. A run passes when every
// test passes or skips, except those in EXPECTED_FAILURES, each refused for a reason the
// conformance table in docs/kafka-protocol.md gives; an expected failure that passes fails the
// run too, so the table cannot go stale.
import { spawn, spawnSync } from "node:child_process";
import { createWriteStream, existsSync } from "node:fs";
import { dirname, join } from "node:path";

/** scripts/setup/franz-go.sh, found upwards from here (this file runs from dist/ and from source). */
function setupScript(): string {
  for (let dir = import.meta.dirname; dir !== dirname(dir); dir = dirname(dir)) {
    const script = join(dir, "scripts", "setup", "franz-go.sh");
    if (existsSync(script)) return script;
  }
  throw new Error(`scripts/setup/franz-go.sh not found above ${import.meta.dirname}`);
}

/** Tests tern fails on purpose (the conformance table's "refused" rows), by name: why. */
export const EXPECTED_FAILURES: Readonly<Record<string, string>> = {
  TestIssueFetchLargerThanBrokerMaxReadBytes:
    "a 5 MiB batch with max.message.bytes=10 MiB: tern caps every batch at 4 MiB (BROKER_LIMITS.batchBytesMax)",
  Test848RegexBrokerResolves:
    "expects the broker-side regex (KIP-848) to assign __consumer_offsets: tern's regex never matches internal topics (their partitions hold the group service's Raft state, not records a Kafka client can fetch)",
};

export type Outcome = "PASS" | "FAIL" | "SKIP";

export interface KgoRun {
  /** Every top-level test that ran, with its outcome. */
  readonly outcomes: ReadonlyMap<string, Outcome>;
  /** The test binary's exit code (1 when any test failed), or the signal that ended it. */
  readonly exit: number | string;
  /** What makes the run fail: unexpected failures, expected failures that passed, a crash. */
  readonly problems: readonly string[];
}

/** Whether `go` runs here (the setup needs it to build the tests). */
export function hasGo(): boolean {
  return spawnSync("go", ["version"], { encoding: "utf8" }).status === 0;
}

/** Builds the kgo test binary when missing; its path and the package directory to run it in. */
export function kgoTests(timeoutMs = 600_000): { binary: string; packageDir: string } {
  const r = spawnSync("bash", [setupScript()], { encoding: "utf8", timeout: timeoutMs });
  if (r.status !== 0)
    throw new Error(`scripts/setup/franz-go.sh failed (${r.status ?? r.signal}): ${r.stderr}`);
  const [binary, packageDir] = r.stdout.trim().split("\n").slice(-2);
  return { binary: binary!, packageDir: packageDir! };
}

export interface KgoOptions {
  /** The brokers' Kafka listeners, host:port,... */
  readonly seeds: string;
  /** A `-test.run` regular expression (default: every test). */
  readonly run?: string;
  /** Records the produce/consume tests send (KGO_TEST_RECORDS; franz-go's default is 500,000). */
  readonly records: number;
  /** Where the whole output goes. */
  readonly logFile: string;
  readonly timeoutMs: number;
}

const RESULT_LINE = /^--- (PASS|FAIL|SKIP): (\S+)/;

/** Runs the kgo tests against the cluster; resolves when the binary exits or the bound kills it. */
export function runKgo(
  tests: { binary: string; packageDir: string },
  o: KgoOptions,
): Promise<KgoRun> {
  return new Promise((resolveRun, reject) => {
    const args = [`-test.timeout=${Math.ceil(o.timeoutMs / 1000)}s`, "-test.v"];
    if (o.run !== undefined) args.push(`-test.run=${o.run}`);
    const child = spawn(tests.binary, args, {
      cwd: tests.packageDir,
      env: {
        ...process.env,
        KGO_SEEDS: o.seeds,
        KGO_TEST_RF: "3",
        KGO_TEST_RECORDS: String(o.records),
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const log = createWriteStream(o.logFile);
    const outcomes = new Map<string, Outcome>();
    let partial = "";
    const scan = (chunk: Buffer): void => {
      log.write(chunk);
      const lines = (partial + chunk.toString("utf8")).split("\n");
      partial = lines.pop()!;
      for (const line of lines) {
        const m = RESULT_LINE.exec(line); // top level only: subtests are indented
        if (m) outcomes.set(m[2]!, m[1] as Outcome);
      }
    };
    child.stdout.on("data", scan);
    child.stderr.on("data", scan);
    // The binary's own -test.timeout panics first; this bound is for a hung process.
    const killer = setTimeout(() => child.kill("SIGKILL"), o.timeoutMs + 30_000);
    child.once("error", (e) => {
      clearTimeout(killer);
      reject(e);
    });
    child.once("exit", (code, signal) => {
      clearTimeout(killer);
      log.end();
      const exit = code ?? signal ?? "unknown";
      resolveRun({ outcomes, exit, problems: problemsOf(outcomes, exit) });
    });
  });
}

function problemsOf(outcomes: ReadonlyMap<string, Outcome>, exit: number | string): string[] {
  const problems: string[] = [];
  for (const [name, outcome] of outcomes) {
    const expected = EXPECTED_FAILURES[name] !== undefined;
    if (outcome === "FAIL" && !expected) problems.push(`${name} failed`);
    if (outcome === "PASS" && expected)
      problems.push(
        `${name} passed but is listed as refused: update EXPECTED_FAILURES and the table`,
      );
  }
  const failed = [...outcomes.values()].some((o) => o === "FAIL");
  if (exit !== 0 && !failed)
    problems.push(`the test binary ended with ${exit} before reporting a failure`);
  return problems;
}
