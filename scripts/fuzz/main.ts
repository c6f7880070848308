// `npm run fuzz -- [--seconds N] [--seed S]`: starts a cluster of one controller, one broker and
// one coordinator in a temporary directory, fuzzes the broker's and coordinator's Kafka
// listeners and gRPC services for N seconds (default 300) from seed S (default: random; printed
// first, so a failing run can be repeated), then checks every process is still up and serves
// (fuzz-run.ts). Exits 0 when they are, 1 with what is wrong otherwise (the data directory and
// its logs are kept then), 2 on bad usage.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freeBasePort } from "../cluster/free-base-port.js";
import { startCluster } from "../cluster/process-cluster.js";
import { FUZZ_CLUSTER_ENV, FUZZ_CLUSTER_SHAPE, fuzzCluster } from "./fuzz-run.js";

const EXIT_USAGE = 2;

function parse(argv: string[]): { seconds: number; seed: number } | string {
  let seconds = 300;
  let seed = Math.floor(Math.random() * 2 ** 32);
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    const n = Number(value);
    if (!Number.isSafeInteger(n) || n < 0) return `${flag} needs a whole number, got ${value}`;
    if (flag === "--seconds" && n > 0) seconds = n;
    else if (flag === "--seed" && n < 2 ** 32) seed = n;
    else return `unknown or out-of-range option ${flag}`;
  }
  return { seconds, seed };
}

async function main(argv: string[]): Promise<number> {
  const options = parse(argv);
  if (typeof options === "string") {
    process.stderr.write(`fuzz: ${options}\nusage: npm run fuzz -- [--seconds N] [--seed S]\n`);
    return EXIT_USAGE;
  }
  const dataDir = mkdtempSync(join(tmpdir(), "tern-fuzz-"));
  const cluster = await startCluster({
    dataDir,
    ...FUZZ_CLUSTER_SHAPE,
    basePort: await freeBasePort(FUZZ_CLUSTER_SHAPE),
    env: FUZZ_CLUSTER_ENV,
    healthTimeoutMs: 120_000,
  });
  let ok = false;
  try {
    const report = await fuzzCluster(cluster, {
      ...options,
      log: (line) => process.stdout.write(`${line}\n`),
    });
    ok = report.problems.length === 0;
    process.stdout.write(
      ok
        ? `fuzz seed ${report.seed}: every process is up and serves\n`
        : `fuzz seed ${report.seed} FAILED:\n${report.problems.map((p) => `  ${p}`).join("\n")}\nlogs: ${join(dataDir, "logs")}\n`,
    );
  } finally {
    await cluster.stop({ termTimeoutMs: 5_000 });
    if (ok) rmSync(dataDir, { recursive: true, force: true });
  }
  return ok ? 0 : 1;
}

process.exitCode = await main(process.argv.slice(2));
