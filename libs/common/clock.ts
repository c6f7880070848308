// Time is injected so that the simulator can run on a fake clock.
export interface Clock {
  /** Milliseconds since the epoch (wall clock, for timestamps shown to people). */
  nowMs(): number;
  /** Monotonic milliseconds, for timeouts and durations. */
  monotonicMs(): number;
}

export const systemClock: Clock = {
  nowMs: () => Date.now(),
  monotonicMs: () => performance.now(),
};

export class ManualClock implements Clock {
  constructor(private ms = 0) {}
  nowMs(): number { return this.ms; }
  monotonicMs(): number { return this.ms; }
  advance(ms: number): void { this.ms += ms; }
}
