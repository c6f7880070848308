// Clock skew: every chaos node reads the offset in its own file (libs/runtime/clock-offset.ts,
// TERN_CLOCK_OFFSET_FILE) into its wall clock, re-reading it every 100 ms and acknowledging the
// value in effect in "<file>.applied". A jump rewrites the file; the acknowledgement is the proof
// the process's clock moved. The file outlives restarts, like a host's clock. A probe
// transaction on the skewed coordinator stays open across the steps and must then commit.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { parseClockOffset } from "../../../libs/runtime/clock-offset.js";
import { partitionFor, TXN_LOG_PARTITIONS_DEFAULT } from "../../../libs/common/hash.js";
import type { MicroOp, TxnOp } from "../../../libs/verify/history.js";
import type { ChaosCluster, NodeRef } from "../cluster/chaos-cluster.js";
import { errorName, pollUntil, type ClusterClients } from "../workloads/cluster-clients.js";
import type { RunClock } from "../workloads/txn-loop.js";
import { TxnSession } from "../workloads/txn-session.js";

/** Bound on a process's wait to take a new offset (it re-reads every 100 ms). */
export const CLOCK_APPLY_WAIT_MS = 5_000;
/** Skews drawn by scenarios: seconds to minutes, either way. */
export const SKEW_MS_MIN = 2_000;
export const SKEW_MS_MAX = 180_000;

export function setClockOffset(cluster: ChaosCluster, node: NodeRef, offsetMs: number): void {
  const file = cluster.clockOffsetFile(node);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${Math.round(offsetMs)}\n`);
}

/** The offset the node's process says is in effect (undefined before it ever acknowledged one). */
export function appliedClockOffset(cluster: ChaosCluster, node: NodeRef): number | undefined {
  try {
    return parseClockOffset(readFileSync(`${cluster.clockOffsetFile(node)}.applied`, "utf8"));
  } catch {
    return undefined;
  }
}

/** Waits (bounded) until the node's process runs with offsetMs; false if it never did. */
export async function waitClockApplied(
  cluster: ChaosCluster,
  node: NodeRef,
  offsetMs: number,
): Promise<boolean> {
  const applied = await pollUntil(CLOCK_APPLY_WAIT_MS, 50, async () =>
    appliedClockOffset(cluster, node) === Math.round(offsetMs) ? true : undefined,
  );
  return applied === true;
}

export function formatOffset(offsetMs: number): string {
  return `${offsetMs >= 0 ? "+" : ""}${(offsetMs / 1000).toFixed(1)} s`;
}

/** The probe's codes that say its coordinator ended the transaction (a timeout abort fences the producer). */
const ENDED_CODES = new Set([
  "TRANSACTION_TIMED_OUT",
  "PRODUCER_FENCED",
  "INVALID_PRODUCER_EPOCH",
  "INVALID_TXN_STATE",
]);
const PROBE_CALL_TIMEOUT_MS = 15_000;
/** The probe's id is <prefix>-skew-<step>-<k>, k the first whose coordinator partition is the target's. */
const PROBE_ID_TRIES_MAX = 100_000;

export interface ProbeContext {
  readonly clients: ClusterClients;
  readonly clock: RunClock;
  /** A topic of the run outside the workload's checks (the zombie topic), read at settle. */
  readonly topic: string;
  readonly prefix: string;
  readonly recordTxn: (txn: Omit<TxnOp, "id">) => void;
}

/**
 * A transaction held open across a coordinator's clock steps (well inside its 60 s timeout),
 * committed after the clock is back: it must commit. A coordinator that compares wall clocks
 * aborts it (and fences its producer) at the first step forward past the timeout.
 */
export class SkewProbe {
  private session: TxnSession | undefined;
  private readonly ops: MicroOp[] = [];
  private openedMs = 0;
  readonly transactionalId: string;

  constructor(
    private readonly ctx: ProbeContext,
    private readonly step: number,
    txnStatePartition: number,
  ) {
    let id = "";
    for (let k = 0; k < PROBE_ID_TRIES_MAX; k++) {
      id = `${ctx.prefix}-skew-${step}-${k}`;
      if (partitionFor(id, TXN_LOG_PARTITIONS_DEFAULT) === txnStatePartition) break;
    }
    this.transactionalId = id;
  }

  get key(): { topic: string; partition: number } {
    return { topic: this.ctx.topic, partition: 1 };
  }

  /** Opens the transaction with one record; a note when it could not. */
  async open(): Promise<string | undefined> {
    const session = new TxnSession(this.ctx.clients, this.transactionalId, PROBE_CALL_TIMEOUT_MS);
    this.openedMs = this.ctx.clock.nowMs();
    try {
      await session.init();
      await session.addPartitions([this.key]);
      const op = {
        f: "send" as const,
        key: `${this.key.topic}/${this.key.partition}`,
        value: `${this.transactionalId}-v`,
        offset: undefined as number | undefined,
      };
      this.ops.push(op);
      op.offset = await session.send(this.key.topic, this.key.partition, [op.value]);
      this.session = session;
      return undefined;
    } catch (e) {
      this.record("unknown");
      return `probe transaction not opened: ${errorName(e)}`;
    }
  }

  /** Commits; a violation when the coordinator had ended the transaction, else a note. */
  async commit(): Promise<{ note: string; violation?: string }> {
    if (!this.session) return { note: "no probe transaction" };
    const openS = ((this.ctx.clock.nowMs() - this.openedMs) / 1000).toFixed(1);
    try {
      await this.session.end(true);
      this.record("ok");
      return { note: `probe transaction open ${openS} s across the steps committed` };
    } catch (e) {
      const code = errorName(e);
      this.record("unknown");
      if (ENDED_CODES.has(code))
        return {
          note: `probe transaction refused: ${code}`,
          violation: `a transaction open ${openS} s (timeout 60 s) was ended by its coordinator's clock step: commit answered ${code}`,
        };
      return { note: `probe commit failed: ${code}` };
    }
  }

  private record(outcome: TxnOp["outcome"]): void {
    this.ctx.recordTxn({
      process: SKEW_PROBE_PROCESS_BASE + this.step,
      ops: [...this.ops],
      outcome,
      invokedMs: this.openedMs,
      completedMs: this.ctx.clock.nowMs(),
    });
  }
}

const SKEW_PROBE_PROCESS_BASE = 2_000;
