// Topic administration against real processes: an incremental config change reaches every
// replica (retention.bytes lowered: each broker removes segments of its own copy), a
// partition-count increase opens new partitions that take records, create --if-not-exists.
// Needs `npm run build`.
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, expect, it } from "vitest";
import { until } from "../../../libs/common/poll.js";
import type { ProcessCluster } from "../../../scripts/cluster/process-cluster.js";
import { sharedCluster } from "../helpers/shared-cluster.js";
import { scrape, sumOf } from "../helpers/scrape-metrics.js";
import { okCli, ternCli } from "../helpers/tern-cli.js";

let cluster: ProcessCluster;
let bootstrap: string;

beforeAll(async () => {
  cluster = await sharedCluster();
  bootstrap = cluster.addresses("controller").join(",");
  await until("topic ret", 60_000, async () =>
    (
      await ternCli(bootstrap, [
        "topics",
        "create",
        "ret",
        "-p",
        "1",
        "-r",
        "3",
        "-c",
        "segment.bytes=4096",
      ])
    ).code === 0
      ? true
      : undefined,
  );
}, 240_000);

const removedOn = async (id: number): Promise<number> =>
  sumOf(await scrape(cluster.spec("broker", id).metricsPort), "tern_segment_removed_total");
const segmentsOn = (id: number): number =>
  readdirSync(join(cluster.spec("broker", id).dataDir, "partitions", "ret-0")).filter((f) =>
    f.endsWith(".log"),
  ).length;

it("alter-config lowers retention.bytes and every replica drops old segments of its own copy", async () => {
  await okCli(bootstrap, ["produce", "ret", "--generate", "3000", "--size", "100"], {
    timeoutMs: 120_000,
  });
  const before = await Promise.all([0, 1, 2].map(removedOn));
  const segmentsBefore = [0, 1, 2].map(segmentsOn);
  expect(Math.min(...segmentsBefore)).toBeGreaterThan(20);

  const bad = await ternCli(bootstrap, [
    "topics",
    "alter-config",
    "ret",
    "--set",
    "retention.bytes=lots",
  ]);
  expect(bad.code).toBe(1);
  expect(bad.stderr).toMatch(/INVALID_CONFIG/);
  const altered = JSON.parse(
    (
      await okCli(bootstrap, [
        "--json",
        "topics",
        "alter-config",
        "ret",
        "--set",
        "retention.bytes=16384",
      ])
    ).stdout,
  ) as { config: Record<string, string> };
  expect(altered.config).toEqual({ "segment.bytes": "4096", "retention.bytes": "16384" });

  // Retention travels in the entries the leader writes: a few more records carry the new value.
  await until(
    "every replica removed segments",
    60_000,
    async () => {
      await okCli(bootstrap, ["produce", "ret", "--generate", "10", "--size", "100"]);
      const now = await Promise.all([0, 1, 2].map(removedOn));
      return now.every((n, i) => n > before[i]!) ? now : undefined;
    },
    { intervalMs: 500 },
  );
  const segmentsAfter = [0, 1, 2].map(segmentsOn);
  process.stderr.write(
    `topic-admin test: segments per replica ${JSON.stringify(segmentsBefore)} -> ${JSON.stringify(segmentsAfter)}\n`,
  );
  for (const n of segmentsAfter) expect(n).toBeLessThan(12);
  const described = JSON.parse(
    (await okCli(bootstrap, ["--json", "topics", "describe", "ret"])).stdout,
  ) as Array<{ config: Record<string, string> }>;
  expect(described[0]!.config["retention.bytes"]).toBe("16384");
  const deleted = JSON.parse(
    (
      await okCli(bootstrap, [
        "--json",
        "topics",
        "alter-config",
        "ret",
        "--delete",
        "retention.bytes",
      ])
    ).stdout,
  ) as { config: Record<string, string> };
  expect(deleted.config).toEqual({ "segment.bytes": "4096" });
}, 300_000);

it("add-partitions opens the new partitions on their replicas, and they take records", async () => {
  const out = JSON.parse(
    (await okCli(bootstrap, ["--json", "topics", "add-partitions", "ret", "--total", "3"])).stdout,
  ) as { partitions: number };
  expect(out.partitions).toBe(3);
  const fewer = await ternCli(bootstrap, ["topics", "add-partitions", "ret", "--total", "2"]);
  expect(fewer.code).toBe(1);
  expect(fewer.stderr).toMatch(/INVALID_PARTITIONS/);
  await until(
    "partition 2 takes a record",
    60_000,
    async () =>
      (
        await ternCli(bootstrap, ["produce", "ret", "-p", "2"], {
          stdin: "into the new partition\n",
        })
      ).code === 0
        ? true
        : undefined,
    { intervalMs: 500 },
  );
  const r = await okCli(bootstrap, ["consume", "ret", "-p", "2", "--from-beginning"]);
  expect(r.stdout).toContain("into the new partition");
}, 120_000);

it("create --if-not-exists succeeds on an existing topic and leaves it as it is", async () => {
  expect((await ternCli(bootstrap, ["topics", "create", "ret"])).code).toBe(1);
  const r = await okCli(bootstrap, [
    "--json",
    "topics",
    "create",
    "ret",
    "-p",
    "7",
    "--if-not-exists",
  ]);
  expect(JSON.parse(r.stdout)).toEqual({ name: "ret", created: false, exists: true });
  const described = JSON.parse(
    (await okCli(bootstrap, ["--json", "topics", "describe", "ret"])).stdout,
  ) as Array<{ partitions: unknown[] }>;
  expect(described[0]!.partitions).toHaveLength(3);
});
