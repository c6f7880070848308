// `npm run bench -- failover [--kills N] [--fault kill|pause|partition] [--back-to-back] [--base-port P]`:
// coordinator failover time. Starts 3 controllers, 3 brokers and 3 coordinators; for each of N
// faults (default 10) it hits the Raft leader of the transactional id's __transaction_state
// partition and measures from the fault to the first successful commit (AddPartitionsToTxn,
// Produce, EndTxn) by the same transactional id on the new leader (failover_s), and to the
// first survivor that reports itself leader of the group in a newer term (leader_s, from the
// survivors' /metrics polled every 25 ms).
//   --fault kill (default): SIGKILL, then restart the process.
//   --fault pause: SIGSTOP (a live leader that stops answering: the survivors elect after the
//     election timeout), SIGCONT once the commit is through.
//   --fault partition: iptables drops all traffic between the leader and every other tern
//     process (the bench client still reaches everyone); healed once the commit is through.
//     Needs root, iptables and cgroup v2 (as the chaos suite's partitions, test/chaos).
// Before the next fault the bench waits (bounded) until the victim has rejoined: every replica
// of every group names one leader, the victim has applied what any replica has committed, and
// no leader reports it lagging (scripts/bench/_rejoin.ts). --back-to-back skips that wait (only
// the restarted process's health check, as before): the next fault then often hits a cluster
// whose previous victim is still rejoining, i.e. a second failure within seconds.
// JSON Lines on stdout: one line per fault, then median and worst of failover_s and leader_s,
// and cpu_s_per_fault (user+sys of the cluster's processes and the bench over the fault loop).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";
import type { ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import { groupView, waitForRejoin } from "../../scripts/bench/_rejoin.js";
import { cpuMs, scrape } from "../../scripts/bench/_storage-probes.js";
import { median } from "../../scripts/bench/_median.js";

const TOPIC = "bench-failover";
const TID = "bench-failover-txn";
const KILLS_MAX = 50;
const REJOIN_TIMEOUT_MS = 60_000;
const LEADER_POLL_MS = 25;
const LEADER_WAIT_MS = 30_000;
const SCRAPE_TIMEOUT_MS = 500;
const ELECTION_TIMEOUT_MS = 1_500;

function line(fields: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify({ bench: "failover", ...fields })}\n`);
}

const round3 = (x: number): number => Number(x.toFixed(3));

/** Polls the survivors' /metrics until one leads `groupId` in a term above `term`; answers the seconds since t0. */
async function newLeaderS(
  cluster: ProcessCluster,
  survivors: readonly number[],
  groupId: string,
  term: number,
  t0: number,
  stop: { done: boolean },
): Promise<number | undefined> {
  const deadline = t0 + LEADER_WAIT_MS;
  while (!stop.done && performance.now() < deadline) {
    const views = await Promise.all(
      survivors.map(async (id) => ({
        id,
        samples: await scrape(cluster.spec("coordinator", id).metricsAddress, SCRAPE_TIMEOUT_MS),
      })),
    );
    for (const { id, samples } of views) {
      const v = samples === undefined ? undefined : groupView(samples, groupId);
      if (v !== undefined && v.term > term && v.leader === id)
        return (performance.now() - t0) / 1000;
    }
    await new Promise((r) => setTimeout(r, LEADER_POLL_MS));
  }
  return undefined;
}

export async function run(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      kills: { type: "string" },
      fault: { type: "string" },
      "back-to-back": { type: "boolean" },
      "base-port": { type: "string" },
    },
    strict: true,
  });
  const kills = Math.min(KILLS_MAX, Math.max(1, Number(values.kills ?? 10)));
  const fault = values.fault ?? "kill";
  if (fault !== "kill" && fault !== "pause" && fault !== "partition")
    throw Object.assign(new Error(`--fault must be kill, pause or partition, got "${fault}"`), {
      code: "ERR_PARSE_ARGS_INVALID_OPTION_VALUE",
    });
  const backToBack = values["back-to-back"] === true;
  const { ControllerClient } = await import("../../libs/metadata/controller-client.js");
  const { parsePeers } = await import("../../libs/common/config.js");
  const { silentLogger } = await import("../../libs/common/logger.js");
  const { partitionFor } = await import("../../libs/common/hash.js");
  const { partitionGroupId } = await import("../../libs/metadata/lookup.js");
  const { TxnHarness, until } = await import("../integration/helpers/txn-harness.js");

  // A kill runs on the plain local cluster; a partition needs the chaos suite's cluster (each
  // process on its own loopback address and in its own cgroup, so iptables can tell them apart).
  let cluster: ProcessCluster;
  let stopCluster: () => Promise<void>;
  let partitioner: import("../chaos/faults/network-partition.js").NetworkPartitioner | undefined;
  let dataDir: string | undefined;
  if (fault !== "partition") {
    const { startCluster } = await import("../../scripts/cluster/process-cluster.js");
    const basePort =
      values["base-port"] === undefined ? await freeBasePort() : Number(values["base-port"]);
    dataDir = mkdtempSync(join(tmpdir(), "tern-bench-failover-"));
    process.stderr.write(
      `bench failover: starting 3 controllers + 3 brokers + 3 coordinators in ${dataDir}\n`,
    );
    const c = await startCluster({
      dataDir,
      controllers: 3,
      brokers: 3,
      coordinators: 3,
      basePort,
      env: { TERN_LOG_LEVEL: "warn" },
      healthTimeoutMs: 180_000,
    });
    cluster = c;
    stopCluster = async () => void (await c.stop({ termTimeoutMs: 5_000 }));
  } else {
    const { startChaosCluster } = await import("../chaos/cluster/chaos-cluster.js");
    const { NetworkPartitioner } = await import("../chaos/faults/network-partition.js");
    process.stderr.write(
      "bench failover: starting the chaos suite's 3+3+3 cluster (per-process loopback address and cgroup)\n",
    );
    const c = await startChaosCluster({
      ...(values["base-port"] === undefined ? {} : { basePort: Number(values["base-port"]) }),
      healthTimeoutMs: 180_000,
    });
    cluster = c.processes;
    dataDir = c.dataDir;
    partitioner = new NetworkPartitioner(c.cgroups, `bench-${process.pid}`);
    try {
      partitioner.ensureAvailable();
    } catch (e) {
      await c.stop();
      rmSync(c.dataDir, { recursive: true, force: true });
      throw e;
    }
    stopCluster = async () => {
      try {
        partitioner?.close();
      } finally {
        await c.stop();
      }
    };
  }
  const controller = new ControllerClient({
    controllers: parsePeers(cluster.controllers, "controllers"),
    logger: silentLogger(),
  });
  const h = new TxnHarness(controller, cluster.addresses("coordinator"));
  const coordinators = cluster.specs.filter((s) => s.role === "coordinator").map((s) => s.id);
  const metricsAddresses = new Map(
    coordinators.map((id) => [id, cluster.spec("coordinator", id).metricsAddress]),
  );
  const groupId = partitionGroupId("__transaction_state", partitionFor(TID, 50));
  try {
    await until("topic creation", 60_000, async () => {
      const out = await controller.createTopics([
        { name: TOPIC, partitions: 3, replicationFactor: 3 },
      ]);
      return out.every((o) => !o.error || o.error.errorName === "TOPIC_ALREADY_EXISTS")
        ? out
        : undefined;
    });
    let id = await h.init(TID);
    /** Commits one transaction; answers the elapsed ms at the end of each phase. */
    const commit = async (
      tag: string,
    ): Promise<{ addMs: number; produceMs: number; endMs: number }> => {
      const t0 = performance.now();
      await h.addPartitions(TID, id, [
        { topic: TOPIC, partition: 0 },
        { topic: TOPIC, partition: 1 },
      ]);
      const addMs = performance.now() - t0;
      for (const p of [0, 1]) {
        const code = await h.produce(TID, id, TOPIC, p, [`${tag}-${p}`]);
        if (code !== "NONE") throw new Error(`produce answered ${code}`);
      }
      const produceMs = performance.now() - t0;
      id = await h.endTxn(TID, id, true);
      return { addMs, produceMs, endMs: performance.now() - t0 };
    };
    await commit("warmup");
    // The first fault, too, hits a cluster whose every replica has joined (a process just up
    // may still have peer channels in reconnect backoff).
    for (const c of coordinators) await waitForRejoin(c, metricsAddresses, REJOIN_TIMEOUT_MS);
    const failovers: number[] = [];
    const leaders: number[] = [];
    // CPU of the fault loop: processes that exit are counted just before they go.
    const cpuNow = (): number =>
      cluster.processes().reduce((n, p) => n + (p.alive ? (cpuMs(p.pid) ?? 0) : 0), 0);
    const selfCpuMs = (): number => {
      const u = process.cpuUsage();
      return (u.user + u.system) / 1000;
    };
    let cpuDoneMs = -cpuNow() - selfCpuMs();
    const loopT0 = performance.now();
    for (let i = 0; i < kills; i++) {
      const leader = await h.leader("__transaction_state", partitionFor(TID, 50), "coordinator");
      const before = await scrape(
        cluster.spec("coordinator", leader.nodeId).metricsAddress,
        SCRAPE_TIMEOUT_MS,
      );
      const term = (before === undefined ? undefined : groupView(before, groupId)?.term) ?? 0;
      const survivors = coordinators.filter((c) => c !== leader.nodeId);
      const victimPid = cluster.pid("coordinator", leader.nodeId);
      let victimCpuMs = victimPid === undefined ? 0 : (cpuMs(victimPid) ?? 0);
      const t0 = performance.now();
      if (fault === "kill" || fault === "pause") {
        cluster.kill("coordinator", leader.nodeId, fault === "kill" ? "SIGKILL" : "SIGSTOP");
      } else {
        const node = (role: "controller" | "broker" | "coordinator", nodeId: number) => ({
          name: `${role}-${nodeId}`,
          address: cluster.spec(role, nodeId).address,
        });
        const others = cluster.specs
          .filter((s) => !(s.role === "coordinator" && s.id === leader.nodeId))
          .map((s) => node(s.role, s.id));
        await partitioner!.cut([node("coordinator", leader.nodeId)], others);
      }
      const cutMs = performance.now() - t0;
      const stop = { done: false };
      const leaderProbe = newLeaderS(cluster, survivors, groupId, term, t0, stop);
      const phases = await commit(`fault-${i}`);
      const failoverS = (performance.now() - t0) / 1000;
      const leaderS = await leaderProbe;
      stop.done = true;
      failovers.push(failoverS);
      if (leaderS !== undefined) leaders.push(leaderS);
      let rejoinS: number | undefined;
      if (fault === "kill") {
        await cluster.waitForExit("coordinator", leader.nodeId, 10_000);
        cluster.start("coordinator", leader.nodeId);
        await cluster.waitForHealth({
          timeoutMs: 120_000,
          only: [{ role: "coordinator", id: leader.nodeId }],
        });
      } else if (fault === "pause") {
        victimCpuMs = 0; // still alive: counted at the end
        cluster.kill("coordinator", leader.nodeId, "SIGCONT");
      } else {
        victimCpuMs = 0; // still alive: counted at the end
        await partitioner!.heal();
      }
      const rejoinT0 = performance.now();
      if (!backToBack)
        rejoinS = (await waitForRejoin(leader.nodeId, metricsAddresses, REJOIN_TIMEOUT_MS)) / 1000;
      if (fault === "kill") cpuDoneMs += victimCpuMs;
      line({
        case: `${fault}-${i}`,
        metric: "failover_s",
        value: round3(failoverS),
        unit: "s",
        victim: leader.nodeId,
        leader_s: leaderS === undefined ? null : round3(leaderS),
        addDoneMs: Math.round(phases.addMs),
        produceDoneMs: Math.round(phases.produceMs),
        endDoneMs: Math.round(phases.endMs),
        ...(fault === "partition" ? { cutMs: Math.round(cutMs) } : {}),
        rejoin_s: rejoinS === undefined ? null : round3(rejoinS),
        restartToRejoinS: round3((performance.now() - rejoinT0) / 1000),
      });
      process.stderr.write(
        `bench failover: ${fault} ${i + 1}/${kills} of coordinator ${leader.nodeId}: ${failoverS.toFixed(3)} s (leader ${leaderS?.toFixed(3) ?? "?"} s)${rejoinS === undefined ? "" : `, rejoined in ${rejoinS.toFixed(2)} s`}\n`,
      );
    }
    cpuDoneMs += cpuNow() + selfCpuMs();
    const common = { faults: kills, fault, backToBack, electionTimeoutMs: ELECTION_TIMEOUT_MS };
    line({
      case: `median-of-${kills}`,
      metric: "failover_s",
      value: round3(median(failovers)),
      unit: "s",
      ...common,
    });
    line({
      case: `worst-of-${kills}`,
      metric: "failover_s",
      value: round3(Math.max(...failovers)),
      unit: "s",
      ...common,
      under1s: failovers.filter((x) => x < 1).length,
    });
    if (leaders.length > 0) {
      line({
        case: `median-of-${kills}`,
        metric: "leader_s",
        value: round3(median(leaders)),
        unit: "s",
        ...common,
        measured: leaders.length,
      });
      line({
        case: `worst-of-${kills}`,
        metric: "leader_s",
        value: round3(Math.max(...leaders)),
        unit: "s",
        ...common,
        measured: leaders.length,
      });
    }
    line({
      case: "all",
      metric: "cpu_s_per_fault",
      value: round3(cpuDoneMs / 1000 / kills),
      unit: "s",
      ...common,
      wallS: round3((performance.now() - loopT0) / 1000),
    });
    return 0;
  } finally {
    h.close();
    controller.close();
    try {
      await stopCluster();
    } finally {
      if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
    }
  }
}
