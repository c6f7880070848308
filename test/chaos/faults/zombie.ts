// A zombie producer on its own transactional id (so that it really writes and never disturbs a
// workload process): it commits one transaction (data + group offset), opens a second one
// (data + group offset), then a new instance of the same id fences it with InitProducerId and
// opens a transaction of its own. Every later request of the zombie (produce to a partition it
// wrote to, produce to a new one, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn)
// must be refused; the new instance then commits. Recorded in the history: the zombie's
// committed transaction (ok), its fenced one (fail: the fence aborts it, so none of its writes
// may ever be visible; the checker's final read proves it), the new instance's (ok). The
// group's committed offset must still be the zombie's first commit. Any accepted request is a
// violation reported as the run anomaly zombie-not-fenced. The idle variant skips the open
// transaction: the zombie is fenced with nothing open, and its first attempt afterwards is a
// KIP-360 re-init with the identity it holds, which must be PRODUCER_FENCED (a coordinator that
// kept the old epoch as the "last" identity handed it the new instance's identity instead).
import type { MicroOp, SendOp, TxnOp } from "../../../libs/verify/history.js";
import {
  errorName,
  pollUntil,
  RETRIABLE,
  type ClusterClients,
} from "../workloads/cluster-clients.js";
import type { RunClock } from "../workloads/txn-loop.js";
import { TxnSession } from "../workloads/txn-session.js";

const ZOMBIE_CALL_TIMEOUT_MS = 15_000;
const OFFSET_READ_WAIT_MS = 30_000;
export const ZOMBIE_PROCESS_BASE = 1_000;
/** Partitions of the run's zombie topic: the zombie writes one, then tries another. */
export const ZOMBIE_TOPIC_PARTITIONS = 2;
const FIRST_COMMIT_OFFSET = 1;
const OPEN_COMMIT_OFFSET = 2;
const AFTER_FENCE_COMMIT_OFFSET = 3;
const FENCING_CODES = new Set(["PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH"]);
const FENCED_CODES = new Set([
  "PRODUCER_FENCED",
  "INVALID_PRODUCER_EPOCH",
  "INVALID_PRODUCER_ID_MAPPING",
  "INVALID_TXN_STATE",
  "TRANSACTIONAL_ID_NOT_FOUND",
]);

export interface ZombieContext {
  readonly clients: ClusterClients;
  readonly clock: RunClock;
  /** The run's topic reserved for zombies (ZOMBIE_TOPIC_PARTITIONS partitions, read at settle). */
  readonly zombieTopic: string;
  /** Zombie ids are <zombiePrefix>-zombie-<step>: the same seed and scenario give the same ids (and coordinators). */
  readonly zombiePrefix: string;
  readonly recordTxn: (txn: Omit<TxnOp, "id">) => void;
}

export interface ZombieOutcome {
  readonly transactionalId: string;
  readonly note: string;
  /** Requests of the fenced zombie that were accepted, and a wrong group offset: each a bug. */
  readonly violations: string[];
}

export function zombieTransactionalId(prefix: string, step: number): string {
  return `${prefix}-zombie-${step}`;
}

function send(ops: MicroOp[], key: string, value: string): SendOp & { offset?: number } {
  const op = { f: "send" as const, key, value, offset: undefined as number | undefined };
  ops.push(op);
  return op;
}

/** Runs call; answers "refused <code>" when the cluster refused it as fenced, else notes the acceptance or the unclear error. */
async function mustBeRefused(
  what: string,
  call: () => Promise<unknown>,
  notes: string[],
  violations: string[],
): Promise<void> {
  try {
    const r = await call();
    violations.push(`${what} after fence ACCEPTED${r === undefined ? "" : ` (${String(r)})`}`);
  } catch (e) {
    const code = errorName(e);
    notes.push(`${what}: ${code}`);
    // A timeout is no proof either way; a non-fencing refusal is noted for the report.
    if (!FENCED_CODES.has(code) && !RETRIABLE.has(code) && code !== "REQUEST_TIMED_OUT")
      notes.push(`(${what}: unexpected ${code})`);
  }
}

async function attempt(what: string, notes: string[], call: () => Promise<void>): Promise<boolean> {
  try {
    await call();
    return true;
  } catch (e) {
    notes.push(`${what} failed: ${errorName(e)}`);
    return false;
  }
}

