// A coordinator that takes over with a stale metadata view (issue 13 item 3). The followers of
// a __transaction_state partition are cut off from every controller, then a topic is created:
// only the leader's view has it. A transaction of an id on that partition writes to the new
// topic and commits while the leader is cut off from the brokers (the decision is durable, its
// markers cannot leave), then the leader is SIGKILLed. One of the stale followers takes over and
// resumes the markers: its view lacks the topic, and skipping that marker would leave the
// partition's transaction open for ever (the settle phase then reports the key unsettled and the
// checker the committed value lost). Heal: every cut removed, the leader restarted.
import { partitionFor } from "../../../libs/common/hash.js";
import { TRANSACTION_STATE_TOPIC } from "../../../libs/metadata/types.js";
import type { MicroOp, TxnOp } from "../../../libs/verify/history.js";
import { nodeName, type ChaosCluster, type NodeRef } from "../cluster/chaos-cluster.js";
import {
  createTopicsAndWait,
  errorName,
  pollUntil,
  sleep,
  type ClusterClients,
} from "../workloads/cluster-clients.js";
import type { RunClock } from "../workloads/txn-loop.js";
import { TxnSession } from "../workloads/txn-session.js";
import type { Endpoint, NetworkPartitioner } from "./network-partition.js";

const CALL_TIMEOUT_MS = 15_000;
const TOPIC_WAIT_MS = 60_000;
const LEADER_WAIT_MS = 60_000;
/** Candidate ids tried to find one on the target partition (50 partitions: ~1 in 50 matches). */
const ID_CANDIDATES_MAX = 100_000;
export const STALE_VIEW_PROCESS_BASE = 2_000;

export interface StaleViewContext {
  readonly cluster: ChaosCluster;
  readonly clients: ClusterClients;
  readonly partitioner: NetworkPartitioner;
  readonly clock: RunClock;
  /** Prefix of this run's ids and topics (unique per run). */
  readonly prefix: string;
  readonly recordTxn: (txn: Omit<TxnOp, "id">) => void;
}

export interface StaleViewOutcome {
  readonly transactionalId: string;
  /** The topic created while the followers were cut off; settle reads it. */
  readonly key: { topic: string; partition: number } | undefined;
  readonly nodes: string[];
  readonly killMs: number | undefined;
  readonly note: string;
}

/** An id of this run whose coordinator is __transaction_state/partition. */
function idOnPartition(prefix: string, partition: number, partitions: number): string {
  for (let i = 0; i < ID_CANDIDATES_MAX; i++) {
    const id = `${prefix}-${i}`;
    if (partitionFor(id, partitions) === partition) return id;
  }
  throw new Error(`no id of ${prefix} on partition ${partition}`);
}

export async function runStaleView(
  ctx: StaleViewContext,
  step: number,
  partition: number,
  holdMs: number,
): Promise<StaleViewOutcome> {
  const notes: string[] = [];
  const m = await ctx.clients.metadata(true);
  const txnTopic = m.topics.find((t) => t.name === TRANSACTION_STATE_TOPIC);
  const p = txnTopic?.partitions.find((x) => x.partition === partition);
  if (!txnTopic || !p || p.leader < 0)
    throw new Error(`${TRANSACTION_STATE_TOPIC}/${partition} has no leader`);
  const leader: NodeRef = { role: "coordinator", id: p.leader };
  const followers = p.replicas
    .filter((id) => id !== leader.id)
    .map((id): NodeRef => ({ role: "coordinator", id }));
  const endpoint = (n: NodeRef): Endpoint => ({
    name: nodeName(n),
    address: ctx.cluster.spec(n).address,
  });
  const of = (role: NodeRef["role"]): NodeRef[] =>
    ctx.cluster.specs.filter((s) => s.role === role).map((s) => ({ role: s.role, id: s.id }));
  const transactionalId = idOnPartition(
    `${ctx.prefix}-stale-${step}`,
    partition,
    txnTopic.partitions.length,
  );
  const topic = `${ctx.prefix}-stale-${step}`;
  const key = { topic, partition: 0 };
  const nodes = [nodeName(leader), ...followers.map(nodeName)];

  // 1. The followers stop hearing from the controllers; then the topic is born.
  await ctx.partitioner.cut(followers.map(endpoint), of("controller").map(endpoint));
  await createTopicsAndWait(ctx.clients, [{ name: topic, partitions: 1 }], TOPIC_WAIT_MS);

  // 2. A transaction on the new topic, decided while its markers cannot leave the leader.
  const session = new TxnSession(ctx.clients, transactionalId, CALL_TIMEOUT_MS);
  const ops: MicroOp[] = [];
  const invokedMs = ctx.clock.nowMs();
  let outcome: TxnOp["outcome"] = "unknown";
  try {
    await session.init();
    // The leader's own view may trail the controller by a moment: retried until it knows the topic.
    const added = await pollUntil(TOPIC_WAIT_MS, 200, async () =>
      session.addPartitions([key]).then(
        () => true,
        (e) => (errorName(e) === "UNKNOWN_TOPIC_OR_PARTITION" ? undefined : Promise.reject(e)),
      ),
    );
    if (!added) throw new Error("the leader never learnt the new topic");
    const value = `${transactionalId}-v`;
    const send = {
      f: "send" as const,
      key: `${topic}/0`,
      value,
      offset: undefined as number | undefined,
    };
    ops.push(send);
    send.offset = await session.send(topic, 0, [value]);
    await ctx.partitioner.cut([endpoint(leader)], of("broker").map(endpoint));
    await session.end(true);
    outcome = "ok";
  } catch (e) {
    notes.push(`transaction: ${errorName(e)} ${(e as Error).message}`);
  }
  ctx.recordTxn({
    process: STALE_VIEW_PROCESS_BASE + step,
    ops,
    outcome,
    invokedMs,
    completedMs: ctx.clock.nowMs(),
  });

  // 3. The leader dies; a follower with the stale view takes over and resumes the markers.
  const killMs = ctx.clock.nowMs();
  ctx.cluster.processes.kill(leader.role, leader.id, "SIGKILL");
  await ctx.cluster.processes.waitForExit(leader.role, leader.id, 20_000);
  const next = await pollUntil(LEADER_WAIT_MS, 200, async () => {
    for (const f of followers) {
      const r = await ctx.clients.coordinators
        .call(
          endpoint(f).address,
          "DescribeTransactions",
          { transactionalIds: [transactionalId] },
          2_000,
        )
        .catch(() => undefined);
      const d = r?.transactions?.[0];
      if (d && d.errorCode === "NONE") return { node: f, state: String(d.state) };
    }
    return undefined;
  });
  notes.push(
    next
      ? `${nodeName(next.node)} took over (state ${next.state})`
      : "no follower took over in time",
  );
  await sleep(holdMs);
  return { transactionalId, key, nodes, killMs, note: notes.join("; ") };
}
