// What a service process takes from its surroundings instead of Node's globals and grpc-js: the
// time, its timers, its randomness, its calls to other services and its test failpoints. The
// process entry (libs/server/start-service.ts) builds the real one (system-runtime.ts) and
// hands it to compose() in the ServiceContext; compose() passes it down to the parts that read
// the time, wait, draw random numbers, call another process or have failpoints. The whole-system simulator builds one on
// its simulated clock, seed and network instead. scripts/lint-runtime-globals.mjs keeps the
// globals out of services/ and libs/.
import type { Failpoints } from "../common/failpoints.js";
import type { RandomSource } from "./random-source.js";
import type { SchedulingClock } from "./scheduler.js";
import type { ServiceTransport } from "./transport.js";

export interface ProcessRuntime {
  /** Wall and monotonic time, and the timers on it. */
  readonly clock: SchedulingClock;
  readonly random: RandomSource;
  /** Calls to other tern processes' services (controller, brokers, coordinators). */
  readonly transport: ServiceTransport;
  /**
   * The process's failpoints (TERN_FAILPOINTS in a real process): crash, hold, planted faults.
   * Undefined when none is listed (every real deployment): the parts skip them without a call.
   */
  readonly failpoints: Failpoints | undefined;
}
