// Test support: waiting without sleeping. The code under test schedules its timers on a
// ManualClock; these helpers give the event loop a bounded number of turns (for promise chains
// and setImmediate hops, which take no time) and move the clock only when the turns are spent,
// so a test's waits are bounded in virtual milliseconds and a run is deterministic.
import type { ManualClock } from "../../runtime/testing/manual-clock.js";

export interface DriveOptions {
  /** Virtual milliseconds per clock step; by default the clock jumps to the next timer due. */
  readonly stepMs?: number;
  /** Bound on the virtual time a wait may take before it fails. */
  readonly virtualMsMax?: number;
  /** Event-loop turns given between two clock steps. */
  readonly turnsPerStep?: number;
}

/** The step when no timer is set (something outside the clock may still make progress). */
const IDLE_STEP_MS = 1;
const VIRTUAL_MS_MAX_DEFAULT = 10_000;
const TURNS_PER_STEP_DEFAULT = 20;

/** One turn of the event loop: pending promise callbacks and the setImmediate callbacks queued before it. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Gives the event loop turns without moving the clock. */
export async function turns(count = TURNS_PER_STEP_DEFAULT): Promise<void> {
  for (let i = 0; i < count; i++) await nextTurn();
}

/** Resolves with probe's first truthy answer; moves the clock stepMs at a time while there is none. */
export async function runUntil<T>(
  clock: ManualClock,
  what: string,
  probe: () => T | undefined | false | null,
  options: DriveOptions = {},
): Promise<T> {
  const virtualMsMax = options.virtualMsMax ?? VIRTUAL_MS_MAX_DEFAULT;
  const turnsPerStep = options.turnsPerStep ?? TURNS_PER_STEP_DEFAULT;
  const deadlineMs = clock.monotonicMs() + virtualMsMax;
  for (;;) {
    for (let turn = 0; turn < turnsPerStep; turn++) {
      const answer = probe();
      if (answer !== undefined && answer !== false && answer !== null) return answer;
      await nextTurn();
    }
    const nowMs = clock.monotonicMs();
    if (nowMs >= deadlineMs)
      throw new Error(`timed out after ${virtualMsMax} virtual ms waiting for ${what}`);
    const nextDueMs = clock.nextDueMs();
    const stepMs =
      options.stepMs ?? (nextDueMs === undefined ? IDLE_STEP_MS : Math.max(0, nextDueMs - nowMs));
    clock.advance(Math.min(stepMs, deadlineMs - nowMs));
  }
}

/** Awaits work, moving the clock while it is pending (it may wait on timers); rejects as work does. */
export async function drive<T>(
  clock: ManualClock,
  work: Promise<T>,
  options: DriveOptions = {},
): Promise<T> {
  let settled = false;
  const done = work.then(
    () => {
      settled = true;
    },
    () => {
      settled = true;
    },
  );
  await runUntil(clock, "the work to settle", () => settled, options);
  await done;
  return work;
}

/** Lets ms of virtual time pass, giving the event loop its turns between the timers on the way. */
export async function runFor(
  clock: ManualClock,
  ms: number,
  options: Omit<DriveOptions, "virtualMsMax"> = {},
): Promise<void> {
  const targetMs = clock.monotonicMs() + ms;
  await runUntil(clock, `${ms} virtual ms`, () => clock.monotonicMs() >= targetMs, {
    ...options,
    virtualMsMax: ms,
  });
}
