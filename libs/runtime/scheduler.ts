// Scheduling on a clock. Code that waits goes through a Scheduler, so a test drives its timers
// with ManualClock.advance() (testing/manual-clock.ts) instead of sleeping, and the simulator
// runs them in its own order.
import type { Clock } from "./clock.js";

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
  /** Runs callback after the current event-loop task, before any timer (no time passes). */
  setImmediate(callback: () => void): TimerHandle;
  /** Cancels a timeout; undefined and fired timers are ignored. */
  clearTimeout(timer: TimerHandle | undefined): void;
  /** Cancels an interval; undefined is ignored. */
  clearInterval(timer: TimerHandle | undefined): void;
  /** Cancels an immediate; undefined and run ones are ignored. */
  clearImmediate(timer: TimerHandle | undefined): void;
}

/** A clock that can schedule: what most parts of a service take. */
export type SchedulingClock = Clock & Scheduler;
