// Every CLI command against one real cluster (build first: `npx tsc -p tsconfig.json`; the
// tool runs as `node dist/cli/main.js`, as users run it). Checks output (tables and --json)
// and the documented exit codes: 0 ok, 1 cluster error, 2 usage.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { Producer } from "../../../libs/client/index.js";
import { distRoot } from "../../../scripts/cluster/process-control.js";
import type { ProcessCluster } from "../../../scripts/cluster/process-cluster.js";
import { sharedCluster } from "../helpers/shared-cluster.js";
import { until } from "../../../libs/common/poll.js";

let cluster: ProcessCluster;
let bootstrap: string;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function cli(
  args: string[],
  options: {
    stdin?: string;
    timeoutMs?: number;
    bootstrap?: boolean;
    onStderr?: (text: string) => void;
  } = {},
): Promise<Run> {
  const full = options.bootstrap === false ? args : ["--bootstrap", bootstrap, ...args];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(distRoot(), "cli", "main.js"), ...full], {
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
      options.onStderr?.(stderr);
    });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`tern ${full.join(" ")} timed out; stderr: ${stderr}`));
    }, options.timeoutMs ?? 60_000);
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(options.stdin ?? "");
  });
}

async function ok(args: string[], options?: Parameters<typeof cli>[1]): Promise<Run> {
  const r = await cli(args, options);
  if (r.code !== 0) throw new Error(`tern ${args.join(" ")} exited ${r.code}: ${r.stderr}`);
  return r;
}

beforeAll(async () => {
  cluster = await sharedCluster();
  bootstrap = cluster.addresses("controller")[1]!;
}, 180_000);

