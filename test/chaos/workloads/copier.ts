// Workload (b), the copier (consume-transform-produce): input values are committed to an input
// topic first; then one copier per input partition loops: read its group's committed offset
// (require_stable), poll records from there, and in one transaction write "v:copied" to the
// same output partition and commit the input offset (AddOffsetsToTxn + TxnOffsetCommit).
// After each commit the group offset is read back and recorded (must be last polled + 1).
// Copiers keep going after the fault window until every input is copied (bounded).
import type { MicroOp, OffsetCommitRecord, TxnOp } from "../../../libs/verify/history.js";
import { errorName, sleep } from "./cluster-clients.js";
import { ensureInit, runOneTxn, type TxnLoopStats } from "./txn-loop.js";
import { TxnSession } from "./txn-session.js";
import type { WorkloadOptions, WorkloadResult } from "./workload.js";

const INPUTS_PER_SEED_TXN = 50;
const POLL_RECORDS_MAX = 8;
const IDLE_MS = 200;
const LOOPS_MAX = 100_000;
const SEED_PROCESS = 500;
/** Longest wait of a paced copier before it looks again. */
const PACE_SLEEP_MAX_MS = 200;

/** `running` gates the start: after seeding the input, copiers wait until it answers true. */
export interface CopierOptions extends WorkloadOptions {
  readonly inTopic: string;
  readonly outTopic: string;
  readonly partitions: number;
  readonly inputsPerPartition: number;
  readonly groupId: string;
  /** Copiers stop at this monotonic ms even when input is left (liveness failure then shows). */
  readonly hardStopMs: () => number;
  /**
   * While the run lasts, a copier copies no faster than its input spread over this many ms, so
   * the copying covers the fault window on a fast machine too (without it, a copier could be
   * done before the fault: a failpoint on the copy path would never be reached). Afterwards it
   * copies the rest as fast as it can.
   */
  readonly paceOverMs?: number;
}

export interface CopierResult extends WorkloadResult {
  readonly inputValues: string[];
  readonly offsetCommits: OffsetCommitRecord[];
}

/** Commits every input value (before the faults); answers the values per partition. */
export async function seedCopierInput(
  o: CopierOptions,
  txns: TxnOp[],
  stats: TxnLoopStats,
): Promise<{ values: string[][]; lastOffsets: number[] }> {
  const session = new TxnSession(o.clients, `${o.tag}-copier-seed`, o.callTimeoutMs);
  const values: string[][] = Array.from({ length: o.partitions }, () => []);
  const lastOffsets: number[] = Array.from({ length: o.partitions }, () => -1);
  for (let p = 0; p < o.partitions; p++) {
    for (let i = 0; i < o.inputsPerPartition;) {
      if (!(await ensureInit(session, stats))) continue;
      const batch = Array.from(
        { length: Math.min(INPUTS_PER_SEED_TXN, o.inputsPerPartition - i) },
        (_, j) => `${o.tag}-in-${p}-${i + j}`,
      );
      const txn = await runOneTxn({
        session,
        process: SEED_PROCESS,
        nextId: () => txns.length,
        clock: o.clock,
        abortByChoice: false,
        stats,
        body: async (ops: MicroOp[]) => {
          await session.addPartitions([{ topic: o.inTopic, partition: p }]);
          const sends = batch.map((value) => ({
            f: "send" as const,
            key: `${o.inTopic}/${p}`,
            value,
            offset: undefined as number | undefined,
          }));
          ops.push(...sends);
          const base = await session.send(o.inTopic, p, batch);
          sends.forEach((s, j) => (s.offset = base + j));
          lastOffsets[p] = base + batch.length - 1;
        },
      });
      txns.push(txn);
      if (txn.outcome === "ok") {
        values[p]!.push(...batch);
        i += batch.length;
      } else if (txn.outcome === "unknown") {
        throw new Error(
          `seeding the copier input left an unknown outcome (${JSON.stringify(stats.errors)})`,
        );
      }
    }
  }
  return { values, lastOffsets };
}

