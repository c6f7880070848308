// The two faces of the system clock: a service's timers never hold its process open (the
// gRPC server does), an application's do (a retry pause of an awaited call must not let the
// application exit with the call unanswered).
import { describe, expect, it } from "vitest";
import { applicationClock, systemClock } from "./system-clock.js";

const refs = (handle: unknown): boolean => (handle as NodeJS.Timeout).hasRef();

describe("system clocks", () => {
  it("a service's timers are unref'd, an application's hold the process open", () => {
    const service = systemClock.setTimeout(() => undefined, 60_000);
    const app = applicationClock.setTimeout(() => undefined, 60_000);
    const appInterval = applicationClock.setInterval(() => undefined, 60_000);
    try {
      expect(refs(service)).toBe(false);
      expect(refs(app)).toBe(true);
      expect(refs(appInterval)).toBe(true);
    } finally {
      systemClock.clearTimeout(service);
      applicationClock.clearTimeout(app);
      applicationClock.clearInterval(appInterval);
    }
  });

  it("read the same time", () => {
    expect(Math.abs(applicationClock.nowMs() - systemClock.nowMs())).toBeLessThan(50);
  });
});
