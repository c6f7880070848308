// The consumer's side of Kafka 4's consumer rebalance protocol (KIP-848): a member id generated
// once, a heartbeat loop to the group coordinator that reports the partitions the consumer owns
// and learns its member epoch and the partitions it may own, and the rules for what to do with
// the answers. The consumer applies changes inside poll() (reconcile()), as Kafka's does, so a
// listener's onPartitionsRevoked runs between two polls and a partition is given up (and its
// position committed) before the next heartbeat acknowledges it. A member fenced by the
// coordinator (UNKNOWN_MEMBER_ID / FENCED_MEMBER_EPOCH) loses its partitions and rejoins with
// epoch 0; one that has not polled for maxPollIntervalMs leaves the group until it polls again.
import { randomUUID } from "node:crypto";
import type { ClientLogger as Logger } from "../../common/client-logger.js";
import { isTernError, REJOIN_CODES } from "../../common/errors.js";
import { ClientError, errorNameOf, toClientError } from "../errors.js";
import type { CoordinatorFinder } from "../network/coordinator-finder.js";
import type { ConsumerGroupHeartbeatResponse__Output } from "../../common/proto-types/index.js";

export interface TopicPartitionRef {
  readonly topic: string;
  readonly partition: number;
}

/** Kafka's ConsumerRebalanceListener. Callbacks run inside poll() (and unsubscribe/close). */
export interface RebalanceListener {
  /** Partitions moving to another member; commit what was processed (auto-commit already did, when on). */
  onPartitionsRevoked?(partitions: TopicPartitionRef[]): void | Promise<void>;
  onPartitionsAssigned?(partitions: TopicPartitionRef[]): void | Promise<void>;
  /** Partitions taken away without a revocation (the member was fenced): their commits would be refused. */
  onPartitionsLost?(partitions: TopicPartitionRef[]): void | Promise<void>;
}

export interface Subscription {
  readonly topics: readonly string[];
  /** Source of a regular expression matching whole topic names; "" when none. */
  readonly regex: string;
}

export interface GroupMemberOptions {
  readonly groupId: string;
  readonly finder: CoordinatorFinder;
  readonly logger: Logger;
  readonly clientId: string;
  readonly groupInstanceId?: string;
  readonly serverAssignor?: string;
  /** Also the rebalance timeout sent to the coordinator (as Kafka does). */
  readonly maxPollIntervalMs: number;
  readonly requestTimeoutMs: number;
}

/** What poll() must do now. */
export interface Reconciliation {
  /** Fenced, or left after a poll timeout: drop `lost` (possibly none) and rejoin. */
  readonly rejoin: boolean;
  readonly lost: TopicPartitionRef[];
  readonly revoked: TopicPartitionRef[];
  readonly assigned: TopicPartitionRef[];
}

type Phase = "joining" | "member" | "fenced" | "poll-timeout" | "leaving" | "left" | "failed";

const HEARTBEAT_INTERVAL_MS_INITIAL = 1_000;
const HEARTBEAT_RETRY_MS = 200;
/** Answers after which the member must rejoin from epoch 0 with nothing owned. */

export function tpKey(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}

export class GroupMember {
  readonly memberId = randomUUID();
  private memberEpochValue = 0;
  private phase: Phase = "joining";
  /** The partitions the coordinator says this member may own now. */
  private target = new Map<string, TopicPartitionRef>();
  /** The partitions the consumer has applied (reported as owned). */
  private readonly owned = new Map<string, TopicPartitionRef>();
  private heartbeatIntervalMs = HEARTBEAT_INTERVAL_MS_INITIAL;
  private timer: NodeJS.Timeout | undefined;
  private inFlight: Promise<void> | undefined;
  private lastPollMs = Date.now();
  private failure: ClientError | undefined;
  /** Resolved whenever a heartbeat answer arrives (waiters: settle checks). */
  private answered: Array<() => void> = [];

  constructor(
    private readonly options: GroupMemberOptions,
    private subscription: Subscription,
  ) {
    this.schedule(0);
  }

  get memberEpoch(): number {
    return this.memberEpochValue;
  }

  /** The member id and epoch to send with commits; epoch -1 outside the group. */
  generation(): { memberId: string; memberEpoch: number } {
    return {
      memberId: this.memberId,
      memberEpoch: this.phase === "member" ? this.memberEpochValue : -1,
    };
  }

  inGroup(): boolean {
    return this.phase === "member";
  }

  setSubscription(subscription: Subscription): void {
    this.subscription = subscription;
    this.schedule(0);
  }

  /** poll() was called: resets the max.poll.interval clock, rejoins after a poll timeout. */
  polled(): void {
    this.lastPollMs = Date.now();
    if (this.failure) throw this.failure;
  }

  /** What poll() must apply now: everything lost after a fence, else revocations, else additions. */
  reconciliation(): Reconciliation {
    if (this.phase === "fenced" || this.phase === "poll-timeout") {
      return { rejoin: true, lost: [...this.owned.values()], revoked: [], assigned: [] };
    }
    const revoked = [...this.owned].filter(([k]) => !this.target.has(k)).map(([, tp]) => tp);
    if (revoked.length > 0) return { rejoin: false, lost: [], revoked, assigned: [] };
    const assigned = [...this.target].filter(([k]) => !this.owned.has(k)).map(([, tp]) => tp);
    return { rejoin: false, lost: [], revoked: [], assigned };
  }

  /** The consumer gave these up (revoked or lost): report it at once. */
  released(partitions: readonly TopicPartitionRef[], lost: boolean): void {
    for (const tp of partitions) this.owned.delete(tpKey(tp.topic, tp.partition));
    if (lost && (this.phase === "fenced" || this.phase === "poll-timeout")) {
      // Rejoin with epoch 0, owning nothing (Kafka keeps the member id).
      this.owned.clear();
      this.target.clear();
      this.memberEpochValue = 0;
      this.phase = "joining";
    }
    this.schedule(0);
  }

