// What an on-call engineer relies on, against nine real processes: every metric the alert
// rules and the dashboard name exists; a SIGSTOPped follower shows as under-replicated on the
// leaders; a partition with two of three replicas stopped shows in the offline metric and in
// `tern cluster status` within seconds; `cluster status --exit-when-healthy` waits for recovery;
// a transaction held open past its timeout (its abort cannot reach the partition) shows in
// tern_coordinator_transactions_past_timeout, and its HWM-LSO gap on the partition's leader.
// Needs `npm run build`.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { until } from "../../libs/common/poll.js";
import { startCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";
import { distRoot } from "../../scripts/cluster/process-control.js";
import { repoRoot } from "../../scripts/k8s/repo-root.js";
import {
  metricNamesIn,
  registeredNames,
  scrape,
  scrapeText,
  sumOf,
  type Sample,
} from "./helpers/scrape-metrics.js";
import { okCli, ternCli } from "./helpers/tern-cli.js";
import { Producer } from "../../libs/client/index.js";

const ROLES = ["controller", "broker", "coordinator"] as const;
/** Failure detection in this test: leases and the lag rule at 2 s (defaults 6 s and 10 s). */
const LEASE_MS = 2_000;
const LAG_TIME_MAX_MS = 2_000;
/** "Within seconds": the bound on seeing a fault in the metrics and in cluster status. */
const DETECT_BOUND_MS = 15_000;

let cluster: ProcessCluster;
let bootstrap: string;

function rulesExprs(): string[] {
  const doc = parseYaml(
    readFileSync(join(repoRoot(), "deploy/monitoring/prometheus-rules.yaml"), "utf8"),
  ) as { spec: { groups: Array<{ rules: Array<{ expr: string }> }> } };
  return doc.spec.groups.flatMap((g) => g.rules.map((r) => r.expr));
}

function dashboardExprs(): string[] {
  const doc = JSON.parse(
    readFileSync(join(repoRoot(), "deploy/monitoring/tern-dashboard.json"), "utf8"),
  ) as { panels: Array<{ targets?: Array<{ expr: string }> }> };
  return doc.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
}

async function scrapeRole(role: (typeof ROLES)[number], ids = [0, 1, 2]): Promise<Sample[]> {
  return (await Promise.all(ids.map((id) => scrape(cluster.spec(role, id).metricsPort)))).flat();
}

beforeAll(async () => {
  cluster = await startCluster({
    dataDir: mkdtempSync(join(tmpdir(), "tern-operations-")),
    controllers: 3,
    brokers: 3,
    coordinators: 3,
    basePort: await freeBasePort(),
    env: {
      TERN_LOG_LEVEL: "warn",
      TERN_NODE_LEASE_MS: String(LEASE_MS),
      TERN_REPLICA_LAG_TIME_MAX_MS: String(LAG_TIME_MAX_MS),
    },
    healthTimeoutMs: 180_000,
  });
  bootstrap = cluster.addresses("controller").join(",");
  await until("topic ops", 60_000, async () =>
    (await ternCli(bootstrap, ["topics", "create", "ops", "-p", "3", "-r", "3"])).code === 0
      ? true
      : undefined,
  );
  await okCli(bootstrap, ["produce", "ops", "--generate", "200"]);
  await okCli(bootstrap, ["produce", "ops", "--generate", "20", "--transactional-id", "ops-txn"]);
}, 240_000);

afterAll(async () => {
  await cluster?.stop();
});

describe("monitoring", () => {
  it("cluster up --reuse (npm start) uses the cluster already running in the data dir", async () => {
    const r = spawnSync(
      process.execPath,
      [
        join(distRoot(), "scripts", "cluster.js"),
        "up",
        "--reuse",
        "--wait",
        "--data-dir",
        cluster.dataDir,
      ],
      { encoding: "utf8", timeout: 90_000 },
    );
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^using the cluster already running in /);
    expect(r.stdout.match(/ SERVING$/gm)).toHaveLength(9);
    const again = spawnSync(
      process.execPath,
      [join(distRoot(), "scripts", "cluster.js"), "up", "--data-dir", cluster.dataDir],
      { encoding: "utf8", timeout: 30_000 },
    );
    expect(again.status).toBe(1);
    expect(again.stderr).toMatch(/already running/);
  });

  it("every metric named by the alert rules and the dashboard exists on a running cluster", async () => {
    const texts = await Promise.all(
      ROLES.flatMap((r) => [0, 1, 2].map((id) => scrapeText(cluster.spec(r, id).metricsPort))),
    );
    const names = new Set(texts.flatMap((t) => [...registeredNames(t)]));
    const wanted = [
      ...new Set([...rulesExprs(), ...dashboardExprs()].flatMap(metricNamesIn)),
    ].sort();
    expect(wanted.length).toBeGreaterThan(20);
    expect(wanted.filter((n) => !names.has(n))).toEqual([]);
  });

  it("partition offsets are reported by the leaders, once per partition", async () => {
    const brokers = await scrapeRole("broker");
    const hwm = brokers.filter(
      (s) => s.name === "tern_partition_high_watermark" && s.labels.topic === "ops",
    );
    expect(hwm.map((s) => s.labels.partition).sort()).toEqual(["0", "1", "2"]);
    expect(hwm.reduce((a, s) => a + s.value, 0)).toBeGreaterThanOrEqual(222); // 200 + 20 + 2 commit markers at least
    expect(
      sumOf(await scrapeRole("coordinator"), "tern_coordinator_transactions_ended_total", {
        result: "commit",
      }),
    ).toBeGreaterThanOrEqual(1);
  });
});