export async function runZombie(
  ctx: ZombieContext,
  step: number,
  holdMs: number,
  idle = false,
): Promise<ZombieOutcome> {
  const n = step;
  const tid = zombieTransactionalId(ctx.zombiePrefix, n);
  const groupId = `${tid}-group`;
  const process = ZOMBIE_PROCESS_BASE + n;
  const [p0, p1] = [0, 1];
  const key0 = `${ctx.zombieTopic}/${p0}`;
  const notes: string[] = [];
  const violations: string[] = [];
  const outcome = (): ZombieOutcome => ({
    transactionalId: tid,
    note: notes.join("; "),
    violations,
  });
  const zombie = new TxnSession(ctx.clients, tid, ZOMBIE_CALL_TIMEOUT_MS);
  if (!(await attempt("zombie init", notes, async () => void (await zombie.init()))))
    return outcome();

  // 1. A committed transaction: the zombie is a real producer with visible data and offsets.
  const firstOps: MicroOp[] = [];
  const firstInvokedMs = ctx.clock.nowMs();
  const firstOk = await attempt("zombie first transaction", notes, async () => {
    await zombie.addPartitions([{ topic: ctx.zombieTopic, partition: p0 }]);
    const a = send(firstOps, key0, `${tid}-a`);
    a.offset = await zombie.send(ctx.zombieTopic, p0, [a.value]);
    await zombie.addOffsets(groupId);
    await zombie.commitOffsets(groupId, [
      { topic: ctx.zombieTopic, partition: p0, offset: FIRST_COMMIT_OFFSET },
    ]);
    await zombie.end(true);
  });
  ctx.recordTxn({
    process,
    ops: firstOps,
    outcome: firstOk ? "ok" : "unknown",
    invokedMs: firstInvokedMs,
    completedMs: ctx.clock.nowMs(),
  });
  if (!firstOk) return outcome(); // settle fences the id and decides the outcome

  // 2. An open transaction with data and offsets, left hanging while the zombie "pauses".
  const openOps: MicroOp[] = [];
  const openInvokedMs = ctx.clock.nowMs();
  if (!idle)
    await attempt("zombie open transaction", notes, async () => {
      await zombie.addPartitions([{ topic: ctx.zombieTopic, partition: p0 }]);
      const b = send(openOps, key0, `${tid}-b`);
      b.offset = await zombie.send(ctx.zombieTopic, p0, [b.value]);
      await zombie.addOffsets(groupId);
      await zombie.commitOffsets(groupId, [
        { topic: ctx.zombieTopic, partition: p0, offset: OPEN_COMMIT_OFFSET },
      ]);
    });
  await new Promise((r) => setTimeout(r, holdMs));

  // 3. A new instance fences the zombie (its open transaction is aborted) and begins its own.
  const fresh = new TxnSession(ctx.clients, tid, ZOMBIE_CALL_TIMEOUT_MS);
  if (!(await attempt("fencing init", notes, async () => void (await fresh.init())))) {
    ctx.recordTxn({
      process,
      ops: openOps,
      outcome: "unknown",
      invokedMs: openInvokedMs,
      completedMs: ctx.clock.nowMs(),
    });
    return outcome();
  }
  if (idle) {
    // Before the new instance opens anything: the state is Empty, and a coordinator that kept
    // the zombie's epoch as the "last" identity would hand the zombie the new instance's.
    await mustBeRefused(
      "InitProducerId with its held identity",
      async () => {
        const got = await zombie.init({ presentHeld: true });
        return `${got.producerId}/${got.producerEpoch}`;
      },
      notes,
      violations,
    );
  }
  const freshOps: MicroOp[] = [];
  const freshInvokedMs = ctx.clock.nowMs();
  const freshOpen = await attempt("new instance send", notes, async () => {
    await fresh.addPartitions([{ topic: ctx.zombieTopic, partition: p0 }]);
    const d = send(freshOps, key0, `${tid}-d`);
    d.offset = await fresh.send(ctx.zombieTopic, p0, [d.value]);
  });

  // 4. Every request of the zombie must now be refused.
  const c0 = send(openOps, key0, `${tid}-c0`);
  await mustBeRefused(
    "produce to its partition",
    async () => (c0.offset = await zombie.send(ctx.zombieTopic, p0, [c0.value])),
    notes,
    violations,
  );
  const c1 = send(openOps, `${ctx.zombieTopic}/${p1}`, `${tid}-c1`);
  await mustBeRefused(
    "produce to a new partition",
    async () => (c1.offset = await zombie.send(ctx.zombieTopic, p1, [c1.value])),
    notes,
    violations,
  );
  await mustBeRefused(
    "AddPartitionsToTxn",
    () => zombie.addPartitions([{ topic: ctx.zombieTopic, partition: p1 }]),
    notes,
    violations,
  );
  await mustBeRefused("AddOffsetsToTxn", () => zombie.addOffsets(groupId), notes, violations);
  await mustBeRefused(
    "TxnOffsetCommit",
    () =>
      zombie.commitOffsets(groupId, [
        { topic: ctx.zombieTopic, partition: p0, offset: AFTER_FENCE_COMMIT_OFFSET },
      ]),
    notes,
    violations,
  );
  let zombieCommitted = false;
  await mustBeRefused(
    "EndTxn(commit)",
    async () => {
      await zombie.end(true);
      zombieCommitted = true;
    },
    notes,
    violations,
  );
  // The fence aborted this transaction: none of its writes may ever become visible.
  ctx.recordTxn({
    process,
    ops: openOps,
    outcome: zombieCommitted ? "ok" : "fail",
    invokedMs: openInvokedMs,
    completedMs: ctx.clock.nowMs(),
  });

  // 5. The new instance commits; the group offset is still the zombie's first commit.
  let freshFenced = false;
  const freshOk =
    freshOpen &&
    (await attempt("new instance commit", notes, () =>
      fresh.end(true).catch((e: unknown) => {
        freshFenced = FENCING_CODES.has(errorName(e));
        throw e;
      }),
    ));
  // No other instance of this id exists: only the zombie can have fenced the new one.
  if (freshFenced)
    violations.push("the new instance was fenced: a request of the zombie took the id over");
  ctx.recordTxn({
    process,
    ops: freshOps,
    outcome: freshOk ? "ok" : "unknown",
    invokedMs: freshInvokedMs,
    completedMs: ctx.clock.nowMs(),
  });
  const committed = await pollUntil(OFFSET_READ_WAIT_MS, 200, async () => {
    const r = await ctx.clients.groupCall(groupId, "OffsetFetch", {
      partitions: [{ topic: ctx.zombieTopic, partition: p0 }],
      requireStable: true,
    });
    const p = r.partitions?.[0];
    return p && p.errorCode === "NONE" ? Number(p.offset) : undefined;
  });
  if (committed === undefined)
    notes.push(`group offset unreadable within ${OFFSET_READ_WAIT_MS} ms`);
  else if (committed !== FIRST_COMMIT_OFFSET)
    violations.push(
      `group ${groupId} committed offset is ${committed}, expected ${FIRST_COMMIT_OFFSET} (the zombie's only committed offset)`,
    );
  else notes.push(`group offset ${committed} as committed`);
  return outcome();
}
