// `npm run bench -- groups [--members N] [--partitions P] [--rounds R] [--base-port P]`:
// consumer-group rebalance times (KIP-848) with real processes. Starts a local cluster (3
// controllers, 3 brokers, 3 coordinators; group session timeout 3 s, heartbeat 300 ms), a
// topic of P partitions (default 60) and N-1 subscribed member processes (default N = 10);
// then for each of R rounds (default 3): a member joins (rebalance_s: from the group epoch
// bump the join causes, as seen by polling ConsumerGroupDescribe, until the members' reports
// are a balanced split of the topic (scripts/bench/_balanced-split.ts);
// join_to_settled_s: from spawning the process), then a member is SIGKILLed
// (after_session_timeout_s: from the kill plus the session timeout until the survivors' split
// is balanced again). JSON Lines on stdout, progress on stderr. The members
// are dist/test/integration/helpers/group-consumer-process.js (build first).
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { freeBasePort } from "../cluster/free-base-port.js";
import { isBalancedSplit } from "./_balanced-split.js";
import { median } from "./_median.js";

const TOPIC = "bench-groups";
const GROUP = "bench-group";
const SESSION_TIMEOUT_MS = 3_000;
const HEARTBEAT_INTERVAL_MS = 300;
const SETTLE_TIMEOUT_MS = 120_000;
const MEMBERS_MAX = 50;
const ROUNDS_MAX = 20;

function line(fields: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify({ bench: "groups", ...fields })}\n`);
}

interface MemberProcess {
  readonly child: ChildProcess;
  owned: string[];
}

export async function run(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      members: { type: "string" },
      partitions: { type: "string" },
      rounds: { type: "string" },
      "base-port": { type: "string" },
    },
    strict: true,
  });
  const members = Math.min(MEMBERS_MAX, Math.max(2, Number(values.members ?? 10)));
  const partitions = Math.max(members, Number(values.partitions ?? 60));
  const rounds = Math.min(ROUNDS_MAX, Math.max(1, Number(values.rounds ?? 3)));
  const basePort =
    values["base-port"] === undefined ? await freeBasePort() : Number(values["base-port"]);
  const { startCluster } = await import("../cluster/process-cluster.js");
  const { distRoot } = await import("../cluster/process-control.js");
  const { Admin } = await import("../../libs/client/index.js");
  const { until } = await import("../../libs/common/poll.js");
  const dataDir = mkdtempSync(join(tmpdir(), "tern-bench-groups-"));
  process.stderr.write(`bench groups: starting a local cluster in ${dataDir}\n`);
  const cluster = await startCluster({
    dataDir,
    basePort,
    healthTimeoutMs: 180_000,
    env: {
      TERN_LOG_LEVEL: "warn",
      TERN_GROUP_SESSION_TIMEOUT_MS: String(SESSION_TIMEOUT_MS),
      TERN_GROUP_HEARTBEAT_INTERVAL_MS: String(HEARTBEAT_INTERVAL_MS),
    },
  });
  const bootstrap = cluster.addresses("controller").join(",");
  const admin = new Admin({ bootstrap });
  const live = new Set<MemberProcess>();
  const start = (): MemberProcess => {
    const child = spawn(
      process.execPath,
      [
        join(distRoot(), "test", "integration", "helpers", "group-consumer-process.js"),
        "--bootstrap",
        bootstrap,
        "--group",
        GROUP,
        "--topics",
        TOPIC,
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    const m: MemberProcess = { child, owned: [] };
    let partial = "";
    child.stdout!.on("data", (d: Buffer) => {
      const lines = (partial + d.toString()).split("\n");
      partial = lines.pop()!;
      for (const l of lines) {
        const e = JSON.parse(l) as { event: string; partitions?: string[] };
        if (e.event === "owned") m.owned = e.partitions ?? [];
      }
    });
    live.add(m);
    return m;
  };
  const all = Array.from({ length: partitions }, (_, p) => `${TOPIC}-${p}`);
  const settled = (): boolean =>
    isBalancedSplit(
      [...live].map((m) => m.owned),
      all,
    );
  const waitSettled = (what: string): Promise<true> =>
    until(what, SETTLE_TIMEOUT_MS, () => (settled() ? true : undefined), { intervalMs: 10 });
  const epoch = async (): Promise<number> => (await admin.describeGroup(GROUP)).groupEpoch;
  try {
    for (const r of await admin.createTopics([{ name: TOPIC, partitions, replicationFactor: 3 }]))
      if (r.error) throw r.error;
    await admin.waitForLeaders([TOPIC]);
    const t0 = performance.now();
    for (let i = 0; i < members - 1; i++) start();
    await waitSettled(`${members - 1} members to settle`);
    line({
      case: `start-${members - 1}`,
      metric: "initial_settle_s",
      value: Number(((performance.now() - t0) / 1000).toFixed(3)),
      unit: "s",
      members: members - 1,
      partitions,
    });
    const joins: number[] = [];
    const kills: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const before = await epoch();
      const spawned = performance.now();
      start();
      // The join is the first group epoch bump after the spawn.
      const bumpedAt = await until(
        "the join to bump the group epoch",
        SETTLE_TIMEOUT_MS,
        async () => ((await epoch()) > before ? performance.now() : undefined),
        { intervalMs: 20 },
      );
      await waitSettled(`${members} members to settle after a join`);
      const rebalanceS = (performance.now() - bumpedAt) / 1000;
      joins.push(rebalanceS);
      line({
        case: `join-${round}`,
        metric: "rebalance_s",
        value: Number(rebalanceS.toFixed(3)),
        unit: "s",
        joinToSettledS: Number(((performance.now() - spawned) / 1000).toFixed(3)),
        members,
        partitions,
      });
      const victim = [...live][round % live.size]!;
      const killedAt = performance.now();
      victim.child.kill("SIGKILL");
      live.delete(victim);
      await waitSettled(`${members - 1} members to settle after a SIGKILL`);
      const afterS = (performance.now() - killedAt - SESSION_TIMEOUT_MS) / 1000;
      kills.push(afterS);
      line({
        case: `kill-${round}`,
        metric: "after_session_timeout_s",
        value: Number(afterS.toFixed(3)),
        unit: "s",
        killToSettledS: Number(((performance.now() - killedAt) / 1000).toFixed(3)),
        sessionTimeoutMs: SESSION_TIMEOUT_MS,
        members: members - 1,
        partitions,
      });
      process.stderr.write(
        `bench groups: round ${round + 1}/${rounds}: join ${rebalanceS.toFixed(3)} s, SIGKILL ${afterS.toFixed(3)} s after the session timeout\n`,
      );
    }
    line({
      case: `median-of-${rounds}`,
      metric: "rebalance_s",
      value: Number(median(joins).toFixed(3)),
      unit: "s",
      members,
      partitions,
    });
    line({
      case: `median-of-${rounds}`,
      metric: "after_session_timeout_s",
      value: Number(median(kills).toFixed(3)),
      unit: "s",
      members: members - 1,
      partitions,
      sessionTimeoutMs: SESSION_TIMEOUT_MS,
      heartbeatIntervalMs: HEARTBEAT_INTERVAL_MS,
    });
    return 0;
  } finally {
    for (const m of live) m.child.kill("SIGKILL");
    await admin.close();
    await cluster.stop({ termTimeoutMs: 5_000 });
    rmSync(dataDir, { recursive: true, force: true });
  }
}
