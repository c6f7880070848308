// Where a process's random choices come from (jitter, backoff spread, tie breaks). A process
// gets one from its runtime (process-runtime.ts): seeded from the operating system in a real
// process, from the run's seed in the simulator, so a simulated run replays exactly.
import type { Random } from "../common/prng.js";

export type RandomSource = Random;
