// `npm run bench -- startup [--runs N] [--topics T] [--partitions P]`: how long a new cluster
// and a new topic wait for their first leaders. For each of N runs (default 3): starts a local
// cluster (3 controllers, 3 brokers, 3 coordinators) on a fresh data directory and times it to
// every process SERVING (start_s); then creates T topics (default 3) of P partitions (default 6,
// RF 3) one after the other, each timed from CreateTopics until the metadata view shows a
// leader for every partition (topic_led_s); then stops the cluster. JSON Lines on stdout (one
// line per run and metric, then the medians), progress on stderr. Build first.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { until } from "../../libs/common/poll.js";
import { freeBasePort } from "../cluster/free-base-port.js";
import { median } from "./_median.js";

const RUNS_MAX = 20;
const TOPICS_MAX = 20;
const PARTITIONS_MAX = 64;
const HEALTH_TIMEOUT_MS = 180_000;
const LEADERS_TIMEOUT_MS = 60_000;
const POLL_MS = 20;

function line(fields: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify({ bench: "startup", ...fields })}\n`);
}

const seconds = (ms: number): number => Math.round(ms) / 1000;

export async function run(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      runs: { type: "string" },
      topics: { type: "string" },
      partitions: { type: "string" },
    },
    strict: true,
  });
  const runs = Math.min(RUNS_MAX, Math.max(1, Number(values.runs ?? 3)));
  const topics = Math.min(TOPICS_MAX, Math.max(1, Number(values.topics ?? 3)));
  const partitions = Math.min(PARTITIONS_MAX, Math.max(1, Number(values.partitions ?? 6)));
  const { startCluster } = await import("../cluster/process-cluster.js");
  const { Admin } = await import("../../libs/client/index.js");
  const starts: number[] = [];
  const led: number[] = [];
  for (let r = 0; r < runs; r++) {
    const dataDir = mkdtempSync(join(tmpdir(), "tern-bench-startup-"));
    const t0 = performance.now();
    const cluster = await startCluster({
      dataDir,
      basePort: await freeBasePort(),
      env: { TERN_LOG_LEVEL: "warn" },
      healthTimeoutMs: HEALTH_TIMEOUT_MS,
    });
    const admin = new Admin({ bootstrap: cluster.addresses("controller").join(",") });
    try {
      const startMs = performance.now() - t0;
      starts.push(startMs);
      line({ case: "3-3-3", run: r + 1, metric: "start_s", value: seconds(startMs), unit: "s" });
      for (let t = 0; t < topics; t++) {
        const name = `bench-startup-${r}-${t}`;
        const t1 = performance.now();
        const [created] = await admin.createTopics([{ name, partitions, replicationFactor: 3 }]);
        if (created?.error) throw new Error(`create ${name}: ${created.error.message}`);
        await until(
          `leaders of ${name}`,
          LEADERS_TIMEOUT_MS,
          async () => {
            const ps = (await admin.metadataView()).topics.find((x) => x.name === name)?.partitions;
            return ps?.length === partitions && ps.every((p) => p.leader >= 0) ? true : undefined;
          },
          { intervalMs: POLL_MS },
        );
        const ledMs = performance.now() - t1;
        led.push(ledMs);
        line({
          case: `topic-${partitions}p-rf3`,
          run: r + 1,
          topic: t + 1,
          metric: "topic_led_s",
          value: seconds(ledMs),
          unit: "s",
        });
      }
    } finally {
      await admin.close();
      await cluster.stop({ termTimeoutMs: 5_000 });
      rmSync(dataDir, { recursive: true, force: true });
    }
    process.stderr.write(`startup: run ${r + 1}/${runs} done\n`);
  }
  line({ case: "3-3-3", metric: "start_s_median", value: seconds(median(starts)), unit: "s" });
  line({
    case: `topic-${partitions}p-rf3`,
    metric: "topic_led_s_median",
    value: seconds(median(led)),
    unit: "s",
  });
  return 0;
}
