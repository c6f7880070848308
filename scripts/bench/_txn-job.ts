// The contract between the txn benchmark (scripts/bench/txn.ts) and its client process
// (_txn-worker.ts): one job per JSON line on its stdin, one WorkerAnswer per line on its stdout.
import type { IsolationLevel } from "../../libs/client/index.js";

export interface ProduceJob {
  readonly kind: "produce";
  readonly bootstrap: string;
  readonly topic: string;
  readonly durationS: number;
  readonly recordBytes: number;
  /** Producer batch.size; the same for both cases so only transactions differ. */
  readonly batchBytes: number;
  readonly lingerMs: number;
  /** Producer maxInFlightPerPartition (1..5). */
  readonly maxInFlightPerPartition: number;
  /** Records handed to send() and not yet acknowledged; bounds the client's memory. */
  readonly pendingRecordsMax: number;
  /** Set for the transactional case: commit every commitIntervalMs. */
  readonly transactionalId?: string;
  readonly commitIntervalMs: number;
}

export interface FetchJob {
  readonly kind: "fetch";
  readonly bootstrap: string;
  readonly topic: string;
  readonly partitions: number;
  readonly isolation: IsolationLevel;
  readonly partitionMaxBytes: number;
  /** Upper bound of the whole read. */
  readonly timeoutS: number;
}

/**
 * Small transactions at a fixed rate (one record per partition each), so that the cluster's CPU
 * per transaction can be measured without the records' own cost swamping it.
 */
export interface PacedJob {
  readonly kind: "paced";
  readonly bootstrap: string;
  readonly topic: string;
  readonly partitions: number;
  readonly transactionalId: string;
  readonly transactionsPerS: number;
  readonly durationS: number;
  readonly recordBytes: number;
}

export type Job = ProduceJob | FetchJob | PacedJob;

export interface ProduceResult {
  readonly kind: "produce";
  /** Acknowledged records (transactional: records of committed transactions only). */
  readonly records: number;
  readonly bytes: number;
  /** Committed before the clock started (in the topic, so a full read returns records + these). */
  readonly warmupRecords: number;
  /** From the first send to the last acknowledgement (or commit). */
  readonly elapsedS: number;
  /** Records whose send failed (or whose transaction was aborted). */
  readonly failedRecords: number;
  readonly commits: number;
  readonly aborts: number;
  /** One sample per commit (at most durationS * 1000 / commitIntervalMs of them). */
  readonly commitLatenciesMs: readonly number[];
}

export interface FetchResult {
  readonly kind: "fetch";
  readonly records: number;
  /** Value bytes of the records returned. */
  readonly bytes: number;
  /** From the first poll to the poll that returned the last record. */
  readonly elapsedS: number;
  /** Sum over partitions of the end offset (HW, or LSO under read_committed) read up to. */
  readonly endOffsetSum: string;
  /** True when every partition's position reached its end offset (not stopped by idleness or timeout). */
  readonly complete: boolean;
}

export interface PacedResult {
  readonly kind: "paced";
  readonly commits: number;
  readonly aborts: number;
  readonly elapsedS: number;
  /** From beginTransaction to the end of commitTransaction, one sample per commit. */
  readonly transactionLatenciesMs: readonly number[];
}

export type JobResult = ProduceResult | FetchResult | PacedResult;

export type WorkerAnswer =
  | { readonly ok: true; readonly result: JobResult }
  | { readonly ok: false; readonly error: string };
