// The runtime of a real process: the system clock and timers, and a random source seeded from
// the operating system's entropy (system-random.ts), so two processes never draw the same sequence.
import type { ProcessRuntime } from "./process-runtime.js";
import { systemClock } from "./system-clock.js";
import { systemRandom } from "./system-random.js";

export function systemRuntime(): ProcessRuntime {
  return { clock: systemClock, random: systemRandom() };
}
