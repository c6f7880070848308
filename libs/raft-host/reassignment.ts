// Replica reassignment on the hosting side: the Raft leader of a partition group moves the
// group's membership to the replica set the controller placed (docs/reassignment.md). The
// planner is pure (one step from the current ConfState, so it is idempotent across leader
// changes); the driver runs it per group, one committed conf change at a time, with bounded
// retries and backoff. Shared by brokers (topic and offsets partitions) and coordinators
// (transaction-log partitions).
import type { Logger } from "../common/logger.js";
import type { ConfState, NodeId, PeerProgress } from "../raft/types.js";
import type { RaftGroup } from "./api.js";

/** A voter counts as caught up when it is at most this many entries behind the leader. */
export const CATCH_UP_ENTRIES_MAX = 64;

export type ReassignmentStep =
  | { readonly kind: "done" }
  | { readonly kind: "wait"; readonly reason: string }
  | { readonly kind: "add-learner"; readonly nodeId: NodeId }
  | { readonly kind: "add-voter"; readonly nodeId: NodeId }
  | { readonly kind: "remove"; readonly nodeId: NodeId }
  | { readonly kind: "transfer"; readonly to: NodeId };

export interface PlanInput {
  readonly selfId: NodeId;
  readonly confState: ConfState;
  /** The leader's view of every member (RaftStatus.progress). */
  readonly progress: ReadonlyMap<NodeId, PeerProgress>;
  /** The leader's last log index. */
  readonly lastIndex: number;
  /** The target replica set from metadata. */
  readonly replicas: readonly NodeId[];
  /** Whether metadata shows the node alive. */
  readonly isLive: (nodeId: NodeId) => boolean;
  /** Whether the host can add learners (RaftGroup.addLearner). */
  readonly learnersSupported: boolean;
}

const majority = (n: number): number => Math.floor(n / 2) + 1;

/** Members (other than the leader) that are reachable and close to the leader's log. */
function caughtUp(input: PlanInput, nodeId: NodeId): boolean {
  if (nodeId === input.selfId) return true;
  const pr = input.progress.get(nodeId);
  return (
    pr !== undefined &&
    pr.recentActive &&
    pr.match + CATCH_UP_ENTRIES_MAX >= input.lastIndex &&
    input.isLive(nodeId)
  );
}

/**
 * The next single-server change that moves confState toward replicas, or done / wait. Order:
 * 1. remove members that are dead and no longer wanted (they count for nothing already, and a
 *    smaller group keeps commits possible while a fresh replica catches up);
 * 2. add each missing replica (learner first when supported, promoted once caught up; else a
 *    voter directly, only while the caught-up voters stay a majority of the grown group);
 * 3. remove live members no longer wanted, the leader itself last (it transfers leadership).
 */
