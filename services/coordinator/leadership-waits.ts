// Requests that reach a __transaction_state replica between two leaders (an election under way,
// or this node's own leadership still loading) wait for the next change of that partition,
// bounded, instead of being answered at once with a code that sends the client into its retry
// backoff: a failover then costs the client the election and the load, not also the backoff
// (docs/transactions.md "Failover time"). Waiting changes no state, so it cannot break safety.
import type { SchedulingClock, TimerHandle } from "../../libs/runtime/scheduler.js";

export class LeadershipWaits {
  private readonly waiters = new Map<number, Set<() => void>>();
  private count = 0;
  private closed = false;

  constructor(
    private readonly clock: SchedulingClock,
    /** Requests waiting at once, over all partitions; past it a request is answered as is. */
    private readonly waitersMax: number,
  ) {}

  /**
   * Resolves at the partition's next change or after timeoutMs; undefined when the request
   * cannot wait (closed, no time left, or waitersMax already waiting): answer it as things are.
   */
  nextChange(partition: number, timeoutMs: number): Promise<void> | undefined {
    if (this.closed || timeoutMs <= 0 || this.count >= this.waitersMax) return undefined;
    return new Promise((resolve) => {
      let set = this.waiters.get(partition);
      if (set === undefined) this.waiters.set(partition, (set = new Set()));
      const waiters = set;
      let timer: TimerHandle | undefined = undefined;
      const wake = (): void => {
        if (!waiters.delete(wake)) return;
        this.count -= 1;
        if (waiters.size === 0 && this.waiters.get(partition) === waiters)
          this.waiters.delete(partition);
        this.clock.clearTimeout(timer);
        resolve();
      };
      waiters.add(wake);
      this.count += 1;
      timer = this.clock.setTimeout(wake, timeoutMs);
    });
  }

  /** The partition's leader, term or load changed: every request waiting on it looks again. */
  changed(partition: number): void {
    const set = this.waiters.get(partition);
    if (set === undefined) return;
    for (const wake of [...set]) wake();
  }

  close(): void {
    this.closed = true;
    for (const set of [...this.waiters.values()]) for (const wake of [...set]) wake();
  }
}