  acquired(partitions: readonly TopicPartitionRef[]): void {
    for (const tp of partitions) this.owned.set(tpKey(tp.topic, tp.partition), tp);
    this.schedule(0);
  }

  /** Waits for the next heartbeat answer (bounded), for callers that want to see progress. */
  nextAnswer(timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      this.answered.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /** Leaves the group (epoch -1, or -2 for a static member) and stops heartbeating. */
  async leave(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const wasMember = this.phase === "member" || this.phase === "joining";
    this.phase = "leaving";
    await this.inFlight?.catch(() => undefined);
    if (wasMember) {
      const epoch = this.options.groupInstanceId ? -2 : -1;
      try {
        await this.send(epoch, { timeoutMs: this.options.requestTimeoutMs, attemptsMax: 3 });
      } catch (e) {
        // Leaving is best effort: the session timeout removes the member anyway.
        this.options.logger.warn(
          { err: String(e), groupId: this.options.groupId },
          "leave group failed",
        );
      }
    }
    this.phase = "left";
    this.owned.clear();
    this.target.clear();
  }

  // --- the heartbeat loop ------------------------------------------------------------------

  private schedule(delayMs: number): void {
    if (this.phase === "leaving" || this.phase === "left" || this.phase === "failed") return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.tick();
    }, delayMs);
    this.timer.unref?.();
  }

  private async tick(): Promise<void> {
    if (this.inFlight) {
      // A heartbeat is on its way: send another right after (the owned set may have changed).
      await this.inFlight.catch(() => undefined);
      if (!this.timer) this.schedule(0);
      return;
    }
    if (this.phase === "fenced" || this.phase === "poll-timeout") return; // waits for poll()
    if (this.phase === "member" && Date.now() - this.lastPollMs > this.options.maxPollIntervalMs) {
      // Kafka's max.poll.interval.ms: leave so the partitions move; rejoin on the next poll.
      this.options.logger.warn(
        {
          groupId: this.options.groupId,
          memberId: this.memberId,
          maxPollIntervalMs: this.options.maxPollIntervalMs,
        },
        "poll() not called within maxPollIntervalMs: leaving the group",
      );
      this.phase = "poll-timeout";
      this.inFlight = this.send(-1, { timeoutMs: this.options.requestTimeoutMs, attemptsMax: 3 })
        .then(
          () => undefined,
          () => undefined,
        )
        .finally(() => (this.inFlight = undefined));
      return;
    }
    this.inFlight = this.heartbeatOnce().finally(() => (this.inFlight = undefined));
    await this.inFlight;
  }

  private async heartbeatOnce(): Promise<void> {
    const epoch = this.phase === "joining" ? 0 : this.memberEpochValue;
    try {
      const r = await this.send(epoch, {
        timeoutMs: Math.max(this.heartbeatIntervalMs, HEARTBEAT_RETRY_MS),
        attemptsMax: 3,
      });
      if (this.phase !== "joining" && this.phase !== "member") return;
      this.memberEpochValue = Number(r.memberEpoch);
      this.phase = "member";
      const next = new Map<string, TopicPartitionRef>();
      for (const tp of r.assignment ?? [])
        for (const p of tp.partitions ?? [])
          next.set(tpKey(String(tp.topic), Number(p)), {
            topic: String(tp.topic),
            partition: Number(p),
          });
      this.target = next;
      if (Number(r.heartbeatIntervalMs) > 0)
        this.heartbeatIntervalMs = Number(r.heartbeatIntervalMs);
      this.schedule(this.heartbeatIntervalMs);
    } catch (e) {
      const code = errorNameOf(e) ?? (isTernError(e) ? e.errorName : undefined);
      if (code && REJOIN_CODES.has(code)) {
        this.options.logger.warn(
          { groupId: this.options.groupId, memberId: this.memberId, code },
          "fenced by the group coordinator: partitions lost, rejoining",
        );
        this.phase = "fenced";
      } else if (toClientError(e).retriable) {
        this.schedule(HEARTBEAT_RETRY_MS);
      } else {
        this.failure = toClientError(e, `heartbeat of group ${this.options.groupId}`);
        this.phase = "failed";
      }
    } finally {
      for (const w of this.answered.splice(0)) w();
    }
  }

  private send(
    memberEpoch: number,
    retry: { timeoutMs: number; attemptsMax: number },
  ): Promise<ConsumerGroupHeartbeatResponse__Output> {
    const owned = new Map<string, number[]>();
    for (const tp of this.owned.values()) {
      const list = owned.get(tp.topic) ?? [];
      list.push(tp.partition);
      owned.set(tp.topic, list);
    }
    const request = {
      groupId: this.options.groupId,
      memberId: this.memberId,
      memberEpoch,
      instanceId: this.options.groupInstanceId ?? "",
      rackId: "",
      rebalanceTimeoutMs: this.options.maxPollIntervalMs,
      subscribedTopicNames: memberEpoch < 0 ? [] : [...this.subscription.topics],
      subscribedTopicRegex: memberEpoch < 0 ? "" : this.subscription.regex,
      serverAssignor: this.options.serverAssignor ?? "",
      topicPartitions: [...owned].map(([topic, partitions]) => ({ topic, partitions })),
      clientId: this.options.clientId,
    };
    return this.options.finder.call(
      "GROUP",
      this.options.groupId,
      "GroupCoordinator",
      "ConsumerGroupHeartbeat",
      request,
      {
        ...retry,
        requestTimeoutMs: this.options.requestTimeoutMs,
        backoffMsMax: 200,
      },
    );
  }
}
