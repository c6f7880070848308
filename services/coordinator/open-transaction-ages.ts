// How long each open transaction of one leadership has been open, on the monotonic clock. A
// record's txnStartTimeMs is the wall clock of the leader that opened it (ListTransactions and
// DescribeTransactions show it); a wall clock can step by minutes (NTP, a VM resumed, an
// operator), and a step forward must not abort a transaction early, nor a step back keep one
// open past its timeout. So the leader times a transaction from when it first saw it open:
// the wall-clock age it had then counts up to one timeout scan (the scan sees a transaction of
// its own within one interval of its start; a larger age is a clock that disagrees), the rest
// is monotonic. After a failover the new leader gives an open transaction a full timeout from
// its first scan: never early, at most one timeout late.
import type { Clock } from "../../libs/runtime/clock.js";
import type { TxnRecord } from "./transaction-metadata.js";

interface Seen {
  /** The transaction: producer, epoch and start time identify it across scans. */
  readonly key: string;
  /** Monotonic ms at which it counts as begun. */
  readonly sinceMs: number;
}

export class OpenTransactionAges {
  private readonly seen = new Map<string, Seen>();

  constructor(
    private readonly clock: Clock,
    /** The most wall-clock age a first sight credits: the timeout scan's interval. */
    private readonly wallCreditMaxMs: number,
  ) {}

  /** True once an Ongoing transaction has been open for its timeout; tracks it from its first sight. */
  timedOut(record: TxnRecord): boolean {
    if (record.state !== "Ongoing") {
      this.seen.delete(record.transactionalId);
      return false;
    }
    const key = `${record.producerId}/${record.producerEpoch}/${record.txnStartTimeMs}`;
    const nowMs = this.clock.monotonicMs();
    let s = this.seen.get(record.transactionalId);
    if (s === undefined || s.key !== key) {
      const wallAgeMs = this.clock.nowMs() - record.txnStartTimeMs;
      const creditMs = Math.min(Math.max(0, wallAgeMs), this.wallCreditMaxMs);
      s = { key, sinceMs: nowMs - creditMs };
      this.seen.set(record.transactionalId, s);
    }
    return nowMs - s.sinceMs >= record.timeoutMs;
  }

  /** Forgets ids not in keep (ended or expired since). */
  retain(keep: ReadonlySet<string>): void {
    for (const id of this.seen.keys()) if (!keep.has(id)) this.seen.delete(id);
  }
}
