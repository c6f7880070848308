// What a service process takes from its surroundings instead of Node's globals: the time, its
// timers and its randomness. The process entry (libs/server/start-service.ts) builds the real
// one (system-runtime.ts) and hands it to compose() in the ServiceContext; compose() passes it
// down to the parts that read the time, wait or draw random numbers. The whole-system
// simulator builds one on its simulated clock and seed instead. scripts/lint-runtime-globals.mjs
// keeps the globals out of services/ and libs/.
import type { RandomSource } from "./random-source.js";
import type { SchedulingClock } from "./scheduler.js";

export interface ProcessRuntime {
  /** Wall and monotonic time, and the timers on it. */
  readonly clock: SchedulingClock;
  readonly random: RandomSource;
}
