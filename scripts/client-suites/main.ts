// `npm run client-suite -- franz-go [--run REGEX] [--records N] [--timeout-s S]`: starts a local
// cluster (3 controllers, 3 brokers, 3 coordinators) in a temporary directory, runs franz-go's
// pkg/kgo tests against the brokers' Kafka listeners (franz-go.ts; every test by default, about
// 15 minutes here), and prints one line per top-level test ({"suite","test","outcome"}) and a
// last summary line. Exits 0 when every test passed or skipped apart from the expected
// failures the conformance table explains (docs/kafka-protocol.md), 1 otherwise (the cluster's
// directory and the suite's log are kept then), 2 on bad usage.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { freeBasePort } from "../cluster/free-base-port.js";
import { startCluster } from "../cluster/process-cluster.js";
import { EXPECTED_FAILURES, hasGo, kgoTests, runKgo } from "./franz-go.js";

const EXIT_USAGE = 2;
const USAGE =
  "usage: npm run client-suite -- franz-go [--run REGEX] [--records N] [--timeout-s S]\n";

async function main(argv: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv.slice(1),
      options: {
        run: { type: "string" },
        records: { type: "string" },
        "timeout-s": { type: "string" },
      },
      strict: true,
    }));
  } catch (e) {
    process.stderr.write(`client-suite: ${(e as Error).message}\n${USAGE}`);
    return EXIT_USAGE;
  }
  const records = Number(values.records ?? 5_000);
  const timeoutS = Number(values["timeout-s"] ?? 1_800);
  if (argv[0] !== "franz-go" || !(records > 0) || !(timeoutS > 0)) {
    process.stderr.write(USAGE);
    return EXIT_USAGE;
  }
  if (!hasGo()) {
    process.stderr.write("client-suite: go not found (https://go.dev/dl)\n");
    return 1;
  }
  const tests = kgoTests();
  const dataDir = mkdtempSync(join(tmpdir(), "tern-client-suite-"));
  const cluster = await startCluster({
    dataDir,
    basePort: await freeBasePort(),
    env: { TERN_LOG_LEVEL: "warn" },
    healthTimeoutMs: 180_000,
  });
  const logFile = join(dataDir, "franz-go.log");
  let ok = false;
  try {
    const seeds = [0, 1, 2].map((i) => `127.0.0.1:${cluster.spec("broker", i).kafkaPort}`);
    process.stderr.write(
      `client-suite: franz-go kgo tests against ${seeds.join(",")}, log ${logFile}\n`,
    );
    const run = await runKgo(tests, {
      seeds: seeds.join(","),
      ...(values.run === undefined ? {} : { run: values.run }),
      records,
      logFile,
      timeoutMs: timeoutS * 1000,
    });
    const count = { PASS: 0, FAIL: 0, SKIP: 0 };
    for (const [test, outcome] of [...run.outcomes].sort()) {
      count[outcome] += 1;
      const reason = outcome === "FAIL" ? EXPECTED_FAILURES[test] : undefined;
      process.stdout.write(
        JSON.stringify({
          suite: "franz-go",
          test,
          outcome,
          ...(reason ? { expected: reason } : {}),
        }) + "\n",
      );
    }
    process.stdout.write(
      JSON.stringify({
        suite: "franz-go",
        passed: count.PASS,
        failed: count.FAIL,
        skipped: count.SKIP,
        problems: run.problems,
        log: logFile,
      }) + "\n",
    );
    ok = run.problems.length === 0;
    return ok ? 0 : 1;
  } finally {
    await cluster.stop({ termTimeoutMs: 5_000 });
    if (ok) rmSync(dataDir, { recursive: true, force: true });
    else process.stderr.write(`client-suite: kept ${dataDir}\n`);
  }
}

process.exitCode = await main(process.argv.slice(2));
