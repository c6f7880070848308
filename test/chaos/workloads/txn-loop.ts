// Runs one transaction of a workload process and classifies its outcome the way Jepsen does:
// ok when EndTxn(commit) was acknowledged, fail when an abort was acknowledged (by choice or
// after an error), unknown otherwise (the final settle decides). After unknown the session is
// re-initialised, which fences the old epoch and completes whatever it left behind.
import type { MicroOp, TxnOp } from "../../../libs/verify/history.js";
import { sleep } from "./cluster-clients.js";
import type { TxnSession } from "./txn-session.js";

const INIT_BACKOFF_MS = 300;

export interface RunClock {
  /** Monotonic ms since the run began. */
  nowMs(): number;
}

export interface TxnLoopStats {
  errors: Record<string, number>;
}

export function countError(stats: TxnLoopStats, e: unknown): void {
  const name =
    (e as { errorName?: string }).errorName ?? (e as Error).message?.slice(0, 60) ?? String(e);
  stats.errors[name] = (stats.errors[name] ?? 0) + 1;
}

/** Ensures the session has a producer id; false (after one attempt and a pause) when it could not get one. */
export async function ensureInit(session: TxnSession, stats: TxnLoopStats): Promise<boolean> {
  if (session.identity) return true;
  try {
    await session.init();
    return true;
  } catch (e) {
    countError(stats, e);
    await sleep(INIT_BACKOFF_MS);
    return false;
  }
}

export async function runOneTxn(options: {
  session: TxnSession;
  process: number;
  nextId: () => number;
  clock: RunClock;
  abortByChoice: boolean;
  stats: TxnLoopStats;
  body: (ops: MicroOp[]) => Promise<void>;
}): Promise<TxnOp> {
  const { session, clock, stats } = options;
  const ops: MicroOp[] = [];
  const invokedMs = clock.nowMs();
  let outcome: TxnOp["outcome"];
  try {
    await options.body(ops);
    try {
      await session.end(!options.abortByChoice);
      outcome = options.abortByChoice ? "fail" : "ok";
    } catch (e) {
      countError(stats, e);
      outcome = "unknown";
    }
  } catch (e) {
    countError(stats, e);
    try {
      await session.end(false);
      outcome = "fail";
    } catch (e2) {
      countError(stats, e2);
      outcome = "unknown";
    }
  }
  if (outcome === "unknown") session.identity = undefined;
  return {
    id: options.nextId(),
    process: options.process,
    ops,
    outcome,
    abortedByChoice: options.abortByChoice || undefined,
    invokedMs,
    completedMs: clock.nowMs(),
  };
}
