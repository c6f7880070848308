// The chaos suite's clock-skew seam: with TERN_CLOCK_OFFSET_FILE set, the process clock's wall time
// follows the offset written to the file (re-read at run time, acknowledged in <file>.applied),
// monotonic time does not; without it the wall clock is the host's.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { CLOCK_OFFSET_FILE_ENV, parseClockOffset } from "./clock-offset.js";
import { systemRuntime } from "./system-runtime.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** The clock a process entry builds from this environment. */
function processClock(env: NodeJS.ProcessEnv): {
  systemClock: ReturnType<typeof systemRuntime>["clock"];
} {
  return { systemClock: systemRuntime(undefined, env).clock };
}

describe("clock offset seam", () => {
  it("parses signed milliseconds and refuses anything else", () => {
    expect(parseClockOffset("90000\n")).toBe(90_000);
    expect(parseClockOffset("-45000")).toBe(-45_000);
    expect(parseClockOffset("+5")).toBe(5);
    expect(parseClockOffset("")).toBe(0);
    expect(parseClockOffset("1e5")).toBe(0);
    expect(parseClockOffset(String(2 * 86_400_000))).toBe(0);
  });

  it("moves the process clock's wall time forward and back as the file changes, never monotonic time", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tern-clock-offset-"));
    dirs.push(dir);
    const file = join(dir, "broker-0.offset");
    writeFileSync(file, "120000\n");
    const { systemClock } = processClock({ [CLOCK_OFFSET_FILE_ENV]: file });
    const skew = (): number => systemClock.nowMs() - Date.now();
    // Read at load: a restarted process starts with the skew its host's clock has.
    expect(Math.abs(skew() - 120_000)).toBeLessThan(50);
    expect(readFileSync(`${file}.applied`, "utf8").trim()).toBe("120000");
    const mono = systemClock.monotonicMs();
    expect(Math.abs(mono - performance.now())).toBeLessThan(50);

    writeFileSync(file, "-60000\n"); // a backward jump of three minutes
    await expect.poll(skew, { timeout: 5_000, interval: 20 }).toBeLessThan(-59_000);
    expect(readFileSync(`${file}.applied`, "utf8").trim()).toBe("-60000");
    expect(systemClock.monotonicMs()).toBeGreaterThanOrEqual(mono);

    rmSync(file); // no file: no skew
    await expect.poll(() => Math.abs(skew()), { timeout: 5_000, interval: 20 }).toBeLessThan(50);
  });

  it("adds nothing without the variable", () => {
    const { systemClock } = processClock({});
    expect(Math.abs(systemClock.nowMs() - Date.now())).toBeLessThan(50);
  });
});
