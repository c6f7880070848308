// The time the controller leader stamps into commands (registrations, heartbeats, ticks): the
// state machine keeps the newest stamp as the replicated clock that leases and re-placement run
// on. A stamp is the replicated clock this leadership began with (or this host's wall clock then,
// if later) advanced by the monotonic clock, so a step of the wall clock during a leadership
// moves no lease. Stamping the wall clock itself, a step forward expired every live lease at the
// next tick (and could re-place a node dead for a moment), and a step back froze the replicated
// clock (it only moves forward), hiding every dead node until the wall clock caught up. The wall
// clock is read once per leadership: a new leader waits a full lease before expiring anyone
// (liveness-monitor.ts), and the heartbeats meanwhile are stamped on the same base.
import type { Clock } from "../../libs/runtime/clock.js";

export class LeaderStampClock implements Clock {
  private term = -1;
  private baseMs = 0;
  private baseMonotonicMs = 0;

  constructor(
    private readonly clock: Clock,
    private readonly group: { term(): number },
    /** The replicated clock: the newest stamp the state machine applied. */
    private readonly replicatedNowMs: () => number,
  ) {}

  nowMs(): number {
    const term = this.group.term();
    if (term !== this.term) {
      this.term = term;
      this.baseMs = Math.max(this.replicatedNowMs(), this.clock.nowMs());
      this.baseMonotonicMs = this.clock.monotonicMs();
    }
    return this.baseMs + (this.clock.monotonicMs() - this.baseMonotonicMs);
  }

  monotonicMs(): number {
    return this.clock.monotonicMs();
  }
}
