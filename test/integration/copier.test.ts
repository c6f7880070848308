// The exactly-once copier with real processes (build first: `npx tsc -p tsconfig.json`):
// 10,000 input records over 3 partitions, two copier processes with distinct transactional ids
// (partitions 0,1 and 2), each SIGKILLed twice mid-run and restarted. Afterwards the output
// topic under read_committed holds each transformed input exactly once and the group's
// committed offsets equal the input end offsets.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../../libs/common/poll.js";
import { distRoot } from "../../scripts/cluster/process-control.js";
import { startCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import { verifyExactlyOnce } from "../../scripts/demo/verify.js";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";
import { seedCopierTopics } from "./helpers/copier-input.js";

const RECORDS = Number(process.env.COPIER_TEST_RECORDS ?? 10_000);
const PARTITIONS = 3;
const KILLS_PER_INSTANCE = 2;

let cluster: ProcessCluster;
let dataDir: string;
let bootstrap: string;
const children = new Set<ChildProcess>();

interface Copier {
  child: ChildProcess;
  commits: number;
  exited: Promise<number | string | null>;
}

function startCopier(transactionalId: string, partitions: string): Copier {
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
      "copier-group",
      "--transactional-id",
      transactionalId,
      "--partitions",
      partitions,
      "--max-poll-records",
      "100",
      "--exit-when-idle-ms",
      "3000",
      "--progress",
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  children.add(child);
  const c: Copier = {
    child,
    commits: 0,
    exited: new Promise((r) =>
      child.once("exit", (code, signal) => {
        children.delete(child);
        r(code ?? signal);
      }),
    ),
  };
  child.stdout!.on(
    "data",
    (d: Buffer) => (c.commits += (d.toString().match(/^committed /gm) ?? []).length),
  );
  let err = "";
  child.stderr!.on("data", (d: Buffer) => (err = (err + d.toString()).slice(-4000)));
  child.once("exit", (code) => {
    if (code !== 0 && code !== null)
      process.stderr.write(`copier ${transactionalId} exited ${code}: ${err}\n`);
  });
  return c;
}

/** Runs one instance through KILLS_PER_INSTANCE SIGKILL+restart cycles, then to completion. */
async function runWithKills(
  transactionalId: string,
  partitions: string,
  commitsBeforeKill: number[],
): Promise<{ kills: number; exit: number | string | null }> {
  let copier = startCopier(transactionalId, partitions);
  let kills = 0;
  for (const k of commitsBeforeKill) {
    await until(
      `${transactionalId} to commit ${k} transactions`,
      120_000,
      () => copier.commits >= k || copier.child.exitCode !== null || undefined,
      { intervalMs: 50 },
    );
    if (copier.child.exitCode !== null) break; // finished before the kill point: reported as fewer kills
    copier.child.kill("SIGKILL");
    await copier.exited;
    kills += 1;
    copier = startCopier(transactionalId, partitions);
  }
  return { kills, exit: await copier.exited };
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "tern-copier-"));
  cluster = await startCluster({
    dataDir,
    basePort: await freeBasePort(),
    env: { TERN_LOG_LEVEL: "warn" },
    healthTimeoutMs: 120_000,
  });
  bootstrap = cluster.addresses("controller").join(",");
  await seedCopierTopics(bootstrap, PARTITIONS, RECORDS);
}, 240_000);

afterAll(async () => {
  for (const c of children) c.kill("SIGKILL");
  await cluster?.stop({ termTimeoutMs: 5_000 });
  rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

describe("exactly-once copier with SIGKILLed instances", () => {
  it(`copies ${RECORDS} records over ${PARTITIONS} partitions exactly once through ${KILLS_PER_INSTANCE} kills per instance`, async () => {
    const started = Date.now();
    const [a, b] = await Promise.all([
      runWithKills("copier-a", "0,1", [3, 8]),
      runWithKills("copier-b", "2", [2, 6]),
    ]);
    process.stderr.write(`copier run took ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
    expect(a).toEqual({ kills: KILLS_PER_INSTANCE, exit: 0 });
    expect(b).toEqual({ kills: KILLS_PER_INSTANCE, exit: 0 });
    const v = await verifyExactlyOnce({
      bootstrap,
      input: "in",
      output: "out",
      groupId: "copier-group",
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
  }, 420_000);
});
