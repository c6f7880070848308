// Real processes: 1 controller, 1 broker, 3 coordinators (node dist/...; build first). A
// deposed coordinator must not answer from stale state (issue 35 item 3). Each coordinator
// advertises a cuttable proxy (helpers/cuttable-proxy.ts), so its peers reach it only through
// the proxy while the test talks to its real listener. The leader L of a transaction's
// __transaction_state partition is cut off from everything the cluster sends it and paused
// (SIGSTOP); the two others elect a new leader, and a new instance of the id fences the open
// transaction there (aborted, epoch bumped). L is then resumed, still cut off: it has heard
// nothing of the new term and believes it leads with the transaction Ongoing. Asked by the
// fenced producer's identity, a verification (KIP-890) or an add of a partition already added
// must not be answered NONE from that stale state: L must confirm its leadership (a read index
// a quorum acknowledges) first, which it cannot, and answers NOT_COORDINATOR.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parsePeers } from "../../libs/common/config.js";
import { isTernError } from "../../libs/common/errors.js";
import { partitionFor } from "../../libs/common/hash.js";
import { silentLogger } from "../../libs/common/logger.js";
import { ControllerClient } from "../../libs/metadata/controller-client.js";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";
import { ROLE_PORT_OFFSET } from "../../scripts/cluster/layout.js";
import { startCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import { CoordinatorClient } from "../../services/coordinator/coordinator-client.js";
import { CuttableProxy } from "./helpers/cuttable-proxy.js";
import { TxnHarness, until } from "./helpers/txn-harness.js";

const SHAPE = { controllers: 1, brokers: 1, coordinators: 3 };
const TOPIC = "deposed-it";
/**
 * A longer election timeout than the default 1.5 s: the resumed leader steps down (check-quorum)
 * only after one or two of them, and the stale answers are asked for within that window.
 */
const ELECTION_TIMEOUT_MS = 4_000;
const CALL_DEADLINE_MS = 10_000;

let cluster: ProcessCluster;
let controller: ControllerClient;
let h: TxnHarness;
let direct: CoordinatorClient;
let dataDir: string;
const proxies = new Map<number, CuttableProxy>();
let paused: number | undefined;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "tern-deposed-coordinator-it-"));
  const basePort = await freeBasePort(SHAPE);
  for (let id = 0; id < SHAPE.coordinators; id++)
    proxies.set(
      id,
      await CuttableProxy.start(`127.0.0.1:${basePort + ROLE_PORT_OFFSET.coordinator + id}`),
    );
  cluster = await startCluster({
    dataDir,
    ...SHAPE,
    basePort,
    env: { TERN_LOG_LEVEL: "warn", TERN_ELECTION_TIMEOUT_MS: String(ELECTION_TIMEOUT_MS) },
    argsFor: (spec) =>
      spec.role === "coordinator" ? ["--advertise", proxies.get(spec.id)!.address] : [],
    healthTimeoutMs: 120_000,
  });
  controller = new ControllerClient({
    controllers: parsePeers(cluster.controllers, "controllers"),
    logger: silentLogger(),
  });
  await until("topic creation", 60_000, async () => {
    const out = await controller.createTopics([
      { name: TOPIC, partitions: 1, replicationFactor: 1 },
    ]);
    return out.every((o) => !o.error || o.error.errorName === "TOPIC_ALREADY_EXISTS")
      ? out
      : undefined;
  });
  h = new TxnHarness(controller, cluster.addresses("coordinator"));
  direct = new CoordinatorClient(cluster.addresses("coordinator"));
}, 240_000);

afterAll(async () => {
  if (paused !== undefined) cluster?.kill("coordinator", paused, "SIGCONT");
  h?.close();
  direct?.close();
  controller?.close();
  await cluster?.stop({ termTimeoutMs: 5_000 });
  for (const p of proxies.values()) await p.close();
  rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

/** A partition's answer code, or the whole request's refusal. */
async function addCode(address: string, request: Record<string, unknown>): Promise<string> {
  try {
    const r = await direct.call(address, "AddPartitionsToTxn", request as never, CALL_DEADLINE_MS);
    return String(r.results[0]?.errorCode);
  } catch (e) {
    return isTernError(e) ? e.errorName : String(e);
  }
}

describe("a deposed coordinator (real processes)", () => {
  it("does not answer a verification or an add from stale state", async () => {
    const tid = "deposed-it-1";
    const tp = { topic: TOPIC, partition: 0 };
    const old = await h.init(tid);
    expect(await h.addPartitions(tid, old, [tp])).toEqual(["NONE"]);
    expect(await h.produce(tid, old, TOPIC, 0, ["stale-1"])).toBe("NONE");

    const statePartition = partitionFor(tid, 50);
    const leader = await h.leader("__transaction_state", statePartition, "coordinator");
    const leaderListen = cluster.address("coordinator", leader.nodeId);
    const others = cluster.addresses("coordinator").filter((a) => a !== leaderListen);

    // Nothing the cluster sends reaches L any more; then L stops sending too.
    proxies.get(leader.nodeId)!.cut();
    cluster.kill("coordinator", leader.nodeId, "SIGSTOP");
    paused = leader.nodeId;

    // A new leader among the others; a new instance fences the open transaction there.
    const survivors = new TxnHarness(controller, others);
    const fresh = await survivors.init(tid).finally(() => survivors.close());
    expect(fresh.producerEpoch).toBeGreaterThan(old.producerEpoch);

    // L resumes, still cut off: it heard nothing of the new term and believes it leads.
    cluster.kill("coordinator", leader.nodeId, "SIGCONT");
    paused = undefined;
    const found = await direct.call(
      leaderListen,
      "FindCoordinator",
      { key: tid, keyType: "TRANSACTION" },
      CALL_DEADLINE_MS,
    );
    expect(
      found.coordinator?.address,
      "precondition: the resumed old leader still names itself (it has not stepped down yet)",
    ).toBe(leader.address);

    const asked = { transactionalId: tid, ...old, partitions: [tp] };
    const [verified, added] = await Promise.all([
      addCode(leaderListen, { ...asked, verifyOnly: true }),
      addCode(leaderListen, { ...asked, verifyOnly: false }),
    ]);
    expect({ verified, added }).toEqual({ verified: "NOT_COORDINATOR", added: "NOT_COORDINATOR" });

    // Healed, the cluster answers the fenced identity from the current state.
    proxies.get(leader.nodeId)!.heal();
    const current = await h.coordinators.txnCall(tid, "AddPartitionsToTxn", {
      ...asked,
      verifyOnly: true,
    });
    expect(["INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED"]).toContain(current.results[0]?.errorCode);
  }, 240_000);
});