describe("failures show up", () => {
  it("a transaction open past its timeout: HWM-LSO gap on the leader, then past_timeout while its abort cannot land", async () => {
    await until("topic hang", 60_000, async () =>
      (await ternCli(bootstrap, ["topics", "create", "hang", "-p", "1", "-r", "1"])).code === 0
        ? true
        : undefined,
    );
    const described = JSON.parse(
      (await okCli(bootstrap, ["--json", "topics", "describe", "hang"])).stdout,
    ) as Array<{ partitions: Array<{ leader: number; replicas: number[] }> }>;
    const owner = described[0]!.partitions[0]!.replicas[0]!;
    const producer = new Producer({
      bootstrap,
      transactionalId: "ops-hang",
      transactionTimeoutMs: 3_000,
    });
    await producer.initTransactions();
    producer.beginTransaction();
    await producer.send({ topic: "hang", partition: 0, value: "held open" });
    const gap = await until("HWM - LSO > 0 on the leader", DETECT_BOUND_MS, async () => {
      const samples = await scrape(cluster.spec("broker", owner).metricsPort);
      const g =
        sumOf(samples, "tern_partition_high_watermark", { topic: "hang" }) -
        sumOf(samples, "tern_partition_last_stable_offset", { topic: "hang" });
      return g > 0 ? g : undefined;
    });
    expect(gap).toBe(1);
    // The coordinator times the transaction out after 3 s; its ABORT marker cannot reach the
    // paused leader, so the transaction stays open (PrepareAbort) past its timeout.
    cluster.kill("broker", owner, "SIGSTOP");
    try {
      await until(
        "tern_coordinator_transactions_past_timeout > 0",
        3_000 + DETECT_BOUND_MS,
        async () =>
          sumOf(await scrapeRole("coordinator"), "tern_coordinator_transactions_past_timeout") > 0
            ? true
            : undefined,
        { intervalMs: 250 },
      );
      const states = await scrapeRole("coordinator");
      expect(
        sumOf(states, "tern_coordinator_transactions", { state: "PrepareAbort" }) +
          sumOf(states, "tern_coordinator_transactions", { state: "Ongoing" }),
      ).toBeGreaterThanOrEqual(1);
      expect(
        Math.max(
          ...states
            .filter((x) => x.name === "tern_coordinator_oldest_open_transaction_seconds")
            .map((x) => x.value),
        ),
      ).toBeGreaterThan(3);
    } finally {
      cluster.kill("broker", owner, "SIGCONT");
    }
    await until(
      "the abort completes once the leader is back",
      60_000,
      async () =>
        sumOf(await scrapeRole("coordinator"), "tern_coordinator_transactions_past_timeout") === 0
          ? true
          : undefined,
      { intervalMs: 500 },
    );
    await until("LSO reaches HWM", 30_000, async () => {
      const samples = await scrape(cluster.spec("broker", owner).metricsPort);
      return sumOf(samples, "tern_partition_high_watermark", { topic: "hang" }) ===
        sumOf(samples, "tern_partition_last_stable_offset", { topic: "hang" })
        ? true
        : undefined;
    });
    expect(
      sumOf(await scrapeRole("coordinator"), "tern_coordinator_transactions_ended_total", {
        result: "abort",
      }),
    ).toBeGreaterThanOrEqual(1);
    await producer.close({ timeoutMs: 1_000 }).catch(() => undefined);
  });

  it("a SIGSTOPped follower shows as under-replicated on the leaders, and clears after SIGCONT", async () => {
    await until("no under-replicated group", 30_000, async () =>
      sumOf(await scrapeRole("broker"), "tern_raft_under_replicated_groups") === 0
        ? true
        : undefined,
    );
    cluster.kill("broker", 2, "SIGSTOP");
    const t0 = Date.now();
    try {
      const under = await until(
        "under-replicated groups on brokers 0 and 1",
        DETECT_BOUND_MS,
        async () => {
          const n = sumOf(await scrapeRole("broker", [0, 1]), "tern_raft_under_replicated_groups");
          // Groups notice the paused follower one by one: wait for all of them, not the first.
          return n >= 3 ? n : undefined;
        },
        { intervalMs: 250 },
      );
      // Every group broker 2 is a voter of: the 3 "ops" partitions (RF 3) at least.
      expect(under).toBeGreaterThanOrEqual(3);
      process.stderr.write(
        `operations test: SIGSTOP to under-replicated in ${Date.now() - t0} ms\n`,
      );
    } finally {
      cluster.kill("broker", 2, "SIGCONT");
    }
    await until(
      "under-replication clears",
      60_000,
      async () =>
        sumOf(await scrapeRole("broker"), "tern_raft_under_replicated_groups") === 0
          ? true
          : undefined,
      { intervalMs: 500 },
    );
  });

  it("two of three replicas stopped: offline in the metric and in cluster status within seconds; --exit-when-healthy waits for the restart", async () => {
    await until(
      "cluster healthy",
      60_000,
      async () => ((await ternCli(bootstrap, ["cluster", "status"])).code === 0 ? true : undefined),
      { intervalMs: 500 },
    );
    cluster.kill("broker", 1, "SIGKILL");
    cluster.kill("broker", 2, "SIGKILL");
    const t0 = Date.now();
    await until(
      "offline partitions in the controllers' metric",
      DETECT_BOUND_MS,
      async () => {
        const n = Math.max(
          ...(await Promise.all(
            [0, 1, 2].map(async (id) =>
              sumOf(
                await scrape(cluster.spec("controller", id).metricsPort),
                "tern_controller_offline_partitions",
                { topic_role: "broker" },
              ),
            ),
          )),
        );
        return n >= 3 ? n : undefined;
      },
      { intervalMs: 250 },
    );
    const metricMs = Date.now() - t0;
    const status = await until(
      "cluster status shows them",
      DETECT_BOUND_MS,
      async () => {
        const r = await ternCli(bootstrap, ["--json", "cluster", "status"]);
        const j = JSON.parse(r.stdout) as {
          healthy: boolean;
          offlinePartitions: Array<{ topic: string; partition: number; reason: string }>;
        };
        return r.code === 1 &&
          !j.healthy &&
          j.offlinePartitions.filter((p) => p.topic === "ops").length === 3
          ? j
          : undefined;
      },
      { intervalMs: 250 },
    );
    process.stderr.write(
      `operations test: SIGKILL of 2 replicas to offline metric ${metricMs} ms, to cluster status ${Date.now() - t0} ms\n`,
    );
    expect(status.offlinePartitions.every((p) => p.reason === "no-quorum")).toBe(true);
    const human = await ternCli(bootstrap, ["cluster", "status"]);
    expect(human.code).toBe(1);
    expect(human.stdout).toMatch(/NOT healthy: .*offline partitions/);
    expect(human.stdout).toMatch(/^ops-0\s+no-quorum/m);

    const waiting = ternCli(
      bootstrap,
      [
        "cluster",
        "status",
        "--exit-when-healthy",
        "--interval-ms",
        "500",
        "--timeout-ms",
        "120000",
      ],
      { timeoutMs: 150_000 },
    );
    await cluster.restart("broker", 1);
    await cluster.restart("broker", 2);
    const done = await waiting;
    expect(done.code, done.stderr).toBe(0);
    // It waited for the restarts: one final table, the healthy one.
    expect(done.stdout.match(/^metadata version /gm)).toHaveLength(1);
    expect(done.stdout).toMatch(/, healthy\n/);
    expect(done.stdout).not.toMatch(/offline/);
    expect(done.stderr).toBe("");
  });
});
