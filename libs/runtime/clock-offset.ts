// Clock skew for chaos tests: TERN_CLOCK_OFFSET_FILE names a file holding a signed offset in
// milliseconds that the process's clock (system-runtime.ts) adds to the wall clock, as if this host's clock were
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

/** The offset a process's wall clock carries. */
export interface WallClockOffset {
  ms(): number;
}

export const NO_CLOCK_OFFSET: WallClockOffset = { ms: () => 0 };

/** An offset read from a file and re-read every CLOCK_OFFSET_REREAD_MS (an unref'd timer). */
class FileClockOffset implements WallClockOffset {
  private offsetMs = 0;

  constructor(private readonly file: string) {
    this.apply(readOffset(file));
    setInterval(() => {
      const next = readOffset(file);
      if (next !== this.offsetMs) this.apply(next);
    }, CLOCK_OFFSET_REREAD_MS).unref();
  }

  ms(): number {
    return this.offsetMs;
  }

  private apply(next: number): void {
    this.offsetMs = next;
    try {
      writeFileSync(`${this.file}.applied`, `${next}\n`);
    } catch {
      // the acknowledgement is for the test only; the offset is in effect anyway
    }
  }
}

/** The offset TERN_CLOCK_OFFSET_FILE names, or none (every real deployment). */
export function clockOffsetFromEnv(env: NodeJS.ProcessEnv = process.env): WallClockOffset {
  const file = env[CLOCK_OFFSET_FILE_ENV];
  return file === undefined || file === "" ? NO_CLOCK_OFFSET : new FileClockOffset(file);
}