export function planReassignmentStep(input: PlanInput): ReassignmentStep {
  const { confState, replicas, selfId } = input;
  if (replicas.length === 0) return { kind: "wait", reason: "empty replica set" };
  const voters = confState.voters;
  const learners = confState.learners;
  const wanted = new Set(replicas);
  const members = [...voters, ...learners];
  const deadExtra = members.find((id) => !wanted.has(id) && id !== selfId && !input.isLive(id));
  if (deadExtra !== undefined) return { kind: "remove", nodeId: deadExtra };
  for (const id of replicas) {
    if (voters.includes(id)) continue;
    if (!input.isLive(id)) continue; // the controller re-places it; nothing to do here
    if (learners.includes(id)) {
      return caughtUp(input, id)
        ? { kind: "add-voter", nodeId: id }
        : { kind: "wait", reason: `learner ${id} catching up` };
    }
    if (input.learnersSupported) return { kind: "add-learner", nodeId: id };
    const healthy = voters.filter((v) => caughtUp(input, v)).length;
    if (healthy < majority(voters.length + 1))
      return {
        kind: "wait",
        reason: `only ${healthy} of ${voters.length} voters caught up; adding ${id} would stall commits`,
      };
    return { kind: "add-voter", nodeId: id };
  }
  const missing = replicas.filter((id) => !voters.includes(id) && input.isLive(id));
  if (missing.length > 0)
    return { kind: "wait", reason: `replicas ${missing.join(",")} not voters yet` };
  const liveExtra = members.find((id) => !wanted.has(id) && id !== selfId);
  if (liveExtra !== undefined) {
    const remaining = voters.filter((v) => v !== liveExtra);
    if (
      voters.includes(liveExtra) &&
      remaining.filter((v) => caughtUp(input, v)).length < majority(remaining.length)
    ) {
      return { kind: "wait", reason: `removing ${liveExtra} would leave no caught-up majority` };
    }
    return { kind: "remove", nodeId: liveExtra };
  }
  if (!wanted.has(selfId) && members.includes(selfId)) {
    let best: NodeId | undefined;
    let bestMatch = -1;
    for (const id of replicas) {
      const pr = input.progress.get(id);
      if (!voters.includes(id) || pr === undefined || !caughtUp(input, id) || pr.match <= bestMatch)
        continue;
      best = id;
      bestMatch = pr.match;
    }
    return best === undefined
      ? { kind: "wait", reason: "no caught-up replica to take over leadership" }
      : { kind: "transfer", to: best };
  }
  return { kind: "done" };
}

/** Whether a replica not in the target set may delete its copy: only once its own log has
 * applied a configuration without it (so its removal is committed). */
export function removalCommittedLocally(confState: ConfState, selfId: NodeId): boolean {
  const members = [...confState.voters, ...confState.learners];
  return members.length > 0 && !members.includes(selfId);
}

/** A host group that can add learners (not in libs/raft-host/api.ts yet: feature-detected). */
interface LearnerCapable {
  addLearner(nodeId: NodeId, options?: { timeoutMs?: number }): Promise<void>;
}

function learnerCapable(group: RaftGroup): group is RaftGroup & LearnerCapable {
  return typeof (group as Partial<LearnerCapable>).addLearner === "function";
}

export interface ReassignmentTarget {
  readonly replicas: readonly NodeId[];
  readonly isLive: (nodeId: NodeId) => boolean;
}

export interface ReassignmentDriverOptions {
  readonly nodeId: NodeId;
  readonly logger: Logger;
  readonly nowMs: () => number;
  /** Bound on one conf change's wait for commit + apply. */
  readonly confChangeTimeoutMs?: number;
  readonly backoffMsMin?: number;
  readonly backoffMsMax?: number;
  /** Groups reconciled concurrently on this node. */
  readonly concurrentMax?: number;
}

const CONF_CHANGE_TIMEOUT_MS_DEFAULT = 10_000;
const BACKOFF_MS_MIN_DEFAULT = 250;
const BACKOFF_MS_MAX_DEFAULT = 10_000;
const CONCURRENT_MAX_DEFAULT = 8;
/** Steps taken in one run before yielding (a group needs at most a few per move). */
const STEPS_PER_RUN_MAX = 8;
/** Groups whose backoff state is remembered (a bound on the map). */
const TRACKED_GROUPS_MAX = 100_000;

interface GroupBackoff {
  failures: number;
  notBeforeMs: number;
}

/** Runs planReassignmentStep for groups this node leads; call reconcile() on every pass. */
export class ReassignmentDriver {
  private readonly running = new Set<string>();
  private readonly backoff = new Map<string, GroupBackoff>();
  private readonly log: Logger;
  private readonly lastWaitReason = new Map<string, string>();

  constructor(private readonly options: ReassignmentDriverOptions) {
    this.log = options.logger.child({ component: "reassignment" });
  }

  /** Starts (fire and forget) moving the group toward target when this node leads it and it differs. */
  reconcile(group: RaftGroup, target: ReassignmentTarget): void {
    if (!group.isLeader() || this.running.has(group.groupId)) return;
    if (this.running.size >= (this.options.concurrentMax ?? CONCURRENT_MAX_DEFAULT)) return;
    const b = this.backoff.get(group.groupId);
    if (b !== undefined && this.options.nowMs() < b.notBeforeMs) return;
    if (!differs(group.status().confState, target.replicas)) {
      this.backoff.delete(group.groupId);
      return;
    }
    this.running.add(group.groupId);
    void this.run(group, target).finally(() => this.running.delete(group.groupId));
  }

