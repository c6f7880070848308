// The real clock of a process: the host's wall and monotonic time, and Node's timers. Only the
// process entry takes it (system-runtime.ts); everything else gets a Clock and Scheduler passed
// in (process-runtime.ts).
import type { WallClockOffset } from "./clock-offset.js";
import type { SchedulingClock, TimerHandle } from "./scheduler.js";

/**
 * The host's clock: wall and monotonic time, and Node's timers (unref'd: a timer never keeps the
 * process alive). Wall time carries `offset` (the chaos suite's injected skew, clock-offset.ts).
 */
export function offsetSystemClock(offset: WallClockOffset): SchedulingClock {
  return { ...systemClock, nowMs: () => Date.now() + offset.ms() };
}

/** The host's clock without an offset. */
export const systemClock: SchedulingClock = {
  nowMs: () => Date.now(),
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
  // An immediate runs within this turn of the event loop: it never holds the process open.
  setImmediate: (callback) => setImmediate(callback) as unknown as TimerHandle,
  clearTimeout: (timer) => clearTimeout(timer as unknown as NodeJS.Timeout | undefined),
  clearInterval: (timer) => clearInterval(timer as unknown as NodeJS.Timeout | undefined),
  clearImmediate: (timer) => clearImmediate(timer as unknown as NodeJS.Immediate | undefined),
};

/**
 * The system clock for code that runs in an application's process (the SDK, tools): its
 * timers hold the process open as Node's own do, so a retry pause of a call the application
 * awaits keeps the application waiting for the answer instead of letting it exit.
 */
export const applicationClock: SchedulingClock = {
  ...systemClock,
  setTimeout: (callback, delayMs) => setTimeout(callback, delayMs) as unknown as TimerHandle,
  setInterval: (callback, periodMs) => setInterval(callback, periodMs) as unknown as TimerHandle,
};
