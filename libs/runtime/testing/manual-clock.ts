// A clock for tests that moves only when told to (see advance()), so a test's timers fire
// deterministically and without sleeping. libs/common/testing/virtual-time.ts drives it.
import type { Clock } from "../clock.js";
import type { Scheduler, TimerHandle } from "../scheduler.js";

interface ManualTimer {
  readonly handle: TimerHandle;
  readonly callback: () => void;
  dueMs: number;
  /** Undefined for a one-shot timeout. */
  readonly periodMs: number | undefined;
  /** Insertion order: timers due at the same time fire in the order they were set. */
  readonly seq: number;
}

/** Bound on the timers one advance() fires (an interval of 0 ms would otherwise never end). */
const FIRINGS_PER_ADVANCE_MAX = 1_000_000;

/**
 * A clock that moves only when told to. advance(ms) fires every timer due within the step in
 * due-time order (ties in the order they were set), moving the clock to each one's due time
 * before it fires, so a run is deterministic. Timers a callback sets inside the step fire in
 * the same step.
 */
export class ManualClock implements Clock, Scheduler {
  private readonly timers = new Map<TimerHandle, ManualTimer>();
  private readonly immediates = new Map<TimerHandle, NodeJS.Immediate>();
  private nextSeq = 0;

  constructor(private ms = 0) {}

  nowMs(): number {
    return this.ms;
  }
  monotonicMs(): number {
    return this.ms;
  }

  setTimeout(callback: () => void, delayMs: number): TimerHandle {
    return this.add(callback, delayMs, undefined);
  }

  setInterval(callback: () => void, periodMs: number): TimerHandle {
    const stepMs = Math.max(1, periodMs);
    return this.add(callback, stepMs, stepMs);
  }

  /**
   * Immediates take no time, so they run on the real event loop (virtual-time.ts gives them
   * turns between clock steps), not on this clock's queue.
   */
  setImmediate(callback: () => void): TimerHandle {
    const handle = Object.freeze({}) as TimerHandle;
    const immediate = setImmediate(() => {
      this.immediates.delete(handle);
      callback();
    });
    this.immediates.set(handle, immediate);
    return handle;
  }

  clearImmediate(timer: TimerHandle | undefined): void {
    if (timer === undefined) return;
    clearImmediate(this.immediates.get(timer));
    this.immediates.delete(timer);
  }

  clearTimeout(timer: TimerHandle | undefined): void {
    if (timer !== undefined) this.timers.delete(timer);
  }

  clearInterval(timer: TimerHandle | undefined): void {
    this.clearTimeout(timer);
  }

  /** Timers set and not yet fired or cleared (intervals count until cleared). */
  pendingTimers(): number {
    return this.timers.size;
  }

  /** When the next timer falls due (undefined: none set). */
  nextDueMs(): number | undefined {
    return this.nextDue()?.dueMs;
  }

  /** Moves the clock ms forward, firing the timers that fall due on the way. */
  advance(ms: number): void {
    const targetMs = this.ms + Math.max(0, ms);
    for (let fired = 0; ; fired++) {
      const next = this.nextDue();
      if (next === undefined || next.dueMs > targetMs) break;
      if (fired >= FIRINGS_PER_ADVANCE_MAX)
        throw new Error(
          `ManualClock.advance: more than ${FIRINGS_PER_ADVANCE_MAX} firings in one step`,
        );
      this.ms = Math.max(this.ms, next.dueMs);
      if (next.periodMs === undefined) this.timers.delete(next.handle);
      else next.dueMs += next.periodMs;
      next.callback();
    }
    this.ms = targetMs;
  }

  private add(callback: () => void, delayMs: number, periodMs: number | undefined): TimerHandle {
    const handle = Object.freeze({}) as TimerHandle;
    this.timers.set(handle, {
      handle,
      callback,
      dueMs: this.ms + Math.max(0, delayMs),
      periodMs,
      seq: this.nextSeq++,
    });
    return handle;
  }

  private nextDue(): ManualTimer | undefined {
    let best: ManualTimer | undefined;
    for (const t of this.timers.values()) {
      if (
        best === undefined ||
        t.dueMs < best.dueMs ||
        (t.dueMs === best.dueMs && t.seq < best.seq)
      )
        best = t;
    }
    return best;
  }
}
