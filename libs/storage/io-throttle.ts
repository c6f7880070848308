// A bytes-per-second bound on the cleaner's reads and writes (Kafka's
// log.cleaner.io.max.bytes.per.second): each take() of n bytes waits until the bytes taken so
// far fit the rate since the throttle started its current run. Unlimited when the rate is 0 or
// less. A pause longer than a second is not banked: an idle cleaner does not earn a burst.
const BANKED_MS_MAX = 1000;

export class IoThrottle {
  private readyAtMs = -Infinity;

  /** now and sleep: the runtime's monotonic clock and timers (libs/runtime). */
  constructor(
    private readonly bytesPerSecond: number,
    private readonly now: () => number,
    private readonly sleep: (ms: number) => Promise<void>,
  ) {}

  static unlimited(): IoThrottle {
    return new IoThrottle(
      0,
      () => 0,
      () => Promise.resolve(),
    );
  }

  async take(bytes: number): Promise<void> {
    if (!(this.bytesPerSecond > 0) || bytes <= 0) return;
    const now = this.now();
    if (this.readyAtMs < now - BANKED_MS_MAX) this.readyAtMs = now - BANKED_MS_MAX;
    this.readyAtMs += (bytes / this.bytesPerSecond) * 1000;
    const wait = this.readyAtMs - now;
    if (wait > 0) await this.sleep(wait);
  }
}
