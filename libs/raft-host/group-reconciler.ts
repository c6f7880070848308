// Keeps the Raft groups a node hosts in line with cluster metadata; one reconciler shared by the
// broker (topic and __consumer_offsets partitions) and the coordinator (__transaction_state).
// On every metadata view (views arriving during a pass collapse into the newest) and every few
// seconds it: points the host at the peers of its role; opens the groups whose replica set
// includes this node (a failed open is logged and retried on the next pass, the others still
// open); drops a group left out of its replica set once this replica's own log has applied a
// configuration without it, or at once when its topic is gone; where this node leads a group,
// moves its voters to the placed replicas (reassignment.ts, docs/reassignment.md); and reports
// the leaderships held here that metadata does not show yet. What differs per service sits in
// the hooks: which groups exist, how a group's state machine is built and opened, and what a
// service does when a group is dropped. The timer's pass over every group runs only while
// something waits for it (a failed open, a drop waiting for its commit, a move backing off): an
// idle node with thousands of groups does no per-group work but the membership line's check.
import type { Logger } from "../common/logger.js";
import type { ClusterMetadata, Role } from "../metadata/types.js";
import type { RaftGroup, RaftHostApi } from "./api.js";
import { ReassignmentDriver, removalCommittedLocally } from "./reassignment.js";
import {
  balanceLeaders,
  LEADER_BALANCE_DEFAULTS,
  preferredCounts,
  type BalanceCandidate,
  type LeaderBalanceOptions,
} from "./leader-balance.js";

/** A leadership held here, as reported to the controller. */
export interface LeaderReport {
  readonly topic: string;
  readonly partition: number;
  readonly leader: number;
  readonly term: number;
}

/** One partition group of the view, hosted here or not. */
export interface GroupPlacement {
  readonly groupId: string;
  readonly topic: string;
  readonly partition: number;
  /** Target replica set; the group is hosted here when it includes this node. */
  readonly replicas: readonly number[];
  /** -1 unknown. */
  readonly leader: number;
  readonly leaderTerm: number;
}

/** What differs between the services hosting groups; T is what a service keeps per open group. */
export interface GroupReconcilerHooks<T, P extends GroupPlacement = GroupPlacement> {
  /** Every partition group of the service's topics in the view (hosted here or not). */
  placements(m: ClusterMetadata): Iterable<P>;
  /**
   * Builds the group's state machine and opens it on the host (cleaning up after itself when
   * that throws); undefined when this node does not host such groups after all.
   */
  open(placement: P): Promise<T | undefined>;
  /** A hosted group seen again in a new view (a topic config change). */
  refresh?(entry: T, placement: P): void;
  /** Whether a hosted group missing from the view is gone for good (its topic deleted): dropped at once. */
  deleted?(m: ClusterMetadata, groupId: string): boolean;
  /** A group is about to be dropped: stop serving from it (before the host deletes its data). */
  release?(entry: T, groupId: string): void;
  /** A group was dropped from the host: free what the service kept for it. */
  discard?(entry: T, groupId: string): void;
  /** Runs on every timer pass (after the metadata pass is queued). */
  housekeeping?(): void;
}

export interface GroupReconcilerOptions<T, P extends GroupPlacement> {
  readonly host: RaftHostApi;
  readonly nodeId: number;
  /** The role whose nodes are this node's Raft peers (and count as live replicas). */
  readonly role: Role;
  readonly logger: Logger;
  readonly nowMs: () => number;
  readonly reportLeaders: (changes: LeaderReport[]) => Promise<void>;
  readonly hooks: GroupReconcilerHooks<T, P>;
  /** Period of the pass without a new view (pending drops, reassignment retries, lost reports). */
  readonly passIntervalMs?: number;
  /** Bound on groups opened or dropped in one pass (the next pass continues). */
  readonly changesPerPassMax?: number;
  /** Preferred leaders (leader-balance.ts): on unless false. */
  readonly leaderBalance?: LeaderBalanceOptions | false;
}

const PASS_INTERVAL_MS_DEFAULT = 2_000;
const CHANGES_PER_PASS_MAX_DEFAULT = 1_000;
/** Views applied back to back before update() resolves (newer views collapse into one). */
const PASSES_PER_UPDATE_MAX = 100;
const REPORTS_PER_CALL_MAX = 500;
/** Groups being opened at once in a pass. */
const OPENS_IN_FLIGHT_MAX = 16;

interface Hosted<T, P> {
  readonly entry: T;
  placement: P;
}

