// A zombie producer: a second instance of a workload's transactional id starts a transaction
// and writes, then a third instance fences it (InitProducerId), then the zombie keeps going: a
// further send and a commit. Everything after the fence must be refused; its writes must never
// become visible. The zombie's transaction is recorded in the history like any other
// (outcome fail when the commit was refused by epoch, which the fence guarantees).
import type { MicroOp } from "../checker/history.js";
import { errorName, sleep, type ClusterClients } from "../workloads/cluster-clients.js";
import type { RunClock } from "../workloads/txn-loop.js";
import { TxnSession } from "../workloads/txn-session.js";
import type { TxnOp } from "../checker/history.js";

const ZOMBIE_CALL_TIMEOUT_MS = 15_000;
const ZOMBIE_PROCESS_BASE = 1_000;
const FENCED_CODES = new Set(["PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH", "INVALID_PRODUCER_ID_MAPPING", "INVALID_TXN_STATE", "TRANSACTIONAL_ID_NOT_FOUND"]);

export interface ZombieContext {
  readonly clients: ClusterClients;
  readonly clock: RunClock;
  readonly topic: string;
  readonly partitions: number;
  readonly tag: string;
  readonly transactionalIdOf: (process: number) => string;
  readonly recordTxn: (txn: Omit<TxnOp, "id">) => void;
}

let zombies = 0;

export async function runZombie(ctx: ZombieContext, process: number, holdMs: number): Promise<string> {
  const tid = ctx.transactionalIdOf(process);
  const zombie = new TxnSession(ctx.clients, tid, ZOMBIE_CALL_TIMEOUT_MS);
  const n = zombies++;
  const partition = n % ctx.partitions;
  const key = `${ctx.topic}/${partition}`;
  const ops: MicroOp[] = [];
  const notes: string[] = [];
  await zombie.init();
  const invokedMs = ctx.clock.nowMs();
  try {
    await zombie.addPartitions([{ topic: ctx.topic, partition }]);
    const op = { f: "send" as const, key, value: `${ctx.tag}-zombie-${n}-a`, offset: undefined as number | undefined };
    ops.push(op);
    op.offset = await zombie.send(ctx.topic, partition, [op.value]);
  } catch (e) {
    notes.push(`first send: ${errorName(e)}`);
  }
  await sleep(holdMs);
  await new TxnSession(ctx.clients, tid, ZOMBIE_CALL_TIMEOUT_MS).init(); // the new instance fences the zombie
  try {
    const op = { f: "send" as const, key, value: `${ctx.tag}-zombie-${n}-b`, offset: undefined as number | undefined };
    ops.push(op);
    op.offset = await zombie.send(ctx.topic, partition, [op.value]);
    notes.push(`send after fence ACCEPTED at ${op.offset}`);
  } catch (e) {
    notes.push(`send after fence: ${errorName(e)}`);
  }
  let outcome: TxnOp["outcome"];
  try {
    await zombie.end(true);
    outcome = "ok";
    notes.push("commit after fence ACCEPTED");
  } catch (e) {
    const code = errorName(e);
    outcome = FENCED_CODES.has(code) ? "fail" : "unknown";
    notes.push(`commit after fence: ${code}`);
  }
  ctx.recordTxn({ process: ZOMBIE_PROCESS_BASE + process, ops, outcome, invokedMs, completedMs: ctx.clock.nowMs() });
  return notes.join("; ");
}
