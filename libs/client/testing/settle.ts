// Runs vitest's fake clock until a promise settles: the client's unit tests drive every
// timer (linger, backoff, long polls, deadlines) this way instead of sleeping.
import { vi } from "vitest";

/** Fake-clock step: small enough to keep the order of timers, large enough to be quick. */
const STEP_MS = 10;

/** Advances the fake clock in STEP_MS steps until `p` settles or budgetMs of fake time passed; returns `p`. */
export async function settle<T>(p: Promise<T>, budgetMs = 200_000): Promise<T> {
  let done = false;
  void p.then(
    () => (done = true),
    () => (done = true),
  );
  for (let t = 0; !done && t < budgetMs; t += STEP_MS) await vi.advanceTimersByTimeAsync(STEP_MS);
  return p;
}
