// What every chaos workload is given and what it returns. Each workload (queue, copier, money)
// adds its own shape (topics, partitions, processes) to WorkloadOptions.
import type { Random } from "../../../libs/common/prng.js";
import type { TxnOp } from "../../../libs/verify/history.js";
import type { LateRequests } from "../faults/late-requests.js";
import type { ClusterClients } from "./cluster-clients.js";
import type { RunClock, TxnLoopStats } from "./txn-loop.js";

export interface WorkloadOptions {
  /** Makes transactional ids and values unique to this run. */
  readonly tag: string;
  /** Share of transactions aborted by choice. */
  readonly abortRatio: number;
  readonly rng: Random;
  readonly clients: ClusterClients;
  readonly clock: RunClock;
  readonly callTimeoutMs: number;
  readonly late?: LateRequests;
  /** The workload runs while this answers true. */
  readonly running: () => boolean;
  readonly onTxn?: (txn: TxnOp) => void;
}

export interface WorkloadResult {
  readonly txns: TxnOp[];
  readonly transactionalIds: string[];
  readonly keys: Array<{ topic: string; partition: number }>;
  readonly stats: TxnLoopStats;
}
