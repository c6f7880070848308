// Workload (c), money transfers: every account is a partition starting with BALANCE_INITIAL;
// a transfer is one transaction writing "-amount" to one account and "+amount" to another.
// The final balances (initial + every committed delta read back) must sum to the start total:
// a torn or half-visible transfer breaks it. ~10% of transfers abort by choice.
import type { MicroOp, TxnOp } from "../../../libs/verify/history.js";
import { ensureInit, runOneTxn, type TxnLoopStats } from "./txn-loop.js";
import { TxnSession } from "./txn-session.js";
import type { WorkloadOptions, WorkloadResult } from "./workload.js";

export const BALANCE_INITIAL = 100;
const AMOUNT_MAX = 10;
const TXNS_PER_PROCESS_MAX = 100_000;

export interface MoneyOptions extends WorkloadOptions {
  readonly topic: string;
  readonly accounts: number;
  readonly processes: number;
}

/** The signed amount a money record carries: values look like "<id>:<+|->amount". */
export function amountOf(value: string): number {
  const m = /:([+-]\d+)$/.exec(value);
  return m ? Number(m[1]) : 0;
}

export function balances(
  accounts: number,
  topic: string,
  finalReads: Readonly<Record<string, ReadonlyArray<readonly [number, string]>>>,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (let a = 0; a < accounts; a++) {
    const key = `${topic}/${a}`;
    out[key] =
      BALANCE_INITIAL + (finalReads[key] ?? []).reduce((sum, [, v]) => sum + amountOf(v), 0);
  }
  return out;
}

export async function runMoneyWorkload(o: MoneyOptions): Promise<WorkloadResult> {
  const txns: TxnOp[] = [];
  const stats: TxnLoopStats = { errors: {} };
  let nextId = 0;
  const ids: string[] = [];
  const loops: Promise<void>[] = [];
  for (let p = 0; p < o.processes; p++) {
    const rng = o.rng.fork();
    const session = new TxnSession(o.clients, `${o.tag}-money-${p}`, o.callTimeoutMs, o.late);
    ids.push(session.transactionalId);
    loops.push(
      (async () => {
        for (let n = 0; n < TXNS_PER_PROCESS_MAX && o.running(); n++) {
          if (!(await ensureInit(session, stats))) continue;
          const from = rng.int(0, o.accounts);
          const to = (from + rng.int(1, o.accounts)) % o.accounts;
          const amount = rng.int(1, AMOUNT_MAX + 1);
          const id = `${o.tag}-m${p}-${n}`;
          const txn = await runOneTxn({
            session,
            process: p,
            nextId: () => nextId++,
            clock: o.clock,
            abortByChoice: rng.bool(o.abortRatio),
            stats,
            body: async (ops: MicroOp[]) => {
              await session.addPartitions([
                { topic: o.topic, partition: from },
                { topic: o.topic, partition: to },
              ]);
              for (const [account, sign] of [
                [from, "-"],
                [to, "+"],
              ] as const) {
                const op = {
                  f: "send" as const,
                  key: `${o.topic}/${account}`,
                  value: `${id}:${sign}${amount}`,
                  offset: undefined as number | undefined,
                };
                ops.push(op);
                op.offset = await session.send(o.topic, account, [op.value]);
              }
            },
          });
          txns.push(txn);
          o.onTxn?.(txn);
        }
      })(),
    );
  }
  await Promise.all(loops);
  return {
    txns,
    transactionalIds: ids,
    keys: Array.from({ length: o.accounts }, (_, partition) => ({ topic: o.topic, partition })),
    stats,
  };
}
