// Reading the time. A process gets its Clock from its runtime (process-runtime.ts), so the
// simulator and unit tests can run the same code on a clock that moves only when told to.

export interface Clock {
  /** Milliseconds since the epoch (wall clock: timestamps stored or shown to people). */
  nowMs(): number;
  /** Monotonic milliseconds, for timeouts and durations. */
  monotonicMs(): number;
}
