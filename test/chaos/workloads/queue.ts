// Workload (a), Jepsen's Kafka queue: each process owns a transactional id and a
// read_committed consumer position per key; a transaction is 1-4 micro-operations, each a send
// of a unique value to a random key (partition) or a poll of a random key from the process's
// position. About 10% of transactions abort by choice. Positions advance only on commit.
import type { Random } from "../../../libs/common/prng.js";
import type { MicroOp, TxnOp } from "../../../libs/verify/history.js";
import { ensureInit, runOneTxn, type TxnLoopStats } from "./txn-loop.js";
import { TxnSession } from "./txn-session.js";
import type { WorkloadOptions, WorkloadResult } from "./workload.js";

const OPS_PER_TXN_MAX = 4;
const POLL_RECORDS_MAX = 16;
const TXNS_PER_PROCESS_MAX = 100_000;

export interface QueueOptions extends WorkloadOptions {
  readonly topic: string;
  readonly partitions: number;
  readonly processes: number;
}

export async function runQueueWorkload(o: QueueOptions): Promise<WorkloadResult> {
  const txns: TxnOp[] = [];
  const stats: TxnLoopStats = { errors: {} };
  let nextId = 0;
  const ids: string[] = [];
  const loops: Promise<void>[] = [];
  for (let p = 0; p < o.processes; p++) {
    const rng = o.rng.fork();
    const session = new TxnSession(o.clients, `${o.tag}-queue-${p}`, o.callTimeoutMs, o.late);
    ids.push(session.transactionalId);
    loops.push(
      processLoop(
        o,
        p,
        rng,
        session,
        stats,
        () => nextId++,
        (t) => {
          txns.push(t);
          o.onTxn?.(t);
        },
      ),
    );
  }
  await Promise.all(loops);
  const keys = Array.from({ length: o.partitions }, (_, partition) => ({
    topic: o.topic,
    partition,
  }));
  return { txns, transactionalIds: ids, keys, stats };
}

async function processLoop(
  o: QueueOptions,
  process: number,
  rng: Random,
  session: TxnSession,
  stats: TxnLoopStats,
  nextId: () => number,
  record: (t: TxnOp) => void,
): Promise<void> {
  const positions = new Map<number, number>();
  let written = 0;
  for (let n = 0; n < TXNS_PER_PROCESS_MAX && o.running(); n++) {
    if (!(await ensureInit(session, stats))) continue;
    const tentative = new Map(positions);
    const count = rng.int(1, OPS_PER_TXN_MAX + 1);
    const plan = Array.from({ length: count }, () => ({
      send: rng.bool(0.6),
      partition: rng.int(0, o.partitions),
    }));
    const txn = await runOneTxn({
      session,
      process,
      nextId,
      clock: o.clock,
      abortByChoice: rng.bool(o.abortRatio),
      stats,
      body: async (ops: MicroOp[]) => {
        for (const step of plan) {
          const key = `${o.topic}/${step.partition}`;
          if (step.send) {
            const value = `${o.tag}-q${process}-${written++}`;
            await session.addPartitions([{ topic: o.topic, partition: step.partition }]);
            // Recorded before the answer: a send whose answer is lost still belongs to the txn.
            const op = { f: "send" as const, key, value, offset: undefined as number | undefined };
            ops.push(op);
            op.offset = await session.send(o.topic, step.partition, [value]);
          } else {
            const from = tentative.get(step.partition) ?? 0;
            const fetched = await o.clients.fetchCommitted(o.topic, step.partition, from);
            const pairs = fetched.records.filter(([off]) => off >= from).slice(0, POLL_RECORDS_MAX);
            ops.push({ f: "poll", reads: { [key]: pairs } });
            const lastPair = pairs[pairs.length - 1];
            tentative.set(step.partition, lastPair ? lastPair[0] + 1 : from);
          }
        }
      },
    });
    record(txn);
    if (txn.outcome === "ok") for (const [k, v] of tentative) positions.set(k, v);
  }
}
