// The recorded history of a chaos run or a `tern verify` run, in the style of Jepsen's Kafka
// queue workload.
// Keys are topic-partitions ("topic/partition"); every value sent is unique in the run, so a
// value identifies its write. A transaction is a list of micro-operations: sends, and polls
// that return what a read_committed consumer saw.

export type Outcome = "ok" | "fail" | "unknown";

export interface SendOp {
  readonly f: "send";
  readonly key: string;
  readonly value: string;
  /** The offset the broker acknowledged (known only for an "ok" transaction). */
  readonly offset?: number;
}

export interface PollOp {
  readonly f: "poll";
  /** For each key, the (offset, value) pairs returned, in the order returned. */
  readonly reads: Readonly<Record<string, ReadonlyArray<readonly [number, string]>>>;
}

export type MicroOp = SendOp | PollOp;

export interface TxnOp {
  /** Unique id of the operation within the history. */
  readonly id: number;
  /** The logical process (one producer/consumer pair, one transactional id) that ran it. */
  readonly process: number;
  readonly ops: readonly MicroOp[];
  /** ok = committed, fail = aborted (by choice or refused), unknown = outcome not learned. */
  readonly outcome: Outcome;
  /** Transactions that intended to abort. */
  readonly abortedByChoice?: boolean;
  /** Monotonic ms when the operation was invoked and when its outcome was learned. */
  readonly invokedMs: number;
  readonly completedMs: number;
}

/** The committed consumer offset the process reported after a transaction (copier). */
export interface OffsetCommitRecord {
  readonly process: number;
  readonly key: string;
  readonly lastPolledOffset: number;
  readonly committedOffset: number;
}

export interface History {
  readonly txns: readonly TxnOp[];
  /**
   * The final read_committed read of every key after the faults healed and every
   * transactional id was fenced (settling unknown outcomes): key -> (offset, value) in order.
   */
  readonly finalReads: Readonly<Record<string, ReadonlyArray<readonly [number, string]>>>;
  readonly offsetCommits?: readonly OffsetCommitRecord[];
  /**
   * Copier: a transaction retried after fail/unknown writes the same output values again, so a
   * value may have several writers; the committed one (if any) owns it. Real duplicates still
   * show in the final read (one value at two offsets, copier-not-exactly-once).
   */
  readonly valuesMayRepeat?: boolean;
  /**
   * Copier: input values, and how each input value is transformed into its output value
   * ("suffix-copied": `v:copied`, the raw copier; "demo": scripts/demo/transform.ts, the copier group).
   */
  readonly copier?: {
    readonly inputValues: readonly string[];
    readonly outputKeyPrefix: string;
    readonly transform: "suffix-copied" | "demo";
  };
  /** Money workload: the final balances read, and the total that must be conserved. */
  readonly money?: {
    readonly expectedTotal: number;
    readonly finalBalances: Readonly<Record<string, number>>;
  };
}

export type AnomalyType =
  | "inconsistent-offsets"
  | "duplicate"
  | "lost-write"
  | "aborted-read"
  | "dirty-read"
  | "non-monotonic-send"
  | "non-monotonic-poll"
  | "unseen"
  | "torn-transaction"
  | "copier-not-exactly-once"
  | "money-not-conserved"
  | "committed-offset-mismatch"
  | "g1c-cycle";

export interface Anomaly {
  readonly type: AnomalyType;
  readonly message: string;
  readonly details: Record<string, unknown>;
}

export interface CheckResult {
  readonly valid: boolean;
  readonly anomalies: Readonly<Partial<Record<AnomalyType, number>>>;
  /** At most a few examples per type. */
  readonly examples: readonly Anomaly[];
  readonly counts: { committed: number; aborted: number; unknown: number };
}