describe("tern CLI against a real cluster", () => {
  it("usage errors exit 2, cluster errors exit 1", async () => {
    expect((await cli(["no-such-command"])).code).toBe(2);
    expect((await cli(["topics", "create"])).code).toBe(2);
    expect((await cli(["produce", "t", "--acks", "7"])).code).toBe(2);
    const unknown = await cli(["topics", "describe", "does-not-exist"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stdout).toContain("UNKNOWN_TOPIC_OR_PARTITION");
    const unreachable = await cli(["--bootstrap", "127.0.0.1:1", "topics", "list"], {
      bootstrap: false,
    });
    expect(unreachable.code).toBe(1);
    expect((await cli(["--help"], { bootstrap: false })).code).toBe(0);
  }, 120_000);

  it("topics create, list, describe, delete", async () => {
    expect(
      (await ok(["topics", "create", "cli-a", "--partitions", "2", "--replication-factor", "3"]))
        .stdout,
    ).toContain("created topic cli-a");
    const dup = await cli(["--json", "topics", "create", "cli-a"]);
    expect(dup.code).toBe(1);
    expect(JSON.parse(dup.stdout)).toMatchObject({ name: "cli-a", error: "TOPIC_ALREADY_EXISTS" });
    await ok(["topics", "create", "cli-gone"]);
    expect(JSON.parse((await ok(["--json", "topics", "list"])).stdout)).toEqual(
      expect.arrayContaining(["cli-a", "cli-gone"]),
    );
    expect((await ok(["topics", "list", "--internal"])).stdout).toContain("__consumer_offsets");
    const described = JSON.parse((await ok(["--json", "topics", "describe", "cli-a"])).stdout);
    expect(described[0].partitions).toHaveLength(2);
    expect(described[0].partitions[0].replicas).toHaveLength(3);
    expect((await ok(["topics", "describe", "cli-a"])).stdout).toMatch(
      /TOPIC\s+PARTITION\s+LEADER/,
    );
    expect((await ok(["topics", "delete", "cli-gone"])).stdout).toContain("deleted topic cli-gone");
    expect(JSON.parse((await ok(["--json", "topics", "list"])).stdout)).not.toContain("cli-gone");
  }, 120_000);

  it("produce from stdin and --generate; consume from beginning, read_committed, max-messages, follow", async () => {
    await ok(["topics", "create", "cli-data", "--partitions", "1"]);
    const lines = Array.from({ length: 50 }, (_, i) => `key${i}:value-${i}`).join("\n");
    const produced = JSON.parse(
      (await ok(["--json", "produce", "cli-data", "--key-separator", ":"], { stdin: `${lines}\n` }))
        .stdout,
    );
    expect(produced).toEqual({ topic: "cli-data", produced: 50, failed: 0 });
    expect(
      (await ok(["produce", "cli-data", "--generate", "30", "--size", "20"])).stdout,
    ).toContain("produced 30 records");
    const all = await ok([
      "consume",
      "cli-data",
      "--from-beginning",
      "--isolation",
      "read_committed",
    ]);
    const values = all.stdout.trim().split("\n");
    expect(values).toHaveLength(80);
    expect(values[0]).toBe("value-0");
    const some = await ok([
      "--json",
      "consume",
      "cli-data",
      "--from-beginning",
      "--max-messages",
      "5",
    ]);
    const json = some.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(json.map((r) => r.offset)).toEqual(["0", "1", "2", "3", "4"]);
    expect(json[0]).toMatchObject({ key: "key0", value: "value-0", partition: 0 });
    // Default start is the end: nothing without --from-beginning.
    expect((await ok(["consume", "cli-data"])).stdout).toBe("");
    // --follow waits for records produced after it started.
    let started = false;
    const follow = cli(["consume", "cli-data", "--follow", "--max-messages", "2"], {
      onStderr: (text) => (started ||= text.includes("consuming cli-data from")),
    });
    await until("consume --follow to start", 60_000, () => started || undefined, {
      intervalMs: 50,
    }).catch(() => undefined);
    expect(started).toBe(true);
    const p = new Producer({ bootstrap });
    await p.send({ topic: "cli-data", value: "late-1" });
    await p.send({ topic: "cli-data", value: "late-2" });
    await p.close();
    const followed = await follow;
    expect(followed.code).toBe(0);
    expect(followed.stdout.trim().split("\n")).toEqual(["late-1", "late-2"]);
    // Transactional produce is visible under read_committed.
    await ok(["produce", "cli-data", "--transactional-id", "cli-producer"], { stdin: "in-txn\n" });
    expect(
      (await ok(["consume", "cli-data", "--from-beginning", "--isolation", "read_committed"]))
        .stdout,
    ).toContain("in-txn");
  }, 180_000);

  it("txn list, describe, describe-producers, find-hanging, abort (by id and by partition); cluster status", async () => {
    await ok(["topics", "create", "cli-txn", "--partitions", "2"]);
    const open = new Producer({ bootstrap, transactionalId: "cli-open" });
    await open.initTransactions();
    open.beginTransaction();
    await open.send({ topic: "cli-txn", partition: 0, value: "pending" });
    const listed = JSON.parse((await ok(["--json", "txn", "list", "--state", "ONGOING"])).stdout);
    expect(listed.transactions.map((t: any) => t.transactionalId)).toContain("cli-open");
    expect((await ok(["txn", "list"])).stdout).toMatch(/cli-open\s+\d+\s+ONGOING/);
    const described = JSON.parse((await ok(["--json", "txn", "describe", "cli-open"])).stdout);
    expect(described[0]).toMatchObject({
      transactionalId: "cli-open",
      state: "ONGOING",
      partitions: [{ topic: "cli-txn", partition: 0 }],
    });
    const producers = JSON.parse(
      (await ok(["--json", "txn", "describe-producers", "--topic", "cli-txn", "--partition", "0"]))
        .stdout,
    );
    expect(producers[0].producers[0]).toMatchObject({
      producerId: String(open.identity.producerId),
      currentTxnStartOffset: "0",
    });
    // Open longer than the bound, but its coordinator tracks it on that partition: not hanging.
    const hanging = JSON.parse(
      (await ok(["--json", "txn", "find-hanging", "--max-transaction-timeout-ms", "1"])).stdout,
    );
    expect(hanging.some((h: any) => h.topic === "cli-txn" && h.partition === 0)).toBe(false);
    const aborted = JSON.parse(
      (await ok(["--json", "txn", "abort", "--transactional-id", "cli-open"])).stdout,
    );
    expect(["PREPARE_ABORT", "COMPLETE_ABORT"]).toContain(aborted.state);
    await expect(open.commitTransaction()).rejects.toMatchObject({ fatal: true });
    await open.close();

    // A partition-level ABORT marker for a transaction its coordinator still tracks is refused
    // unless --force (test/integration/cli-hanging.test.ts covers truly hanging ones).
    const hang = new Producer({ bootstrap, transactionalId: "cli-hang" });
    await hang.initTransactions();
    hang.beginTransaction();
    await hang.send({ topic: "cli-txn", partition: 1, value: "hanging" });
    const found = JSON.parse(
      (
        await ok([
          "--json",
          "txn",
          "find-hanging",
          "--topic",
          "cli-txn",
          "--max-transaction-timeout-ms",
          "1",
        ])
      ).stdout,
    );
    expect(found).toEqual([]);
    const before = JSON.parse(
      (await ok(["--json", "txn", "describe-producers", "--topic", "cli-txn", "--partition", "1"]))
        .stdout,
    );
    const h = before[0].producers.find(
      (p: any) => p.producerId === String(hang.identity.producerId),
    );
    const byProducer = [
      "txn",
      "abort",
      "--topic",
      "cli-txn",
      "--partition",
      "1",
      "--producer-id",
      h.producerId,
      "--producer-epoch",
      String(h.producerEpoch),
      "--coordinator-epoch",
      String(Math.max(0, h.coordinatorEpoch)),
    ];
    const refused = await cli(byProducer);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("cli-hang is ONGOING");
    await ok([...byProducer, "--force"]);
    const after = JSON.parse(
      (await ok(["--json", "txn", "describe-producers", "--topic", "cli-txn"])).stdout,
    );
    expect(after.find((p: any) => p.partition === 1).producers[0].currentTxnStartOffset).toBe("-1");
    await hang.close({ timeoutMs: 1_000 });
    expect((await cli(["txn", "abort"])).code).toBe(2);

    const status = JSON.parse(
      (await ok(["--json", "cluster", "status", "--groups", "all"])).stdout,
    );
    expect(status.healthy).toBe(true);
    expect(status.controllers).toHaveLength(3);
    expect(status.nodes.filter((n: any) => n.role === "broker")).toHaveLength(3);
    expect(status.nodes.filter((n: any) => n.role === "coordinator")).toHaveLength(3);
    expect(status.groups.some((g: any) => g.topic === "__transaction_state")).toBe(true);
    expect(status.groups.find((g: any) => g.topic === "cli-txn").leader).toBeGreaterThanOrEqual(0);
    const table = (await ok(["cluster", "status"])).stdout;
    expect(table).toMatch(/controller\s+0/);
    expect(table).toMatch(/cli-txn-0/);
  }, 180_000);
});
