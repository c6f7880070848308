// When a controller is ready: its group has a leader and this node applied up to the commit
// index it saw then. Polled; readiness drops again after LEADERLESS_ELECTIONS_MAX election
// timeouts without a known leader (a flapping leader does not flap the health).
import type { Logger } from "../../libs/common/logger.js";
import type { RaftGroup } from "../../libs/raft-host/api.js";
import type { SchedulingClock, TimerHandle } from "../../libs/runtime/scheduler.js";

const READINESS_CHECK_MS = 100;
/** Readiness drops after this many election timeouts without a known leader. */
const LEADERLESS_ELECTIONS_MAX = 3;

export interface ControllerReadinessOptions {
  readonly group: RaftGroup;
  readonly electionTimeoutMs: number;
  readonly clock: SchedulingClock;
  readonly logger: Logger;
  /** The process's health (ServiceContext.setReady), called on every change. */
  readonly setReady: (ready: boolean) => void;
}

export class ControllerReadiness {
  private ready = false;
  private leaderlessSinceMs: number | undefined;
  private readonly timer: TimerHandle;

  constructor(private readonly options: ControllerReadinessOptions) {
    this.timer = options.clock.setInterval(() => this.check(), READINESS_CHECK_MS);
  }

  close(): void {
    this.options.clock.clearInterval(this.timer);
  }

  private check(): void {
    const { group, clock, logger, electionTimeoutMs } = this.options;
    const status = group.status();
    const now = clock.monotonicMs();
    if (status.leader >= 0) {
      this.leaderlessSinceMs = undefined;
      if (!this.ready && status.applied >= status.commit) {
        this.ready = true;
        this.options.setReady(true);
        logger.info(
          { leader: status.leader, term: status.term, applied: status.applied },
          "controller ready",
        );
      }
      return;
    }
    this.leaderlessSinceMs ??= now;
    if (this.ready && now - this.leaderlessSinceMs > LEADERLESS_ELECTIONS_MAX * electionTimeoutMs) {
      this.ready = false;
      this.options.setReady(false);
      logger.warn("no controller leader for a while: not ready");
    }
  }
}
