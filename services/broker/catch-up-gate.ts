// Readiness that means caught up: a starting broker reports ready (gRPC health, /healthz, and
// so Kubernetes' readiness probe) only once every replica it follows has caught up with its
// leader, so a rolling restart driven by readiness never stops the next broker while this
// one still lags and a partition would be left without a live majority that has its log.
// Caught up, per replica: it is open (metadata applied); it leads; or, for a topic partition, its high watermark has reached
// the one its leader answered to ListOffsets(latest) this round; or, for a __consumer_offsets
// group (no ListOffsets there), it knows a leader and has applied all it knows committed.
// The wait is bounded (TERN_READY_CATCH_UP_MAX_MS): a partition whose leader is gone must not
// keep a broker out of service forever; giving up is logged with what was still behind. It
// gates startup only: once ready, a lagging replica shows in tern_raft_under_replicated_groups,
// not in readiness (Kafka and Strimzi do the same).
import type { SchedulingClock, TimerHandle } from "../../libs/runtime/scheduler.js";
import type { Logger } from "../../libs/common/logger.js";
import type { RaftGroup } from "../../libs/raft-host/api.js";
import { CONSUMER_OFFSETS_TOPIC } from "../../libs/metadata/types.js";

export const READY_CATCH_UP_MAX_MS_DEFAULT = 60_000;
export const CATCH_UP_CHECK_INTERVAL_MS = 500;
/** Partitions per ListOffsets call (well under BROKER_LIMITS.partitionsPerRequestMax). */
const PARTITIONS_PER_CALL_MAX = 500;
/** Replicas named in the log line when the gate gives up or reports progress. */
const BEHIND_LOGGED_MAX = 20;

export interface FollowedPartition {
  readonly topic: string;
  readonly partition: number;
  readonly group: Pick<RaftGroup, "isLeader" | "leader">;
  readonly stateMachine: { highWatermark(): bigint };
}

export interface CatchUpGateOptions {
  /** Group ids ("topic/partition") that metadata places on this broker, open here or not yet. */
  readonly assigned: () => Iterable<string>;
  /** Whether the group is open here. */
  readonly isOpen: (groupId: string) => boolean;
  /** The topic partition replicas of this broker. */
  readonly partitions: () => Iterable<FollowedPartition>;
  /** Every Raft group open here (the __consumer_offsets ones are judged by their Raft state). */
  readonly groups: () => Iterable<
    Pick<RaftGroup, "groupId" | "isLeader" | "leader" | "appliedIndex" | "status">
  >;
  /** A broker's address by node id, undefined when metadata does not know it. */
  readonly address: (nodeId: number) => string | undefined;
  /** Latest offsets (high watermarks) from the broker at address; a partition it does not lead is absent. */
  readonly listLatest: (
    address: string,
    partitions: ReadonlyArray<{ topic: string; partition: number }>,
  ) => Promise<Map<string, bigint>>;
  readonly waitMaxMs: number;
  readonly logger: Logger;
  /** The wait's bound and the check timer (the process runtime's; a ManualClock in tests). */
  readonly clock: SchedulingClock;
  readonly intervalMs?: number;
}

export const partitionKey = (topic: string, partition: number): string => `${topic}/${partition}`;

/** TERN_READY_CATCH_UP_MAX_MS (0..3600000; 0 turns the gate off). */
export function readyCatchUpMaxMs(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.TERN_READY_CATCH_UP_MAX_MS;
  if (raw === undefined || raw === "") return READY_CATCH_UP_MAX_MS_DEFAULT;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 3_600_000)
    throw new Error(`TERN_READY_CATCH_UP_MAX_MS must be an integer in 0..3600000, got "${raw}"`);
  return n;
}

export class CatchUpGate {
  private startedMs: number | undefined;
  private timer: TimerHandle | undefined;
  private passed = false;
  private checking = false;
  private closed = false;
  private readonly clock: SchedulingClock;

  constructor(private readonly options: CatchUpGateOptions) {
    this.clock = options.clock;
  }

  hasPassed(): boolean {
    return this.passed;
  }

