// The runtime of a real process: the system clock and timers, and a random source seeded from
// the operating system's entropy (crypto), so two processes never draw the same sequence.
import { randomBytes } from "node:crypto";
import { SeededRandom } from "../common/prng.js";
import type { ProcessRuntime } from "./process-runtime.js";
import { systemClock } from "./system-clock.js";

export function systemRuntime(): ProcessRuntime {
  return { clock: systemClock, random: new SeededRandom(randomBytes(8).readBigUInt64BE()) };
}
