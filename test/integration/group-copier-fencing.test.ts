// The zombie copier (KIP-447 with KIP-848 groups), real processes (build first: `npx tsc -p
// tsconfig.json`): three exactly-once copiers subscribed as one group (copier.js --subscribe)
// share 6 input partitions. One of them is SIGSTOPped in the middle of a transaction, just
// before it sends its offsets, and stays stopped past the 3 s session timeout: the coordinator
// fences it and its partitions move to the others. Resumed, its TxnOffsetCommit is refused
// (UNKNOWN_MEMBER_ID), its transaction aborts, and it rejoins. At the end a read_committed
// check finds every input record exactly once in the output and the group's offsets at the end.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Admin } from "../../libs/client/index.js";
import { until } from "../../libs/common/poll.js";
import { distRoot } from "../../scripts/cluster/process-control.js";
import { startCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";
import { seedCopierTopics } from "./helpers/copier-input.js";
import { verifyExactlyOnce } from "../../scripts/demo/verify.js";

const SESSION_TIMEOUT_MS = 3_000;
const RECORDS = 3_000;
const PARTITIONS = 6;

let cluster: ProcessCluster;
let dataDir: string;
let bootstrap: string;
const children = new Set<ChildProcess>();

interface Copier {
  readonly child: ChildProcess;
  stderr(): string;
  readonly exited: Promise<number | string | null>;
}

function startCopier(id: string, extra: string[] = []): Copier {
  const child = spawn(
    process.execPath,
    [
      join(distRoot(), "scripts", "demo", "copier.js"),
      "--bootstrap",
      bootstrap,
      "--input",
      "in",
      "--output",
      "out",
      "--group",
      "copiers",
      "--transactional-id",
      id,
      "--subscribe",
      "--max-poll-records",
      "50",
      "--exit-when-idle-ms",
      "8000",
      ...extra,
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  children.add(child);
  let err = "";
  child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  child.stdout!.resume();
  const exited = new Promise<number | string | null>((r) =>
    child.once("exit", (code, signal) => {
      children.delete(child);
      r(code ?? signal);
    }),
  );
  return { child, stderr: () => err, exited };
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "tern-group-copier-"));
  cluster = await startCluster({
    dataDir,
    basePort: await freeBasePort(),
    healthTimeoutMs: 120_000,
    env: {
      TERN_LOG_LEVEL: "warn",
      TERN_GROUP_SESSION_TIMEOUT_MS: String(SESSION_TIMEOUT_MS),
      TERN_GROUP_HEARTBEAT_INTERVAL_MS: "300",
    },
  });
  bootstrap = cluster.addresses("controller").join(",");
  await seedCopierTopics(bootstrap, PARTITIONS, RECORDS);
}, 240_000);

afterAll(async () => {
  for (const c of children) c.kill("SIGKILL");
  await cluster?.stop({ termTimeoutMs: 5_000 });
  rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

describe("a zombie copier in a subscribed copier group", () => {
  it("is fenced after its session timeout: its offsets and transaction are refused, the output holds every input once", async () => {
    const a = startCopier("copier-a");
    const c = startCopier("copier-c");
    const zombie = startCopier("copier-z", ["--stall-before-offsets-after", "2"]);
    await until(
      "the zombie to reach its stall",
      120_000,
      () => (zombie.stderr().includes("stalling") ? true : undefined),
      { intervalMs: 5 },
    );
    zombie.child.kill("SIGSTOP");
    const stoppedAt = Date.now();
    // Its session times out and the coordinator removes it (fences it); its partitions move to
    // the others. Resumed only then, so that its TxnOffsetCommit must be refused.
    const admin = new Admin({ bootstrap });
    try {
      await until(
        "the zombie to be removed from the group",
        60_000,
        async () => {
          const d = await admin.describeGroup("copiers").catch(() => undefined);
          return d && !d.members.some((m) => m.clientId === "copier-z") ? true : undefined;
        },
        { intervalMs: 100 },
      );
    } finally {
      await admin.close();
    }
    expect(Date.now() - stoppedAt).toBeGreaterThanOrEqual(SESSION_TIMEOUT_MS - 500);
    zombie.child.kill("SIGCONT");
    await until(
      "the zombie's transaction to be refused",
      60_000,
      () => (/transaction failed \(.*UNKNOWN_MEMBER_ID/.test(zombie.stderr()) ? true : undefined),
      { intervalMs: 50 },
    );
    const exits = await Promise.all([a.exited, c.exited, zombie.exited]);
    expect(exits).toEqual([0, 0, 0]);
    // Fenced, it dropped its partitions as lost and rejoined.
    expect(zombie.stderr()).toMatch(/lost \d/);
    // Transactions of members whose epoch moved on meanwhile (rebalances) were not refused.
    for (const x of [a, c, zombie]) expect(x.stderr()).not.toMatch(/STALE_MEMBER_EPOCH/);
    const v = await verifyExactlyOnce({
      bootstrap,
      input: "in",
      output: "out",
      groupId: "copiers",
      partitions: PARTITIONS,
    });
    expect(v).toMatchObject({
      inputRecords: RECORDS,
      outputRecords: RECORDS,
      missing: 0,
      duplicates: 0,
      unexpected: 0,
      offsetsMatch: true,
      ok: true,
    });
  }, 300_000);
});
