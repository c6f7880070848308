// CI: a short run of every scenario against one shared real cluster (node dist/...; build
// first), failing on any anomaly, plus the replay property (same seed -> same schedule).
// CHAOS_DURATION_S (default 8) and CHAOS_SEED (default 1) lengthen or vary the runs; longer and
// randomized runs: docs/chaos.md.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startChaosCluster, type ChaosCluster } from "./cluster/chaos-cluster.js";
import { summary } from "./report.js";
import { planRun, runScenario } from "./run-scenario.js";
import { SCENARIOS } from "./scenarios/scenarios.js";

const DURATION_S = Number(process.env.CHAOS_DURATION_S ?? 8);
const SEED = Number(process.env.CHAOS_SEED ?? 1);
const RUN_TIMEOUT_MS = DURATION_S * 1000 + 240_000;

describe("fault schedules replay from the seed", () => {
  it("gives the same schedule for the same seed and different ones across seeds", () => {
    for (const s of SCENARIOS) {
      expect(JSON.stringify(planRun(s.name, 7, 60_000))).toBe(
        JSON.stringify(planRun(s.name, 7, 60_000)),
      );
    }
    const random = new Set(
      [1, 2, 3, 4, 5, 6].map((seed) => JSON.stringify(planRun("random", seed, 60_000))),
    );
    expect(random.size).toBeGreaterThan(3);
  });
});

describe("chaos scenarios (short)", () => {
  let cluster: ChaosCluster;
  let reportDir: string;

  beforeAll(async () => {
    reportDir = mkdtempSync(join(tmpdir(), "tern-chaos-reports-"));
    cluster = await startChaosCluster({ healthTimeoutMs: 180_000 });
  }, 240_000);

  afterAll(async () => {
    await cluster?.stop();
    if (cluster) rmSync(cluster.dataDir, { recursive: true, force: true });
  }, 60_000);

  for (const scenario of SCENARIOS) {
    it(
      `${scenario.name} seed ${SEED}: no anomaly`,
      async () => {
        const report = await runScenario(cluster, {
          scenario: scenario.name,
          seed: SEED,
          durationMs: DURATION_S * 1000,
          reportDir,
          log: (l) => process.stderr.write(`[chaos] ${l}\n`),
        });
        process.stderr.write(`${summary(report)}\n`);
        expect(report.counts.committed, "the workload committed nothing").toBeGreaterThan(0);
        // A scenario whose failpoint nothing reached tested nothing: that is a failure too.
        expect(
          report.events.filter((e) => e.note?.includes("did not fire")).map((e) => e.note),
          "faults that never happened",
        ).toEqual([]);
        expect(report.anomalies, `anomalies (report ${report.reportPath})`).toEqual({});
        expect(report.pass).toBe(true);
      },
      RUN_TIMEOUT_MS,
    );
  }
});
