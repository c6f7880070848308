// One pending transition per transactional id: a FIFO lock per id. Whoever holds it may propose
// a transition of that id; a completion (markers then Complete*) keeps holding it, so the next
// request waits for the previous completion here instead of bouncing CONCURRENT_TRANSACTIONS.
// Waiting is bounded in time and in waiters.
import type { Scheduler, TimerHandle } from "../../libs/runtime/scheduler.js";
import { TernError } from "../../libs/common/errors.js";

export type Release = () => void;

export class TxnLocks {
  private readonly tails = new Map<string, { tail: Promise<void>; waiters: number }>();

  constructor(
    private readonly scheduler: Scheduler,
    private readonly waitersPerIdMax = 32,
  ) {}

  isLocked(transactionalId: string): boolean {
    return this.tails.has(transactionalId);
  }

  /** The lock if free right now, else undefined. */
  tryAcquire(transactionalId: string): Release | undefined {
    if (this.tails.has(transactionalId)) return undefined;
    return this.enqueue(transactionalId).release;
  }

  /** Waits at most waitMs for the lock; CONCURRENT_TRANSACTIONS (retriable) past that. */
  async acquire(transactionalId: string, waitMs: number): Promise<Release> {
    const entry = this.tails.get(transactionalId);
    if (entry !== undefined && entry.waiters >= this.waitersPerIdMax) {
      throw new TernError(
        "CONCURRENT_TRANSACTIONS",
        `too many requests waiting on transactional id ${transactionalId}`,
      );
    }
    const { previous, release } = this.enqueue(transactionalId);
    let timer: TimerHandle | undefined;
    const timedOut = new Promise<"timeout">((resolve) => {
      timer = this.scheduler.setTimeout(() => resolve("timeout"), waitMs);
    });
    const outcome = await Promise.race([previous.then(() => "ok" as const), timedOut]);
    this.scheduler.clearTimeout(timer);
    if (outcome === "timeout") {
      // Give our turn back as soon as it comes, so later waiters are not stuck behind us.
      void previous.then(release);
      throw new TernError(
        "CONCURRENT_TRANSACTIONS",
        `the previous transition of ${transactionalId} did not complete within ${waitMs} ms`,
      );
    }
    return release;
  }

  private enqueue(transactionalId: string): { previous: Promise<void>; release: Release } {
    const entry = this.tails.get(transactionalId) ?? { tail: Promise.resolve(), waiters: 0 };
    const previous = entry.tail;
    let resolveMine!: () => void;
    const mine = new Promise<void>((resolve) => {
      resolveMine = resolve;
    });
    const tail = previous.then(() => mine);
    entry.tail = tail;
    entry.waiters++;
    this.tails.set(transactionalId, entry);
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      entry.waiters--;
      resolveMine();
      if (entry.waiters === 0 && this.tails.get(transactionalId) === entry)
        this.tails.delete(transactionalId);
    };
    return { previous, release };
  }
}
