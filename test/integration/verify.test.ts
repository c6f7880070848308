// `tern verify` as users run it (a separate `node dist/cli/main.js verify` process) against a
// real local cluster: over gRPC and over the Kafka protocol (kafkajs on the brokers' Kafka
// listeners) it reports no anomaly and exits 0 while the test SIGKILLs the coordinator leading
// one of its transactional ids and a broker leading one of its partitions, and restarts them;
// with a planted fault (the brokers' read_committed reads serve aborted batches, the
// `broker.read-committed-serves-aborted` fault of services/broker/transaction-index.ts, armed
// on the running cluster by deleting its once-file) it reports aborted reads and exits 3.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Admin } from "../../libs/client/index.js";
import { partitionFor } from "../../libs/common/hash.js";
import { until } from "../../libs/common/poll.js";
import { TRANSACTION_STATE_TOPIC } from "../../libs/metadata/types.js";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";
import { startCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import { SERVE_ABORTED_FAULT } from "../../services/broker/transaction-index.js";
import { ternCli, type TernRun } from "./helpers/tern-cli.js";

const DURATION_S = 12;
const CLI_TIMEOUT_MS = 150_000;

let cluster: ProcessCluster;
let dataDir: string;
let onceDir: string;
let admin: Admin;
let controllers: string;
let kafkaBrokers: string;

/** The run id of the verify run whose topics carry `prefix` (known once it created them). */
async function runIdOf(prefix: string): Promise<string> {
  return until(`the topics of ${prefix}`, 60_000, async () => {
    const topics = await admin.listTopics().catch(() => [] as string[]);
    const input = topics.find((t) => t.startsWith(`${prefix}-`) && t.endsWith("-in-0"));
    return input?.slice(0, -"-in-0".length);
  });
}

async function coordinatorOf(transactionalId: string): Promise<number> {
  return until(`the coordinator of ${transactionalId}`, 60_000, async () => {
    const m = await admin.metadataView();
    const t = m.topics.find((x) => x.name === TRANSACTION_STATE_TOPIC);
    const leader =
      t?.partitions.find((p) => p.partition === partitionFor(transactionalId, t.partitions.length))
        ?.leader ?? -1;
    return leader >= 0 ? leader : undefined;
  });
}

async function brokerLeading(topic: string, partition: number): Promise<number> {
  return until(`the leader of ${topic}/${partition}`, 60_000, async () => {
    const m = await admin.metadataView();
    const leader =
      m.topics.find((t) => t.name === topic)?.partitions.find((p) => p.partition === partition)
        ?.leader ?? -1;
    return leader >= 0 ? leader : undefined;
  });
}

function parseReport(run: TernRun): Record<string, any> {
  try {
    return JSON.parse(run.stdout) as Record<string, any>;
  } catch {
    throw new Error(
      `verify printed no JSON report (exit ${run.code}): ${run.stdout}\n${run.stderr}`,
    );
  }
}

/** Runs verify while SIGKILLing a coordinator leading one of its ids and a broker leading one of its partitions. */
async function verifyUnderKills(prefix: string, protocolArgs: string[]): Promise<TernRun> {
  const bootstrap = protocolArgs.includes("kafka") ? kafkaBrokers : controllers;
  const run = ternCli(
    bootstrap,
    [
      "--json",
      "verify",
      ...protocolArgs,
      "--duration",
      String(DURATION_S),
      "--rate",
      "15",
      "--topic-prefix",
      prefix,
      "--seed",
      "7",
    ],
    { timeoutMs: CLI_TIMEOUT_MS },
  );
  let finished = false;
  void run.finally(() => (finished = true)).catch(() => undefined);
  const runId = await runIdOf(prefix);
  const coordinator = await coordinatorOf(`${runId}-producer-0`);
  expect(cluster.kill("coordinator", coordinator, "SIGKILL")).toBe(true);
  expect(await cluster.waitForExit("coordinator", coordinator, 10_000)).toBe(true);
  cluster.start("coordinator", coordinator);
  const broker = await brokerLeading(`${runId}-in-0`, 0);
  expect(cluster.kill("broker", broker, "SIGKILL")).toBe(true);
  expect(await cluster.waitForExit("broker", broker, 10_000)).toBe(true);
  cluster.start("broker", broker);
  // Both kills struck while the workload ran (it runs DURATION_S after creating its topics).
  expect(finished).toBe(false);
  const result = await run;
  await cluster.waitForHealth({ timeoutMs: 60_000 });
  return result;
}

describe("tern verify against a local cluster", () => {
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "tern-verify-"));
    onceDir = join(dataDir, "faults");
    mkdirSync(onceDir);
    // The planted fault is named in every process's environment but disarmed by its file.
    writeFileSync(join(onceDir, SERVE_ABORTED_FAULT), "");
    cluster = await startCluster({
      dataDir,
      basePort: await freeBasePort(),
      env: {
        TERN_LOG_LEVEL: "warn",
        TERN_FAILPOINTS: SERVE_ABORTED_FAULT,
        TERN_FAILPOINTS_ONCE_DIR: onceDir,
      },
      healthTimeoutMs: 180_000,
    });
    controllers = cluster.addresses("controller").join(",");
    kafkaBrokers = [0, 1, 2]
      .map((i) => `127.0.0.1:${cluster.spec("broker", i).kafkaPort}`)
      .join(",");
    admin = new Admin({ bootstrap: controllers });
  }, 240_000);

  afterAll(async () => {
    await admin?.close();
    await cluster?.stop({ termTimeoutMs: 5_000 });
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);

  it("over gRPC: no anomaly and exit 0 with a coordinator leader and a broker SIGKILLed", async () => {
    const run = await verifyUnderKills("vg", []);
    const report = parseReport(run);
    expect(report.anomalies, run.stdout).toEqual({});
    expect(run.code, run.stderr).toBe(0);
    expect(report.pass).toBe(true);
    expect(report.protocol).toBe("grpc");
    expect(report.counts.committed).toBeGreaterThan(20);
    expect(report.counts.aborted).toBeGreaterThan(0);
    expect(report.counts.finalRecords).toBeGreaterThan(0);
    // Its topics are gone (no --keep).
    const left = (await admin.listTopics()).filter((t) => t.startsWith("vg-"));
    expect(left).toEqual([]);
  }, 200_000);

  it("over the Kafka protocol (kafkajs): no anomaly and exit 0 with a coordinator leader and a broker SIGKILLed", async () => {
    const run = await verifyUnderKills("vk", ["--protocol", "kafka"]);
    const report = parseReport(run);
    expect(report.anomalies, run.stdout).toEqual({});
    expect(run.code, run.stderr).toBe(0);
    expect(report.protocol).toBe("kafka");
    expect(report.counts.committed).toBeGreaterThan(20);
    expect(report.counts.aborted).toBeGreaterThan(0);
  }, 200_000);

  it("a planted fault (read_committed serves aborted batches): aborted reads reported, exit 3", async () => {
    rmSync(join(onceDir, SERVE_ABORTED_FAULT));
    try {
      const run = await ternCli(
        controllers,
        ["verify", "--duration", "6", "--rate", "20", "--topic-prefix", "vf", "--seed", "3"],
        { timeoutMs: CLI_TIMEOUT_MS },
      );
      expect(run.stdout).toMatch(/^tern verify: FAIL/);
      expect(run.stdout).toMatch(/aborted-read \d+/);
      expect(run.code, run.stderr).toBe(3);
    } finally {
      writeFileSync(join(onceDir, SERVE_ABORTED_FAULT), "");
    }
  }, 200_000);
});
