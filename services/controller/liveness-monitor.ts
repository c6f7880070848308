// The leader-side loop behind time-driven metadata changes: expiring leases, creating the
// internal topics once enough nodes registered, re-placing a long-dead node's replicas. It
// stamps the leader's clock into a "tick" command and proposes it only when the state machine
// says it would change something, so an idle cluster writes nothing. A new leader waits one
// full lease before expiring anyone: nodes could not heartbeat while there was no leader.
import { newTopicId } from "../../libs/metadata/topic-id.js";
import type { Clock } from "../../libs/runtime/clock.js";
import type { Scheduler, TimerHandle } from "../../libs/runtime/scheduler.js";
import type { Logger } from "../../libs/common/logger.js";
import type { RaftGroup } from "../../libs/raft-host/api.js";
import { encodeCommand } from "./command-codec.js";
import type { ControllerSettings } from "./controller-settings.js";
import type { MetadataStateMachine } from "./metadata-state-machine.js";

export class LivenessMonitor {
  private readonly timer: TimerHandle;
  private inFlight = false;
  /** Monotonic time this node was first seen leading in leaderTerm; undefined when not leading. */
  private leaderSinceMs: number | undefined;
  private leaderTerm = -1;

  constructor(
    private readonly group: RaftGroup,
    private readonly sm: MetadataStateMachine,
    private readonly settings: ControllerSettings,
    private readonly clock: Clock,
    private readonly scheduler: Scheduler,
    private readonly logger: Logger,
  ) {
    this.timer = scheduler.setInterval(() => void this.check(), settings.livenessCheckMs);
  }

  private async check(): Promise<void> {
    if (!this.group.isLeader()) {
      this.leaderSinceMs = undefined;
      return;
    }
    const term = this.group.term();
    if (this.leaderSinceMs === undefined || term !== this.leaderTerm) {
      this.leaderSinceMs = this.clock.monotonicMs();
      this.leaderTerm = term;
    }
    if (this.inFlight) return;
    const tick = {
      nowMs: this.clock.nowMs(),
      expireLeases: this.clock.monotonicMs() - this.leaderSinceMs >= this.settings.nodeLeaseMs,
      replaceAfterMs: this.settings.replaceDeadAfterMs,
      internalTopics: this.settings.internalTopics,
      // Ids are drawn here, by the leader, and carried in the entry (apply draws nothing).
      topicIds: this.sm
        .topicsWithoutIds(this.settings.internalTopics)
        .map((name) => ({ name, id: newTopicId() })),
    };
    if (!this.sm.tickWouldChange(tick)) return;
    this.inFlight = true;
    try {
      const r = await this.group.propose(encodeCommand({ type: "tick", ...tick }), {
        timeoutMs: this.settings.proposeTimeoutMs,
      });
      this.logger.info({ result: r.result, index: r.index }, "metadata tick applied");
    } catch (e) {
      this.logger.warn({ err: e }, "metadata tick not applied; will retry");
    } finally {
      this.inFlight = false;
    }
  }

  close(): void {
    this.scheduler.clearInterval(this.timer);
  }
}