export class GroupReconciler<T, P extends GroupPlacement = GroupPlacement> {
  private metadata: ClusterMetadata | undefined;
  private pending: ClusterMetadata | undefined;
  private applying: Promise<void> | undefined;
  private readonly hosted = new Map<string, Hosted<T, P>>();
  private readonly timer: NodeJS.Timeout;
  private readonly balanceTimer: NodeJS.Timeout | undefined;
  private readonly balance: Required<LeaderBalanceOptions> | undefined;
  /** Since when (local clock) each node of the role has been live in metadata, per incarnation. */
  private readonly liveSince = new Map<number, { incarnation: string; sinceMs: number }>();
  private readonly reassignment: ReassignmentDriver;
  private readonly unsubscribeLeader: () => void;
  /** Last membership logged per group (a line on every change: operators and tests read it). */
  private readonly loggedMembership = new Map<string, string>();
  /** Applied index at each group's last membership check (a membership changes by applying). */
  private readonly membershipCheckedAt = new Map<string, number>();
  /** A pass left work for the next one (a failed open, a drop waiting, changes over the bound). */
  private retryPass = false;
  private reporting = false;
  private reportAgain = false;
  private closed = false;

  constructor(private readonly options: GroupReconcilerOptions<T, P>) {
    this.reassignment = new ReassignmentDriver({
      nodeId: options.nodeId,
      logger: options.logger,
      nowMs: options.nowMs,
    });
    this.timer = setInterval(
      () => this.housekeeping(),
      options.passIntervalMs ?? PASS_INTERVAL_MS_DEFAULT,
    );
    this.timer.unref();
    this.balance =
      options.leaderBalance === false
        ? undefined
        : { ...LEADER_BALANCE_DEFAULTS, ...options.leaderBalance };
    if (this.balance !== undefined) {
      this.balanceTimer = setInterval(() => this.balanceLeaders(), this.balance.intervalMs);
      this.balanceTimer.unref();
    }
    this.unsubscribeLeader = options.host.onLeaderChange((change) => {
      if (change.leader !== options.nodeId || !this.hosted.has(change.groupId)) return;
      void this.reportOwnLeaderships();
      // A new leader picks up an unfinished move at once (it plans from the current ConfState).
      // Only that group: a pass over every hosted group per leader change is quadratic when
      // thousands of groups elect at once (a new topic, a broker's failover).
      setImmediate(() => this.reconcileMembership(change.groupId));
    });
  }

  /** The last view applied (or being applied). */
  current(): ClusterMetadata | undefined {
    return this.metadata;
  }

  /** What the service keeps for a hosted group. */
  get(groupId: string): T | undefined {
    return this.hosted.get(groupId)?.entry;
  }

  has(groupId: string): boolean {
    return this.hosted.has(groupId);
  }

  *entries(): IterableIterator<T> {
    for (const h of this.hosted.values()) yield h.entry;
  }

  /** Applies a view; views arriving while one is applied collapse into the newest. */
  update(m: ClusterMetadata): Promise<void> {
    this.pending = m;
    if (this.applying === undefined) {
      this.applying = (async () => {
        for (
          let pass = 0;
          pass < PASSES_PER_UPDATE_MAX && this.pending !== undefined && !this.closed;
          pass++
        ) {
          const view = this.pending;
          this.pending = undefined;
          try {
            await this.apply(view);
          } catch (e) {
            this.options.logger.error({ err: e }, "applying metadata failed");
          }
        }
      })().finally(() => {
        this.applying = undefined;
      });
    }
    return this.applying;
  }

  private async apply(m: ClusterMetadata): Promise<void> {
    this.metadata = m;
    this.retryPass = false;
    const { host, nodeId, role } = this.options;
    for (const n of m.nodes)
      if (n.role === role && n.nodeId !== nodeId) host.setPeerAddress(n.nodeId, n.address);
    this.noteLiveness(m);
    const placements = new Map<string, P>();
    for (const p of this.options.hooks.placements(m)) placements.set(p.groupId, p);
    const changesMax = this.options.changesPerPassMax ?? CHANGES_PER_PASS_MAX_DEFAULT;
    let changes = 0;
    const toOpen: P[] = [];
    for (const p of placements.values()) {
      if (!p.replicas.includes(nodeId)) continue;
      const hosted = this.hosted.get(p.groupId);
      if (hosted !== undefined) {
        hosted.placement = p;
        this.options.hooks.refresh?.(hosted.entry, p);
        continue;
      }
      if (changes >= changesMax) continue;
      changes++;
      toOpen.push(p);
    }
    // Several at once: an open mostly waits (files created in the thread pool, level reads).
    await eachInParallel(toOpen, OPENS_IN_FLIGHT_MAX, (p) => this.open(p));
    for (const [groupId, hosted] of [...this.hosted]) {
      const p = placements.get(groupId);
      if (p !== undefined) hosted.placement = p; // a moved-away group still follows its new replica set
      if (
        p?.replicas.includes(nodeId) === true ||
        changes >= changesMax ||
        !this.mayDrop(m, groupId, p)
      )
        continue;
      changes++;
      await this.drop(groupId, hosted.entry);
    }
    if (changes >= changesMax && this.pending === undefined) this.pending = m;
    if (changes >= changesMax) this.retryPass = true;
    void this.reportOwnLeaderships();
    this.reconcileMemberships();
  }

