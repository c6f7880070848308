// franz-go's own integration tests (github.com/twmb/franz-go pkg/kgo, built by
// scripts/setup/franz-go.sh from the Go module proxy) against tern's Kafka listeners on a real
// local cluster, the representative run of the whole suite (`npm run client-suite -- franz-go`
// runs all of it, TestGroupETL's balancers among them): TestTxnEtl, a transactional
// consume-transform-produce chain with group offsets committed in the transactions, members
// coming and going, in classic groups and in KIP-848 groups: read_committed sees every record
// once. Skipped without go.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hasGo, kgoTests, runKgo } from "../../scripts/client-suites/franz-go.js";
import type { ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import { sharedCluster, stopSharedCluster } from "./helpers/shared-cluster.js";

const GO = hasGo();
if (!GO) process.stderr.write("franz-go.test.ts SKIPPED: needs go (https://go.dev/dl)\n");

let cluster: ProcessCluster;
let tests: { binary: string; packageDir: string };
let logDir: string;

describe.skipIf(!GO)("franz-go's kgo integration tests through tern's Kafka listener", () => {
  beforeAll(async () => {
    tests = kgoTests();
    cluster = await sharedCluster();
    logDir = mkdtempSync(join(tmpdir(), "tern-franz-go-"));
  }, 600_000);

  afterAll(async () => {
    await stopSharedCluster();
    if (logDir) rmSync(logDir, { recursive: true, force: true });
  }, 60_000);

  it("TestTxnEtl passes, its classic and KIP-848 groups alike", async () => {
    const logFile = join(logDir, "kgo.log");
    const run = await runKgo(tests, {
      seeds: [0, 1, 2].map((i) => `127.0.0.1:${cluster.spec("broker", i).kafkaPort}`).join(","),
      run: "^TestTxnEtl$",
      records: 2_000,
      logFile,
      timeoutMs: 240_000,
    });
    const tail = (): string => readFileSync(logFile, "utf8").split("\n").slice(-60).join("\n");
    expect(Object.fromEntries(run.outcomes), tail()).toEqual({ TestTxnEtl: "PASS" });
    expect(run.problems, tail()).toEqual([]);
  }, 300_000);
});
