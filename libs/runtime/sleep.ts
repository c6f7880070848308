// A pause on a Scheduler: the runtime's timers instead of the global setTimeout, so a
// simulated or manual clock decides when it ends.
import type { Scheduler } from "./scheduler.js";

export function sleep(scheduler: Scheduler, ms: number): Promise<void> {
  return new Promise((resolve) => scheduler.setTimeout(resolve, ms));
}
