// `npm run bench -- failover [--kills N] [--base-port P]`: coordinator failover time. Starts 3
// controllers, 3 brokers and 3 coordinators; for each of N kills (default 5), SIGKILLs the
// Raft leader of the transactional id's __transaction_state partition and measures from the
// kill to the first successful commit (AddPartitionsToTxn, Produce, EndTxn) by the same
// transactional id on the new leader; the killed process is restarted before the next kill.
// JSON Lines on stdout: one failover_s per kill and their median; progress on stderr.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { freeBasePort } from "../cluster/free-base-port.js";

const TOPIC = "bench-failover";
const TID = "bench-failover-txn";
const KILLS_MAX = 50;

function line(fields: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify({ bench: "failover", ...fields })}\n`);
}

export async function run(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { kills: { type: "string" }, "base-port": { type: "string" } }, strict: true });
  const kills = Math.min(KILLS_MAX, Math.max(1, Number(values.kills ?? 5)));
  const basePort = values["base-port"] === undefined ? await freeBasePort() : Number(values["base-port"]);
  const { startCluster } = await import("../cluster/process-cluster.js");
  const { ControllerClient } = await import("../../libs/metadata/controller-client.js");
  const { parsePeers } = await import("../../libs/common/config.js");
  const { silentLogger } = await import("../../libs/common/logger.js");
  const { partitionFor } = await import("../../libs/common/hash.js");
  const { TxnHarness, until } = await import("../../services/coordinator/txn-harness.js");
  const dataDir = mkdtempSync(join(tmpdir(), "tern-bench-failover-"));
  process.stderr.write(`bench failover: starting 3 controllers + 3 brokers + 3 coordinators in ${dataDir}\n`);
  const cluster = await startCluster({ dataDir, controllers: 3, brokers: 3, coordinators: 3, basePort, env: { TERN_LOG_LEVEL: "warn" }, healthTimeoutMs: 180_000 });
  const controller = new ControllerClient({ controllers: parsePeers(cluster.controllers, "controllers"), logger: silentLogger() });
  const h = new TxnHarness(controller, cluster.addresses("coordinator"));
  try {
    await until("topic creation", 60_000, async () => {
      const out = await controller.createTopics([{ name: TOPIC, partitions: 3, replicationFactor: 3 }]);
      return out.every((o) => !o.error || o.error.errorName === "TOPIC_ALREADY_EXISTS") ? out : undefined;
    });
    let id = await h.init(TID);
    /** Commits one transaction; answers the elapsed ms at the end of each phase. */
    const commit = async (tag: string): Promise<{ addMs: number; produceMs: number; endMs: number }> => {
      const t0 = performance.now();
      await h.addPartitions(TID, id, [{ topic: TOPIC, partition: 0 }, { topic: TOPIC, partition: 1 }]);
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
    const samples: number[] = [];
    for (let i = 0; i < kills; i++) {
      const leader = await h.leader("__transaction_state", partitionFor(TID, 50), "coordinator");
      const t0 = performance.now();
      cluster.kill("coordinator", leader.nodeId, "SIGKILL");
      const phases = await commit(`kill-${i}`);
      const failoverS = (performance.now() - t0) / 1000;
      samples.push(failoverS);
      line({ case: `kill-${i}`, metric: "failover_s", value: Number(failoverS.toFixed(3)), unit: "s", killed: leader.nodeId,
        addDoneMs: Math.round(phases.addMs), produceDoneMs: Math.round(phases.produceMs), endDoneMs: Math.round(phases.endMs) });
      process.stderr.write(`bench failover: kill ${i + 1}/${kills} of coordinator ${leader.nodeId}: ${failoverS.toFixed(3)} s\n`);
      await cluster.waitForExit("coordinator", leader.nodeId, 10_000);
      cluster.start("coordinator", leader.nodeId);
      await cluster.waitForHealth({ timeoutMs: 120_000, only: [{ role: "coordinator", id: leader.nodeId }] });
    }
    const sorted = [...samples].sort((a, b) => a - b);
    const median = sorted.length % 2 === 1 ? sorted[(sorted.length - 1) / 2]! : (sorted[sorted.length / 2 - 1]! + sorted[sorted.length / 2]!) / 2;
    line({ case: `median-of-${kills}`, metric: "failover_s", value: Number(median.toFixed(3)), unit: "s", kills, electionTimeoutMs: 1500 });
    return 0;
  } finally {
    h.close();
    controller.close();
    await cluster.stop({ termTimeoutMs: 5_000 });
    rmSync(dataDir, { recursive: true, force: true });
  }
}
