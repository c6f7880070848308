// Clock skew for chaos tests: TERN_CLOCK_OFFSET_FILE names a file holding a signed offset in
// milliseconds that systemClock.nowMs() adds to the wall clock, as if this host's clock were
// that far ahead (or behind). A timer re-reads the file every CLOCK_OFFSET_REREAD_MS, so a
// test moves the clock of a running process by rewriting it (a jump), and after each change
// writes "<file>.applied" holding the offset now in effect: the proof that the process took it.
// Unset (every real deployment): no file is read, no timer runs, the offset is 0. Monotonic
// time (performance.now, timers) is never skewed, as on a real host whose wall clock steps.
import { readFileSync, writeFileSync } from "node:fs";

export const CLOCK_OFFSET_FILE_ENV = "TERN_CLOCK_OFFSET_FILE";
export const CLOCK_OFFSET_REREAD_MS = 100;
/** Offsets beyond a day are refused (a typo, not a skew), and read as 0. */
const OFFSET_ABS_MAX_MS = 86_400_000;

/** Parses an offset file's text: a signed integer of milliseconds; anything else is 0. */
export function parseClockOffset(text: string): number {
  const t = text.trim();
  if (!/^[+-]?\d+$/.test(t)) return 0;
  const n = Number(t);
  return Math.abs(n) <= OFFSET_ABS_MAX_MS ? n : 0;
}

/** The offset in a file, 0 when it is missing or unreadable. */
function readOffset(file: string): number {
  try {
    return parseClockOffset(readFileSync(file, "utf8"));
  } catch {
    return 0;
  }
}

let offsetMs = 0;

function watch(file: string): void {
  const apply = (next: number): void => {
    offsetMs = next;
    try {
      writeFileSync(`${file}.applied`, `${next}\n`);
    } catch {
      // the acknowledgement is for the test only; the offset is in effect anyway
    }
  };
  apply(readOffset(file));
  setInterval(() => {
    const next = readOffset(file);
    if (next !== offsetMs) apply(next);
  }, CLOCK_OFFSET_REREAD_MS).unref();
}

const offsetFile = process.env[CLOCK_OFFSET_FILE_ENV];
if (offsetFile !== undefined && offsetFile !== "") watch(offsetFile);

/** The injected wall-clock offset in effect (0 unless TERN_CLOCK_OFFSET_FILE is set). */
export function wallClockOffsetMs(): number {
  return offsetMs;
}