  /** Starts checking (idempotent); onPassed runs once, when caught up or when the wait is spent. */
  start(onPassed: () => void): void {
    if (this.passed || this.timer !== undefined || this.closed) return;
    this.startedMs ??= this.clock.monotonicMs();
    if (this.options.waitMaxMs === 0)
      return this.pass(onPassed, "gate off (TERN_READY_CATCH_UP_MAX_MS=0)", []);
    const round = async (): Promise<void> => {
      if (this.checking || this.passed || this.closed) return;
      this.checking = true;
      try {
        const behind = await this.behind();
        const waitedMs = this.clock.monotonicMs() - this.startedMs!;
        if (behind.length === 0) this.pass(onPassed, "replicas caught up", [], waitedMs);
        else if (waitedMs >= this.options.waitMaxMs)
          this.pass(onPassed, "gave up waiting for replicas to catch up", behind, waitedMs);
      } catch (e) {
        this.options.logger.warn({ err: e }, "catch-up check failed; retrying");
      } finally {
        this.checking = false;
      }
    };
    this.timer = this.clock.setInterval(
      () => void round(),
      this.options.intervalMs ?? CATCH_UP_CHECK_INTERVAL_MS,
    );
    void round();
  }

  close(): void {
    this.closed = true;
    this.clock.clearInterval(this.timer);
    this.timer = undefined;
  }

  private pass(onPassed: () => void, why: string, behind: string[], waitedMs = 0): void {
    this.passed = true;
    this.clock.clearInterval(this.timer);
    this.timer = undefined;
    const fields = {
      waitedMs: Math.round(waitedMs),
      behind: behind.slice(0, BEHIND_LOGGED_MAX),
      behindCount: behind.length,
    };
    if (behind.length > 0) this.options.logger.warn(fields, `readiness: ${why}`);
    else this.options.logger.info(fields, `readiness: ${why}`);
    onPassed();
  }

  /** Replicas not caught up this round, as "topic/partition (why)". */
  async behind(): Promise<string[]> {
    const out: string[] = [];
    // A replica not opened yet (metadata still being applied) is behind by definition.
    for (const groupId of this.options.assigned())
      if (!this.options.isOpen(groupId)) out.push(`${groupId} (not open yet)`);
    const askByLeader = new Map<string, FollowedPartition[]>();
    for (const p of this.options.partitions()) {
      if (p.group.isLeader()) continue;
      const leader = p.group.leader();
      const address = leader < 0 ? undefined : this.options.address(leader);
      if (address === undefined) {
        out.push(`${partitionKey(p.topic, p.partition)} (no leader known)`);
        continue;
      }
      let list = askByLeader.get(address);
      if (list === undefined) askByLeader.set(address, (list = []));
      list.push(p);
    }
    for (const g of this.options.groups()) {
      if (!g.groupId.startsWith(`${CONSUMER_OFFSETS_TOPIC}/`) || g.isLeader()) continue;
      if (g.leader() < 0) out.push(`${g.groupId} (no leader known)`);
      else if (g.appliedIndex() < g.status().commit) out.push(`${g.groupId} (applying)`);
    }
    await Promise.all(
      [...askByLeader].map(async ([address, list]) => {
        for (let i = 0; i < list.length; i += PARTITIONS_PER_CALL_MAX) {
          const chunk = list.slice(i, i + PARTITIONS_PER_CALL_MAX);
          let latest: Map<string, bigint>;
          try {
            latest = await this.options.listLatest(address, chunk);
          } catch {
            for (const p of chunk)
              out.push(`${partitionKey(p.topic, p.partition)} (leader ${address} unreachable)`);
            continue;
          }
          for (const p of chunk) {
            const theirs = latest.get(partitionKey(p.topic, p.partition));
            const ours = p.stateMachine.highWatermark();
            if (theirs === undefined)
              out.push(
                `${partitionKey(p.topic, p.partition)} (leader ${address} did not answer for it)`,
              );
            else if (ours < theirs)
              out.push(`${partitionKey(p.topic, p.partition)} (${theirs - ours} records behind)`);
          }
        }
      }),
    );
    return out;
  }
}
