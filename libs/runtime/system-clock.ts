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
