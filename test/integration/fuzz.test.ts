// The hostile-client fuzz test (docs/security.md, "Hostile clients"), short: a cluster of one
// controller, broker and coordinator; random and mutated Kafka frames (every API and version
// served) and gRPC messages (every method) at the broker and coordinator for FUZZ_SECONDS; then
// every process must be up and serve (scripts/fuzz/fuzz-run.ts). The suite runs one fixed seed
// so CI stays reproducible (TERN_FUZZ_SEED picks another); `npm run fuzz -- --seconds N` explores
// new seeds for longer, and a seed that fails there becomes a regression case here. Build first.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";
import { startCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import { FUZZ_CLUSTER_ENV, FUZZ_CLUSTER_SHAPE, fuzzCluster } from "../../scripts/fuzz/fuzz-run.js";

const FUZZ_SECONDS = 20;
const seed = process.env.TERN_FUZZ_SEED ? Number(process.env.TERN_FUZZ_SEED) : 1;

let cluster: ProcessCluster;
let dataDir: string;
let failed = false;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "tern-fuzz-test-"));
  cluster = await startCluster({
    dataDir,
    ...FUZZ_CLUSTER_SHAPE,
    basePort: await freeBasePort(FUZZ_CLUSTER_SHAPE),
    env: FUZZ_CLUSTER_ENV,
    healthTimeoutMs: 150_000,
  });
}, 200_000);

afterAll(async () => {
  await cluster?.stop({ termTimeoutMs: 5_000 });
  // A failed run keeps its logs.
  if (dataDir && !failed) rmSync(dataDir, { recursive: true, force: true });
});

it(`survives ${FUZZ_SECONDS} s of random and mutated Kafka frames and gRPC messages (seed ${seed})`, async () => {
  const report = await fuzzCluster(cluster, {
    seconds: FUZZ_SECONDS,
    seed,
    log: (line) => process.stdout.write(`${line}\n`),
  });
  failed = report.problems.length > 0;
  expect(report.kafkaFrames).toBeGreaterThan(0);
  expect(report.grpcCalls).toBeGreaterThan(0);
  expect(report.problems, `seed ${seed}; logs in ${dataDir}/logs`).toEqual([]);
}, 240_000);