  /** Groups with a reconciliation in flight (for tests and status). */
  inFlight(): number {
    return this.running.size;
  }

  /** Whether a move is in flight or waits for its backoff (the reconciler's pass then runs again). */
  pending(): boolean {
    return this.running.size > 0 || this.backoff.size > 0;
  }

  private async run(group: RaftGroup, target: ReassignmentTarget): Promise<void> {
    const timeoutMs = this.options.confChangeTimeoutMs ?? CONF_CHANGE_TIMEOUT_MS_DEFAULT;
    try {
      for (let step = 0; step < STEPS_PER_RUN_MAX && group.isLeader(); step++) {
        const status = group.status();
        const self = status.progress.get(this.options.nodeId);
        const plan = planReassignmentStep({
          selfId: this.options.nodeId,
          confState: status.confState,
          progress: status.progress,
          lastIndex: Math.max(self?.match ?? 0, status.commit),
          replicas: target.replicas,
          isLive: target.isLive,
          learnersSupported: learnerCapable(group),
        });
        if (plan.kind === "done") {
          this.backoff.delete(group.groupId);
          this.lastWaitReason.delete(group.groupId);
          return;
        }
        if (plan.kind === "wait") {
          if (this.lastWaitReason.get(group.groupId) !== plan.reason)
            this.log.info({ groupId: group.groupId, reason: plan.reason }, "reassignment waiting");
          this.lastWaitReason.set(group.groupId, plan.reason);
          this.noteFailure(group.groupId);
          return;
        }
        await this.execute(group, plan, timeoutMs);
        const after = group.status().confState;
        this.log.info(
          {
            groupId: group.groupId,
            step: plan,
            voters: after.voters,
            learners: after.learners,
            replicas: target.replicas,
          },
          "reassignment step committed",
        );
        if (plan.kind === "transfer") return; // the new leader continues
      }
    } catch (e) {
      this.noteFailure(group.groupId);
      this.log.warn(
        { err: e, groupId: group.groupId },
        "reassignment step failed; retrying with backoff",
      );
    }
  }

  private async execute(
    group: RaftGroup,
    plan: Exclude<ReassignmentStep, { kind: "done" | "wait" }>,
    timeoutMs: number,
  ): Promise<void> {
    switch (plan.kind) {
      case "add-learner":
        if (learnerCapable(group)) await group.addLearner(plan.nodeId, { timeoutMs });
        return;
      case "add-voter":
        await group.addVoter(plan.nodeId, { timeoutMs });
        return;
      case "remove":
        await group.removeNode(plan.nodeId, { timeoutMs });
        return;
      case "transfer":
        group.transferLeadership(plan.to);
        this.noteFailure(group.groupId); // give the transfer time before this node tries again
        return;
    }
  }

  private noteFailure(groupId: string): void {
    const min = this.options.backoffMsMin ?? BACKOFF_MS_MIN_DEFAULT;
    const max = this.options.backoffMsMax ?? BACKOFF_MS_MAX_DEFAULT;
    const prev = this.backoff.get(groupId);
    const failures = Math.min(30, (prev?.failures ?? 0) + 1);
    const delayMs = Math.min(max, min * 2 ** (failures - 1));
    if (prev === undefined && this.backoff.size >= TRACKED_GROUPS_MAX) return;
    this.backoff.set(groupId, { failures, notBeforeMs: this.options.nowMs() + delayMs });
  }
}

/** Whether the group's voters differ from the target set (learners never count as done). */
export function differs(confState: ConfState, replicas: readonly NodeId[]): boolean {
  if (confState.learners.length > 0) return true;
  if (confState.voters.length !== new Set(replicas).size) return true;
  return confState.voters.some((v) => !replicas.includes(v));
}
