// Watches the free space of the broker's data directory. Below the reserve
// (--disk-reserve-bytes) the broker refuses produce with KAFKA_STORAGE_ERROR (retriable) and a
// message naming the figures, so that the disk never fills under the Raft logs and segments
// (a write that fails half way is what corrupts a log). Fetches and everything already
// accepted go on; produce is accepted again once a check sees the space back.
import { statfs } from "node:fs/promises";
import type { Logger } from "../../libs/common/logger.js";
import type { Scheduler, TimerHandle } from "../../libs/runtime/scheduler.js";

/** How often free space is read (one statfs call). */
export const DISK_CHECK_INTERVAL_MS = 1_000;

export class DiskSpaceGuard {
  private freeBytes = Number.POSITIVE_INFINITY;
  private low = false;
  private timer: TimerHandle | undefined;
  private checking = false;

  constructor(
    private readonly dir: string,
    readonly reserveBytes: number,
    private readonly logger: Logger,
    private readonly scheduler: Scheduler,
    private readonly intervalMs = DISK_CHECK_INTERVAL_MS,
  ) {}

  start(): void {
    if (this.reserveBytes <= 0 || this.timer !== undefined) return;
    void this.check();
    this.timer = this.scheduler.setInterval(() => void this.check(), this.intervalMs);
  }

  stop(): void {
    this.scheduler.clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Reads free space now (also called by the timer). */
  async check(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    try {
      const s = await statfs(this.dir);
      this.freeBytes = Number(s.bavail) * Number(s.bsize);
      const low = this.freeBytes < this.reserveBytes;
      if (low !== this.low) {
        if (low)
          this.logger.error(
            { dir: this.dir, freeBytes: this.freeBytes, reserveBytes: this.reserveBytes },
            "free disk space below the reserve: refusing produce",
          );
        else
          this.logger.warn(
            { dir: this.dir, freeBytes: this.freeBytes, reserveBytes: this.reserveBytes },
            "free disk space back above the reserve: accepting produce",
          );
      }
      this.low = low;
    } catch (e) {
      this.logger.warn({ err: e, dir: this.dir }, "reading free disk space failed");
    } finally {
      this.checking = false;
    }
  }

  /** Free bytes at the last check (Infinity before it, or with the check off). */
  free(): number {
    return this.freeBytes;
  }
  belowReserve(): boolean {
    return this.low;
  }

  /** Why produce is refused now, or undefined. */
  refusal(): string | undefined {
    if (!this.low) return undefined;
    return `free space in ${this.dir} is ${this.freeBytes} bytes, below the reserve of ${this.reserveBytes} (--disk-reserve-bytes): produce is refused until space is freed; fetches still work`;
  }
}