  private async open(p: P): Promise<void> {
    // One group that fails to open must not keep the ones after it closed: log it and go on
    // (the timer runs the pass again every couple of seconds, retrying it).
    try {
      const entry = await this.options.hooks.open(p);
      if (entry === undefined) return;
      this.hosted.set(p.groupId, { entry, placement: p });
      this.options.logger.debug(
        { groupId: p.groupId, replicas: p.replicas },
        "opened a hosted group",
      );
    } catch (e) {
      if (this.closed) throw e;
      this.retryPass = true;
      this.options.logger.error(
        { err: e, groupId: p.groupId },
        "opening a hosted group failed; retrying with the next pass",
      );
    }
  }

  /** A hosted group not placed here: gone with its topic, or moved away and its removal applied here. */
  private mayDrop(m: ClusterMetadata, groupId: string, p: P | undefined): boolean {
    if (p === undefined && this.options.hooks.deleted?.(m, groupId) === true) {
      this.options.logger.info({ groupId }, "dropping the replica of a deleted topic");
      return true;
    }
    const group = this.options.host.group(groupId);
    // Moved away: keep serving as a member until this replica's log shows its removal.
    if (
      group !== undefined &&
      !removalCommittedLocally(group.status().confState, this.options.nodeId)
    ) {
      this.retryPass = true;
      return false;
    }
    this.options.logger.info(
      { groupId, voters: group?.status().confState.voters },
      "dropping a replica removed from the group",
    );
    return true;
  }

  private async drop(groupId: string, entry: T): Promise<void> {
    this.options.hooks.release?.(entry, groupId);
    this.hosted.delete(groupId);
    this.loggedMembership.delete(groupId);
    this.membershipCheckedAt.delete(groupId);
    await this.options.host
      .dropGroup(groupId)
      .catch((e: unknown) => this.options.logger.warn({ err: e, groupId }, "dropGroup failed"));
    this.options.hooks.discard?.(entry, groupId);
  }

  /** Where this node leads a group whose voters differ from the placed replicas, move them. */
  private reconcileMemberships(): void {
    const isLive = this.liveness();
    if (isLive === undefined) return;
    for (const groupId of this.hosted.keys()) this.reconcileGroup(groupId, isLive);
  }

  /** reconcileMemberships for one group (a leadership just taken here). */
  private reconcileMembership(groupId: string): void {
    const isLive = this.liveness();
    if (isLive !== undefined) this.reconcileGroup(groupId, isLive);
  }

  /** Whether a node of this role is alive in the last view; undefined before one (or closed). */
  private liveness(): ((id: number) => boolean) | undefined {
    const m = this.metadata;
    if (m === undefined || this.closed) return undefined;
    const { role } = this.options;
    const live = new Set(m.nodes.filter((n) => n.role === role && n.alive).map((n) => n.nodeId));
    return (id) => live.has(id);
  }

  private reconcileGroup(groupId: string, isLive: (id: number) => boolean): void {
    const hosted = this.hosted.get(groupId);
    const group = this.options.host.group(groupId);
    if (hosted === undefined || group === undefined) return;
    this.logMembership(group);
    const replicas = hosted.placement.replicas;
    if (group.isLeader() && replicas.length > 0)
      this.reassignment.reconcile(group, { replicas, isLive });
  }

  private logMembership(group: RaftGroup): void {
    this.membershipCheckedAt.set(group.groupId, group.appliedIndex());
    const { voters, learners } = group.status().confState;
    const key = `${voters.join(",")}|${learners.join(",")}`;
    if (this.loggedMembership.get(group.groupId) === key) return;
    this.loggedMembership.set(group.groupId, key);
    this.options.logger.info(
      { groupId: group.groupId, voters, learners, applied: group.appliedIndex() },
      "replica membership",
    );
  }

