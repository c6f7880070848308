// The real runtime: the system clock's timers (immediates included) fire and cancel; each
// runtime's random source is seeded from the operating system, so two never draw alike; its
// failpoints come from its environment.
import { describe, expect, it } from "vitest";
import { systemClock } from "./system-clock.js";
import { systemRuntime } from "./system-runtime.js";

describe("systemRuntime", () => {
  it("runs an immediate before a zero-delay timeout, and a cleared one never", async () => {
    const { clock } = systemRuntime();
    expect(clock).toBe(systemClock);
    const ran: string[] = [];
    clock.setTimeout(() => ran.push("timeout"), 0);
    clock.setImmediate(() => ran.push("immediate"));
    clock.clearImmediate(clock.setImmediate(() => ran.push("cleared")));
    await new Promise<void>((resolve) => clock.setTimeout(resolve, 20));
    expect(ran).toContain("immediate");
    expect(ran).toContain("timeout");
    expect(ran).not.toContain("cleared");
  });

  it("seeds each random source differently", () => {
    const draw = (): number[] => {
      const { random } = systemRuntime();
      return Array.from({ length: 4 }, () => random.next());
    };
    const a = draw();
    expect(a.every((x) => x >= 0 && x < 1)).toBe(true);
    expect(draw()).not.toEqual(a);
  });

  it("arms the failpoints its environment lists, each runtime its own, and none unless listed", () => {
    const env = { TERN_FAILPOINTS: "broker.after-marker-append=2" };
    const runtime = systemRuntime(undefined, env);
    expect(runtime.failpoints?.list()).toEqual(["broker.after-marker-append=2"]);
    expect(systemRuntime(undefined, env).failpoints).not.toBe(runtime.failpoints);
    // None listed: no failpoints at all, so the parts never call into them.
    expect(systemRuntime(undefined, {}).failpoints).toBeUndefined();
    expect(systemRuntime(undefined, { TERN_FAILPOINTS: " , " }).failpoints).toBeUndefined();
  });
});