async function committedOffset(o: CopierOptions, partition: number): Promise<number | undefined> {
  try {
    const r = await o.clients.groupCall(o.groupId, "OffsetFetch", {
      partitions: [{ topic: o.inTopic, partition }],
      requireStable: true,
    });
    const p = r.partitions?.[0];
    if (!p || p.errorCode !== "NONE") return undefined;
    return Math.max(0, Number(p.offset));
  } catch {
    return undefined;
  }
}

export async function runCopierWorkload(
  o: CopierOptions,
  seeded: { txns: TxnOp[]; values: string[][]; lastOffsets: number[] },
): Promise<CopierResult> {
  const txns = seeded.txns;
  const stats: TxnLoopStats = { errors: {} };
  const offsetCommits: OffsetCommitRecord[] = [];
  const ids: string[] = [`${o.tag}-copier-seed`];
  const loops: Promise<void>[] = [];
  const startMs = o.clock.nowMs();
  for (let p = 0; p < o.partitions; p++) {
    const rng = o.rng.fork();
    const session = new TxnSession(o.clients, `${o.tag}-copier-${p}`, o.callTimeoutMs, o.late);
    ids.push(session.transactionalId);
    const lastInput = seeded.lastOffsets[p]!;
    loops.push(
      (async () => {
        for (let n = 0; n < LOOPS_MAX && o.clock.nowMs() < o.hardStopMs(); n++) {
          if (!(await ensureInit(session, stats))) continue;
          const position = await committedOffset(o, p);
          if (position !== undefined && position > lastInput) return; // everything copied
          if (position === undefined) {
            await sleep(IDLE_MS);
            continue;
          }
          if (o.paceOverMs !== undefined && o.running()) {
            const waitMs = Math.min(
              startMs + (position / (lastInput + 1)) * o.paceOverMs - o.clock.nowMs(),
              PACE_SLEEP_MAX_MS,
            );
            if (waitMs > 0) {
              await sleep(waitMs);
              continue;
            }
          }
          const fetched = await o.clients.fetchCommitted(o.inTopic, p, position).catch((e) => {
            stats.errors[errorName(e)] = (stats.errors[errorName(e)] ?? 0) + 1;
            return undefined;
          });
          const pairs = (fetched?.records ?? [])
            .filter(([off]) => off >= position)
            .slice(0, POLL_RECORDS_MAX);
          if (pairs.length === 0) {
            await sleep(IDLE_MS);
            continue;
          }
          const last = pairs[pairs.length - 1]![0];
          const txn = await runOneTxn({
            session,
            process: p,
            nextId: () => txns.length,
            clock: o.clock,
            abortByChoice: o.running() && rng.bool(o.abortRatio),
            stats,
            body: async (ops: MicroOp[]) => {
              ops.push({ f: "poll", reads: { [`${o.inTopic}/${p}`]: pairs } });
              await session.addPartitions([{ topic: o.outTopic, partition: p }]);
              const values = pairs.map(([, v]) => `${v}:copied`);
              const sends = values.map((value) => ({
                f: "send" as const,
                key: `${o.outTopic}/${p}`,
                value,
                offset: undefined as number | undefined,
              }));
              ops.push(...sends);
              const base = await session.send(o.outTopic, p, values);
              sends.forEach((s, j) => (s.offset = base + j));
              await session.addOffsets(o.groupId);
              await session.commitOffsets(o.groupId, [
                { topic: o.inTopic, partition: p, offset: last + 1 },
              ]);
            },
          });
          txns.push(txn);
          o.onTxn?.(txn);
          if (txn.outcome === "ok") {
            const committed = await committedOffset(o, p);
            if (committed !== undefined)
              offsetCommits.push({
                process: p,
                key: `${o.inTopic}/${p}`,
                lastPolledOffset: last,
                committedOffset: committed,
              });
          }
        }
      })(),
    );
  }
  await Promise.all(loops);
  const keys = [o.inTopic, o.outTopic].flatMap((topic) =>
    Array.from({ length: o.partitions }, (_, partition) => ({ topic, partition })),
  );
  return {
    txns,
    transactionalIds: ids,
    keys,
    stats,
    inputValues: seeded.values.flat(),
    offsetCommits,
  };
}