  /** Tells the controller about every leadership held here that metadata does not show yet. */
  private async reportOwnLeaderships(): Promise<void> {
    if (this.metadata === undefined || this.closed) return;
    if (this.reporting) {
      this.reportAgain = true; // one more round once the report in flight is answered
      return;
    }
    this.reporting = true;
    try {
      for (let round = 0; round < 2; round++) {
        this.reportAgain = false;
        const changes = this.unreportedLeaderships();
        if (changes.length > 0) await this.options.reportLeaders(changes);
        if (!this.reportAgain || this.closed) break;
      }
    } catch (e) {
      this.options.logger.warn({ err: e }, "reporting leaders failed; will retry");
    } finally {
      this.reporting = false;
    }
  }

  private unreportedLeaderships(): LeaderReport[] {
    const changes: LeaderReport[] = [];
    const nodeId = this.options.nodeId;
    for (const [groupId, { placement: known }] of this.hosted) {
      const group = this.options.host.group(groupId);
      if (group === undefined || !group.isLeader()) continue;
      if (known.leader === nodeId && known.leaderTerm >= group.term()) continue;
      changes.push({
        topic: known.topic,
        partition: known.partition,
        leader: nodeId,
        term: group.term(),
      });
      if (changes.length >= REPORTS_PER_CALL_MAX) break;
    }
    return changes;
  }

  private noteLiveness(m: ClusterMetadata): void {
    const nowMs = this.options.nowMs();
    const seen = new Set<number>();
    for (const n of m.nodes) {
      if (n.role !== this.options.role || !n.alive) continue;
      seen.add(n.nodeId);
      const known = this.liveSince.get(n.nodeId);
      if (known === undefined || known.incarnation !== n.incarnation)
        this.liveSince.set(n.nodeId, { incarnation: n.incarnation, sinceMs: nowMs });
    }
    for (const id of [...this.liveSince.keys()]) if (!seen.has(id)) this.liveSince.delete(id);
  }

  /** Hands groups led here to their preferred leaders where those are back (leader-balance.ts). */
  private balanceLeaders(): number {
    const m = this.metadata;
    const b = this.balance;
    if (m === undefined || b === undefined || this.closed) return 0;
    const nowMs = this.options.nowMs();
    const isBack = (id: number): boolean => {
      const live = this.liveSince.get(id);
      return live !== undefined && nowMs - live.sinceMs >= b.liveForMs;
    };
    const counts = preferredCounts(this.options.hooks.placements(m));
    const host = this.options.host;
    const hosted = this.hosted;
    function* led(): Iterable<BalanceCandidate> {
      for (const [groupId, h] of hosted) {
        const group = host.group(groupId);
        if (group === undefined || !group.isLeader()) continue;
        yield {
          placement: h.placement,
          caughtUp: (preferred) => {
            const status = group.status();
            return (status.progress.get(preferred)?.match ?? -1) >= status.commit;
          },
          transferLeadership: (to) => group.transferLeadership(to),
        };
      }
    }
    const moves = balanceLeaders(this.options.nodeId, counts, isBack, led(), b);
    if (moves > 0)
      this.options.logger.info({ moves }, "handing leaderships back to their preferred replicas");
    return moves;
  }

  private housekeeping(): void {
    if (this.closed) return;
    void this.reportOwnLeaderships();
    // Re-run the (serialized) metadata pass while it has work: drops wait on commits, moves
    // retry after backoff, failed opens retry. Otherwise only the membership lines.
    if (this.metadata !== undefined && this.pending === undefined && this.applying === undefined) {
      if (this.retryPass || this.reassignment.pending()) void this.update(this.metadata);
      else this.logMembershipChanges();
    }
    this.options.hooks.housekeeping?.();
  }

  /** The membership line of every group that applied something since its last check. */
  private logMembershipChanges(): void {
    for (const groupId of this.hosted.keys()) {
      const group = this.options.host.group(groupId);
      if (group === undefined) continue;
      if (this.membershipCheckedAt.get(groupId) === group.appliedIndex()) continue;
      this.logMembership(group);
    }
  }

  close(): void {
    this.closed = true;
    clearInterval(this.timer);
    clearInterval(this.balanceTimer);
    this.unsubscribeLeader();
  }
}

/** Runs fn over items, at most `max` at a time (fn does not throw: open() logs its failures). */
async function eachInParallel<T>(
  items: readonly T[],
  max: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(max, items.length) }, worker));
}

/** The topic and partition of a partition group id (<topic>/<partition>). */
export function splitGroupId(groupId: string): [string, number] {
  const slash = groupId.lastIndexOf("/");
  return [groupId.slice(0, slash), Number(groupId.slice(slash + 1))];
}
