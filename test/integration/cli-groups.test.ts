// The consumer-group CLI against a real cluster (build first: `npx tsc -p tsconfig.json`):
// `tern consume --group` joins the group and commits what it printed (at the end, and on
// SIGTERM), `tern group list/describe` show the group with per-partition lag, reset-offsets is
// a dry run unless --execute and is refused while the group has members, delete-offsets and
// delete remove offsets and the group.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Admin, Producer } from "../../libs/client/index.js";
import { until } from "../../libs/common/poll.js";
import { distRoot } from "../../scripts/cluster/process-control.js";
import { startCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";

let cluster: ProcessCluster;
let dataDir: string;
let bootstrap: string;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function spawnCli(args: string[]): {
  child: ChildProcess;
  done: Promise<Run>;
  stdout: () => string;
  stderr: () => string;
} {
  const child = spawn(
    process.execPath,
    [join(distRoot(), "cli", "main.js"), "--bootstrap", bootstrap, ...args],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
  const done = new Promise<Run>((resolve) =>
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    }),
  );
  return { child, done, stdout: () => stdout, stderr: () => stderr };
}

const cli = (args: string[]): Promise<Run> => spawnCli(args).done;
async function json(args: string[]): Promise<any> {
  const r = await cli(["--json", ...args]);
  if (r.code !== 0) throw new Error(`tern ${args.join(" ")} exited ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

async function produce(count: number): Promise<void> {
  const producer = new Producer({ bootstrap, lingerMs: 2 });
  await Promise.all(
    Array.from({ length: count }, (_, i) =>
      producer.send({ topic: "cg", partition: i % 3, value: `v${i}` }),
    ),
  );
  await producer.close();
}

/** The Prometheus text of the group's coordinator broker. */
async function coordinatorMetrics(): Promise<string> {
  const { coordinator } = await json(["group", "describe", "G"]);
  const spec = cluster.specs.find((x) => x.role === "broker" && x.id === coordinator)!;
  const res = await fetch(`http://127.0.0.1:${spec.metricsPort}/metrics`, {
    signal: AbortSignal.timeout(10_000),
  });
  return res.text();
}

const committed = async (): Promise<string[]> =>
  (await json(["group", "describe", "G"])).partitions.map((p: any) => String(p.committed));

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "tern-cli-groups-"));
  cluster = await startCluster({
    dataDir,
    basePort: await freeBasePort(),
    env: {
      TERN_LOG_LEVEL: "warn",
      TERN_GROUP_SESSION_TIMEOUT_MS: "3000",
      TERN_GROUP_HEARTBEAT_INTERVAL_MS: "300",
    },
    healthTimeoutMs: 120_000,
  });
  bootstrap = cluster.addresses("controller").join(",");
  const admin = new Admin({ bootstrap });
  for (const r of await admin.createTopics([{ name: "cg", partitions: 3, replicationFactor: 3 }]))
    if (r.error) throw r.error;
  await admin.waitForLeaders(["cg"]);
  await admin.close();
  await produce(30);
}, 240_000);

