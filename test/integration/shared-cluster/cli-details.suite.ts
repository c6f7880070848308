// The CLI details users expect, against real processes: produce with headers, keys and a
// timestamp; consume from --offset N, -N from the end, a timestamp, several topics, headers
// and timestamps in --json and in a --format string; produce --generate prints throughput and
// latency percentiles. Needs `npm run build`.
import { beforeAll, expect, it } from "vitest";
import { until } from "../../../libs/common/poll.js";
import type { ProcessCluster } from "../../../scripts/cluster/process-cluster.js";
import { sharedCluster } from "../helpers/shared-cluster.js";
import { okCli, ternCli } from "../helpers/tern-cli.js";

let cluster: ProcessCluster;
let bootstrap: string;
const lines = (s: string): string[] =>
  s
    .trim()
    .split("\n")
    .filter((l) => l.length > 0);

beforeAll(async () => {
  cluster = await sharedCluster();
  bootstrap = cluster.addresses("controller").join(",");
  for (const t of ["d1", "d2"])
    await until(`topic ${t}`, 60_000, async () =>
      (await ternCli(bootstrap, ["topics", "create", t, "-p", "1", "-r", "3"])).code === 0
        ? true
        : undefined,
    );
  await okCli(
    bootstrap,
    ["produce", "d1", "-k", ":", "-H", "source=test", "-H", "n=1", "--timestamp", "1000"],
    { stdin: ["a:0", "b:1", "c:2"].join("\n") + "\n" },
  );
  await okCli(bootstrap, ["produce", "d1", "-k", ":", "--timestamp", "5000"], {
    stdin: ["d:3", "e:4"].join("\n") + "\n",
  });
  await okCli(bootstrap, ["produce", "d2"], { stdin: "other\n" });
}, 240_000);

it("headers, keys and timestamps are stored and shown in --json and --format", async () => {
  const json = lines(
    (await okCli(bootstrap, ["--json", "consume", "d1", "--from-beginning"])).stdout,
  ).map((l) => JSON.parse(l));
  expect(json.map((r) => r.value)).toEqual(["0", "1", "2", "3", "4"]);
  expect(json[0]).toEqual({
    topic: "d1",
    partition: 0,
    offset: "0",
    key: "a",
    value: "0",
    headers: { source: "test", n: "1" },
    timestampMs: 1000,
  });
  expect(json[3]).toMatchObject({ key: "d", headers: {}, timestampMs: 5000 });
  const formatted = lines(
    (
      await okCli(bootstrap, [
        "consume",
        "d1",
        "--from-beginning",
        "-F",
        "%t/%p@%o key=%k value=%s ts=%T h=%h",
      ])
    ).stdout,
  );
  expect(formatted[0]).toBe("d1/0@0 key=a value=0 ts=1000 h=source=test,n=1");
  expect((await ternCli(bootstrap, ["consume", "d1", "-F", "%q"])).code).toBe(2);
});

it("consume starts at --offset N, -N from the end, a timestamp; several topics at once", async () => {
  expect(lines((await okCli(bootstrap, ["consume", "d1", "--offset", "3"])).stdout)).toEqual([
    "3",
    "4",
  ]);
  expect(lines((await okCli(bootstrap, ["consume", "d1", "--offset", "-2"])).stdout)).toEqual([
    "3",
    "4",
  ]);
  expect(lines((await okCli(bootstrap, ["consume", "d1", "--offset", "-99"])).stdout)).toEqual([
    "0",
    "1",
    "2",
    "3",
    "4",
  ]);
  expect(
    lines((await okCli(bootstrap, ["consume", "d1", "--from-timestamp", "2000"])).stdout),
  ).toEqual(["3", "4"]);
  expect(
    lines((await okCli(bootstrap, ["consume", "d1", "--from-timestamp", "9000"])).stdout),
  ).toEqual([]);
  const both = lines(
    (await okCli(bootstrap, ["consume", "d1", "d2", "--from-beginning", "-F", "%t:%s"])).stdout,
  ).sort();
  expect(both).toEqual(["d1:0", "d1:1", "d1:2", "d1:3", "d1:4", "d2:other"]);
  expect((await ternCli(bootstrap, ["consume", "d1", "--offset", "soon"])).code).toBe(2);
});

it("produce --generate ends with records/s and latency percentiles (also in --json)", async () => {
  const text = await okCli(bootstrap, ["produce", "d2", "--generate", "500", "--size", "50"]);
  expect(text.stdout).toMatch(
    /^500 records sent, [\d.]+ records\/sec \([\d.]+ MB\/sec\), [\d.]+ ms avg latency, [\d.]+ ms max latency, [\d.]+ ms 50th, [\d.]+ ms 95th, [\d.]+ ms 99th, [\d.]+ ms 99\.9th\.$/m,
  );
  const json = JSON.parse(
    (await okCli(bootstrap, ["--json", "produce", "d2", "--generate", "100"])).stdout,
  ) as { produced: number; perf: { records: number; latencyP99Ms: number } };
  expect(json.produced).toBe(100);
  expect(json.perf.records).toBe(100);
  expect(json.perf.latencyP99Ms).toBeGreaterThan(0);
});
