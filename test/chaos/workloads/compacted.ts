// Workload (e), keyed updates to a compacted topic (cleanup.policy=compact): each process owns a
// transactional id; a transaction writes 1-4 key -> value updates to keys drawn from a small set
// spread over the topic's partitions (a key always goes to the same partition), about one in
// ten a delete (a null value: a tombstone), and about one transaction in five aborts by choice.
// Some transactions also write a short-lived key of their process: a value, and in its next
// such write a delete, after which the key is never written again, so that its tombstone ends
// up as the key's latest record in a sealed segment and delete.retention.ms removes it.
// Values are unique in the run and padded, so that small segments roll and the cleaner has
// superseded records to remove while the faults run. Now and then a process reads a partition
// read_committed from offset 0 (records are checked never to be aborted ones). Every write is
// recorded with its acknowledged offset and its transaction's outcome for the compaction checker.
import type { Random } from "../../../libs/common/prng.js";
import type { MicroOp, TxnOp } from "../../../libs/verify/history.js";
import type { KvRecord, KvWrite } from "../checker/compaction-checker.js";
import { readCommittedOnce } from "./compacted-read.js";
import { countError, ensureInit, runOneTxn, type TxnLoopStats } from "./txn-loop.js";
import { TxnSession } from "./txn-session.js";
import type { WorkloadOptions, WorkloadResult } from "./workload.js";

export const COMPACTED_KEYS = 40;
export const COMPACTED_PARTITIONS = 2;
const WRITES_PER_TXN_MAX = 4;
const DELETE_RATIO = 0.1;
/** Higher than the other workloads' 10 %: aborted records are one of the cleaner's rules. */
export const COMPACTED_ABORT_RATIO = 0.2;
const READ_RATIO = 0.05;
const SHORT_LIVED_RATIO = 0.2;
const VALUE_PAD = "x".repeat(200);
const TXNS_PER_PROCESS_MAX = 100_000;

/**
 * The topic's configs: 16 KiB segments rolled at least every 2 s, cleanable at once after 1 s
 * and as soon as anything is dirty, tombstones and markers removed 3 s after the clean that
 * emptied them (so that deletes really go during a run).
 */
export const COMPACTED_TOPIC_CONFIG = {
  "cleanup.policy": "compact",
  "segment.bytes": "16384",
  "segment.ms": "2000",
  "min.cleanable.dirty.ratio": "0.01",
  "min.compaction.lag.ms": "1000",
  "max.compaction.lag.ms": "5000",
  "delete.retention.ms": "3000",
} as const;

export interface CompactedOptions extends WorkloadOptions {
  readonly topic: string;
  readonly partitions: number;
  readonly processes: number;
}

export interface CompactedResult extends WorkloadResult {
  readonly writes: KvWrite[];
  readonly runReads: KvRecord[];
}

export function keyName(i: number): string {
  return `k${i}`;
}

/** A key's partition: fixed, as a keyed producer's partitioner would have it. */
export function partitionOfKey(i: number, partitions: number): number {
  return i % partitions;
}

export async function runCompactedWorkload(o: CompactedOptions): Promise<CompactedResult> {
  const txns: TxnOp[] = [];
  const writes: KvWrite[] = [];
  const runReads: KvRecord[] = [];
  const stats: TxnLoopStats = { errors: {} };
  let nextId = 0;
  const ids: string[] = [];
  const loops: Promise<void>[] = [];
  for (let p = 0; p < o.processes; p++) {
    const rng = o.rng.fork();
    const session = new TxnSession(o.clients, `${o.tag}-compacted-${p}`, o.callTimeoutMs, o.late);
    ids.push(session.transactionalId);
    loops.push(
      processLoop(o, p, rng, session, stats, () => nextId++, {
        txn: (t) => {
          txns.push(t);
          o.onTxn?.(t);
        },
        writes,
        runReads,
      }),
    );
  }
  await Promise.all(loops);
  const keys = Array.from({ length: o.partitions }, (_, partition) => ({
    topic: o.topic,
    partition,
  }));
  return { txns, transactionalIds: ids, keys, stats, writes, runReads };
}

interface Pending {
  readonly partition: number;
  readonly key: string;
  readonly value: string | null;
  offset?: number;
}

async function processLoop(
  o: CompactedOptions,
  process: number,
  rng: Random,
  session: TxnSession,
  stats: TxnLoopStats,
  nextId: () => number,
  out: { txn: (t: TxnOp) => void; writes: KvWrite[]; runReads: KvRecord[] },
): Promise<void> {
  let written = 0;
  /** The process's short-lived key now written (a value) and not deleted yet. */
  let shortLived: { key: string; partition: number } | undefined;
  let shortLivedCount = 0;
  for (let n = 0; n < TXNS_PER_PROCESS_MAX && o.running(); n++) {
    if (rng.bool(READ_RATIO)) {
      const partition = rng.int(0, o.partitions);
      try {
        out.runReads.push(...(await readCommittedOnce(o.clients, o.topic, partition)));
      } catch (e) {
        countError(stats, e);
      }
    }
    if (!(await ensureInit(session, stats))) continue;
    const plan: Array<{ key: string; partition: number; delete: boolean }> = Array.from(
      { length: rng.int(1, WRITES_PER_TXN_MAX + 1) },
      () => {
        const k = rng.int(0, COMPACTED_KEYS);
        return {
          key: keyName(k),
          partition: partitionOfKey(k, o.partitions),
          delete: rng.bool(DELETE_RATIO),
        };
      },
    );
    if (rng.bool(SHORT_LIVED_RATIO)) {
      // Whatever the transaction's outcome, the next short-lived write moves on.
      if (shortLived) plan.push({ ...shortLived, delete: true });
      else {
        const i = shortLivedCount++;
        shortLived = { key: `t${process}-${i}`, partition: i % o.partitions };
        plan.push({ ...shortLived, delete: false });
      }
      if (plan[plan.length - 1]!.delete) shortLived = undefined;
    }
    const pending: Pending[] = [];
    const txn = await runOneTxn({
      session,
      process,
      nextId,
      clock: o.clock,
      abortByChoice: rng.bool(o.abortRatio),
      stats,
      body: async (ops: MicroOp[]) => {
        for (const { key, partition, ...step } of plan) {
          const id = `${o.tag}-c${process}-${written++}`;
          const value = step.delete ? null : `${id}|${VALUE_PAD}`;
          await session.addPartitions([{ topic: o.topic, partition }]);
          // Recorded before the answer: a write whose answer is lost still belongs to the txn.
          const w: Pending = { partition, key, value };
          pending.push(w);
          const op = {
            f: "send" as const,
            key: `${o.topic}/${partition}`,
            value: value ?? `${id}|delete ${key}`,
            offset: undefined as number | undefined,
          };
          ops.push(op);
          w.offset = op.offset = await session.sendKeyed(o.topic, partition, [{ key, value }]);
        }
      },
    });
    out.txn(txn);
    for (const w of pending) out.writes.push({ ...w, outcome: txn.outcome });
  }
}