afterAll(async () => {
  await cluster?.stop({ termTimeoutMs: 5_000 });
  rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

describe("tern group and tern consume --group", () => {
  it("consumes as a group member, lists and describes with lag, resets, deletes", async () => {
    const first = await cli(["consume", "cg", "--group", "G", "--from-beginning"]);
    expect(first.code).toBe(0);
    expect(first.stdout.trim().split("\n").length).toBe(30);
    expect(first.stderr).toMatch(/assigned cg partitions 0,1,2/);

    expect((await json(["group", "list"])).groups).toContainEqual({
      groupId: "G",
      type: "consumer",
      state: "EMPTY",
      members: 0,
    });
    let d = await json(["group", "describe", "G"]);
    expect(d).toMatchObject({
      groupId: "G",
      type: "consumer",
      state: "EMPTY",
      totalLag: "0",
      members: [],
    });
    expect(d.partitions.map((p: any) => [p.partition, p.committed, p.logEndOffset, p.lag])).toEqual(
      [
        [0, "10", "10", "0"],
        [1, "10", "10", "0"],
        [2, "10", "10", "0"],
      ],
    );
    const table = await cli(["group", "describe", "G"]);
    expect(table.stdout).toMatch(/TOPIC\s+PARTITION\s+CURRENT-OFFSET\s+LOG-END-OFFSET\s+LAG/);

    await produce(6);
    expect((await json(["group", "describe", "G"])).totalLag).toBe("6");
    const metrics = await coordinatorMetrics();
    expect(metrics).toMatch(/^tern_group_lag\{group="G"[^}]*\} 6$/m);
    expect(metrics).toMatch(
      /^tern_group_partition_lag\{group="G",topic="cg",partition="1"[^}]*\} 2$/m,
    );
    expect(metrics).toMatch(/^tern_group_members\{group="G"[^}]*\} 0$/m);
    expect(
      Number(/^tern_group_rebalances_total\{[^}]*\} (\d+)$/m.exec(metrics)?.[1] ?? 0),
    ).toBeGreaterThan(0);

    // A dry run changes nothing; --execute applies.
    const dry = await json(["group", "reset-offsets", "G", "--topic", "cg", "--to-earliest"]);
    expect(dry.executed).toBe(false);
    expect(dry.partitions.map((p: any) => p.target)).toEqual(["0", "0", "0"]);
    expect(await committed()).toEqual(["10", "10", "10"]);
    await json(["group", "reset-offsets", "G", "--topic", "cg", "--to-earliest", "--execute"]);
    expect(await committed()).toEqual(["0", "0", "0"]);
    await json(["group", "reset-offsets", "G", "--topic", "cg:1", "--shift-by", "5", "--execute"]);
    expect(await committed()).toEqual(["0", "5", "0"]);
    await json(["group", "reset-offsets", "G", "--topic", "cg", "--to-offset", "999", "--execute"]);
    expect(await committed()).toEqual(["12", "12", "12"]); // clamped to the log end
    await json(["group", "reset-offsets", "G", "--topic", "cg", "--to-datetime", "0", "--execute"]);
    expect(await committed()).toEqual(["0", "0", "0"]);
    expect((await cli(["group", "reset-offsets", "G", "--topic", "cg"])).code).toBe(2); // no target

    // A member that follows the topic: resets are refused while it is in the group; SIGTERM
    // makes it commit what it printed and leave.
    const follower = spawnCli(["consume", "cg", "--group", "G", "-f"]);
    await until("the follower to print everything", 60_000, () =>
      /assigned cg/.test(follower.stderr()) ? true : undefined,
    );
    d = await until("the follower to show in describe", 60_000, async () => {
      const x = await json(["group", "describe", "G"]);
      return x.members.length === 1 && x.members[0].assignment.length === 3 ? x : undefined;
    });
    expect(d.members[0]).toMatchObject({ clientId: "tern-cli", clientHost: "127.0.0.1" });
    expect(d.partitions.every((p: any) => p.memberId === d.members[0].memberId)).toBe(true);
    expect(await coordinatorMetrics()).toMatch(/^tern_group_members\{group="G"[^}]*\} 1$/m);
    const refused = await cli([
      "group",
      "reset-offsets",
      "G",
      "--topic",
      "cg",
      "--to-latest",
      "--execute",
    ]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/NON_EMPTY_GROUP/);
    expect((await cli(["group", "delete", "G"])).stderr).toMatch(/NON_EMPTY_GROUP/);
    await until("the follower to print 36 records", 60_000, () =>
      follower.stdout().trim().split("\n").length >= 36 ? true : undefined,
    );
    follower.child.kill("SIGTERM");
    const out = await follower.done;
    expect(out.code).toBe(0);
    expect(out.stdout.trim().split("\n").length).toBe(36);
    expect(await committed()).toEqual(["12", "12", "12"]);

    const del = await json(["group", "delete-offsets", "G", "--topic", "cg:0"]);
    expect(del).toEqual([{ topic: "cg", partition: 0, error: "NONE" }]);
    expect(await committed()).toEqual(["12", "12"]);
    expect((await cli(["group", "delete", "G"])).code).toBe(0);
    const gone = await cli(["group", "describe", "G"]);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(/GROUP_ID_NOT_FOUND/);
  }, 240_000);
});
