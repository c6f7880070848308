// Time is injected so that the simulator and unit tests can run on a fake clock: reading the
// time (Clock) and scheduling on it (Scheduler). Code that waits goes through a Scheduler, so a
// test drives its timers with ManualClock.advance() instead of sleeping.
import { wallClockOffsetMs } from "./clock-offset.js";

export interface Clock {
  /** Milliseconds since the epoch (wall clock, for timestamps shown to people). */
  nowMs(): number;
  /** Monotonic milliseconds, for timeouts and durations. */
  monotonicMs(): number;
}

declare const timerBrand: unique symbol;
/** An opaque handle of a scheduled callback. */
export interface TimerHandle {
  readonly [timerBrand]: true;
}

/** Timers on a clock. The system timers do not keep the process alive (unref). */
export interface Scheduler {
  /** Runs callback once, delayMs from now (a negative or zero delay: on the next firing). */
  setTimeout(callback: () => void, delayMs: number): TimerHandle;
  /** Runs callback every periodMs until cleared. */
  setInterval(callback: () => void, periodMs: number): TimerHandle;
  /** Cancels a timeout; undefined and fired timers are ignored. */
  clearTimeout(timer: TimerHandle | undefined): void;
  /** Cancels an interval; undefined is ignored. */
  clearInterval(timer: TimerHandle | undefined): void;
}

/** A clock that can schedule: what the coordinator's parts take. */
export type SchedulingClock = Clock & Scheduler;

/**
 * The process's clock: wall and monotonic time, and Node's timers (unref'd). Wall time carries
 * the chaos suite's injected offset (clock-offset.ts; 0 unless TERN_CLOCK_OFFSET_FILE is set).
 */
export const systemClock: SchedulingClock = {
  nowMs: () => Date.now() + wallClockOffsetMs(),
  monotonicMs: () => performance.now(),
  setTimeout: (callback, delayMs) => {
    const timer = setTimeout(callback, delayMs);
    timer.unref();
    return timer as unknown as TimerHandle;
  },
  setInterval: (callback, periodMs) => {
    const timer = setInterval(callback, periodMs);
    timer.unref();
    return timer as unknown as TimerHandle;
  },
  clearTimeout: (timer) => clearTimeout(timer as unknown as NodeJS.Timeout | undefined),
  clearInterval: (timer) => clearInterval(timer as unknown as NodeJS.Timeout | undefined),
};

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
