// The runtime of a real process: the system clock and timers (wall time skewed only by the chaos
// suite's TERN_CLOCK_OFFSET_FILE, clock-offset.ts), and a random source seeded from the operating
// system's entropy (crypto), so two processes never draw the same sequence. The process entry
// builds it once.
import { randomBytes } from "node:crypto";
import { SeededRandom } from "../common/prng.js";
import { clockOffsetFromEnv, NO_CLOCK_OFFSET } from "./clock-offset.js";
import type { ProcessRuntime } from "./process-runtime.js";
import { offsetSystemClock, systemClock } from "./system-clock.js";

export function systemRuntime(env: NodeJS.ProcessEnv = process.env): ProcessRuntime {
  const offset = clockOffsetFromEnv(env);
  return {
    clock: offset === NO_CLOCK_OFFSET ? systemClock : offsetSystemClock(offset),
    random: new SeededRandom(randomBytes(8).readBigUInt64BE()),
  };
}
