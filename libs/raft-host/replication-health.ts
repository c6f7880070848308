// Replication health of the Raft groups this process leads, sampled on a timer (not at scrape
// time: "lagging for longer than X" needs regular samples whatever the scrape interval):
//   tern_raft_under_replicated_groups   groups led here with a voter that is lagging
//   tern_raft_follower_lag_entries{peer} the leader's commit index minus the peer's match
//                                         index, the worst over groups led here
//   tern_raft_leaderless_groups          groups open here that know no leader (this replica's view)
// A voter is lagging (Kafka's replica.lag.time.max.ms rule, on Raft progress) when it has not
// answered the leader (recentActive) for lagTimeMaxMs, or has not reached the commit index the
// leader had one sample earlier for lagTimeMaxMs. So a paused or partitioned follower and a
// live one that cannot keep up both count; a follower merely a heartbeat behind does not.
// Why the leaders and not the controller: only a leader sees its followers' match indexes;
// the controller sees liveness leases, which a SIGSTOPped process keeps for a lease at most and
// a slow one keeps forever.
import { Gauge, type Registry } from "prom-client";
import type { NodeId, RaftStatus } from "../raft/types.js";

export const REPLICA_LAG_TIME_MAX_MS_DEFAULT = 10_000;
export const REPLICATION_SAMPLE_INTERVAL_MS_DEFAULT = 1_000;

export interface LeadSample {
  readonly groupId: string;
  /**
   * Absent for a quiesced group: quiescence needs every voter to have answered and caught up,
   * so its followers count as active and caught up now (no status() per idle group per sample).
   */
  readonly status?: Pick<RaftStatus, "commit" | "confState" | "progress" | "leader">;
}

interface PeerTrack {
  lastActiveMs: number;
  lastCaughtUpMs: number;
}

interface GroupTrack {
  previousCommit: number;
  readonly peers: Map<NodeId, PeerTrack>;
}

/** Pure bookkeeping behind the gauges; one per host. */
export class FollowerLagTracker {
  private readonly groups = new Map<string, GroupTrack>();
  private underReplicated = 0;
  private lagByPeer = new Map<NodeId, number>();
  private leaderless = 0;

  constructor(
    readonly selfId: NodeId,
    readonly lagTimeMaxMs: number,
  ) {}

  /** One pass: the groups led here (with status) and how many open groups know no leader. */
  sample(nowMs: number, led: Iterable<LeadSample>, leaderlessGroups: number): void {
    const seen = new Set<string>();
    const lag = new Map<NodeId, number>();
    let under = 0;
    for (const { groupId, status } of led) {
      seen.add(groupId);
      if (status === undefined) {
        for (const p of this.groups.get(groupId)?.peers.values() ?? []) {
          p.lastActiveMs = nowMs;
          p.lastCaughtUpMs = nowMs;
        }
        continue;
      }
      let track = this.groups.get(groupId);
      if (track === undefined) {
        track = { previousCommit: status.commit, peers: new Map() };
        this.groups.set(groupId, track);
      }
      let lagging = false;
      for (const peer of status.confState.voters) {
        if (peer === this.selfId) continue;
        let p = track.peers.get(peer);
        if (p === undefined) {
          p = { lastActiveMs: nowMs, lastCaughtUpMs: nowMs };
          track.peers.set(peer, p);
        }
        const pr = status.progress.get(peer);
        if (pr?.recentActive) p.lastActiveMs = nowMs;
        if (pr !== undefined && pr.match >= track.previousCommit) p.lastCaughtUpMs = nowMs;
        if (
          nowMs - p.lastActiveMs > this.lagTimeMaxMs ||
          nowMs - p.lastCaughtUpMs > this.lagTimeMaxMs
        )
          lagging = true;
        const entries = Math.max(0, status.commit - (pr?.match ?? 0));
        lag.set(peer, Math.max(lag.get(peer) ?? 0, entries));
      }
      for (const peer of track.peers.keys())
        if (!status.confState.voters.includes(peer)) track.peers.delete(peer);
      track.previousCommit = status.commit;
      if (lagging) under += 1;
    }
    // Leadership lost or group dropped: start afresh if it comes back.
    for (const groupId of this.groups.keys()) if (!seen.has(groupId)) this.groups.delete(groupId);
    this.underReplicated = under;
    this.lagByPeer = lag;
    this.leaderless = leaderlessGroups;
  }

  underReplicatedGroups(): number {
    return this.underReplicated;
  }
  followerLag(): ReadonlyMap<NodeId, number> {
    return this.lagByPeer;
  }
  leaderlessGroups(): number {
    return this.leaderless;
  }
}

/** What the sampler reads from each open group. */
export interface ReplicationSource {
  readonly groupId: string;
  isLeader(): boolean;
  leader(): NodeId;
  status(): RaftStatus;
  /** Whether the group is quiesced (then every voter answered and is caught up). */
  isQuiesced?(): boolean;
}

/** TERN_REPLICA_LAG_TIME_MAX_MS (100..600000), default 10 s. */
export function replicaLagTimeMaxMs(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.TERN_REPLICA_LAG_TIME_MAX_MS;
  if (raw === undefined || raw === "") return REPLICA_LAG_TIME_MAX_MS_DEFAULT;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 100 || n > 600_000)
    throw new Error(`TERN_REPLICA_LAG_TIME_MAX_MS must be an integer in 100..600000, got "${raw}"`);
  return n;
}

const trackersByRegistry = new WeakMap<Registry, Set<FollowerLagTracker>>();

/**
 * Samples the host's groups every intervalMs into a tracker whose figures the registry's
 * gauges sum (several hosts in one process share the gauges). Returns the stop function.
 */
export function registerReplicationHealth(
  selfId: NodeId,
  groups: () => Iterable<ReplicationSource>,
  register: Registry,
  options: { lagTimeMaxMs?: number; intervalMs?: number; nowMs?: () => number } = {},
): () => void {
  const tracker = new FollowerLagTracker(selfId, options.lagTimeMaxMs ?? replicaLagTimeMaxMs());
  const nowMs = options.nowMs ?? (() => performance.now());
  const all = registryTrackers(register);
  all.add(tracker);
  const sample = (): void => {
    const led: LeadSample[] = [];
    let leaderless = 0;
    for (const g of groups()) {
      if (g.isLeader())
        led.push(
          g.isQuiesced?.() === true
            ? { groupId: g.groupId }
            : { groupId: g.groupId, status: g.status() },
        );
      else if (g.leader() < 0) leaderless += 1;
    }
    tracker.sample(nowMs(), led, leaderless);
  };
  const timer = setInterval(sample, options.intervalMs ?? REPLICATION_SAMPLE_INTERVAL_MS_DEFAULT);
  timer.unref();
  return () => {
    clearInterval(timer);
    all.delete(tracker);
  };
}

function registryTrackers(register: Registry): Set<FollowerLagTracker> {
  const existing = trackersByRegistry.get(register);
  if (existing !== undefined) return existing;
  const all = new Set<FollowerLagTracker>();
  trackersByRegistry.set(register, all);
  const registers = [register];
  const sum = (read: (t: FollowerLagTracker) => number): number =>
    [...all].reduce((s, t) => s + read(t), 0);
  if (!register.getSingleMetric("tern_raft_under_replicated_groups")) {
    new Gauge({
      name: "tern_raft_under_replicated_groups",
      help: "Raft groups led here with a voter that has not answered, or not caught up with the commit index, within TERN_REPLICA_LAG_TIME_MAX_MS",
      registers,
      collect() {
        this.set(sum((t) => t.underReplicatedGroups()));
      },
    });
    new Gauge({
      name: "tern_raft_leaderless_groups",
      help: "Raft groups open here whose replica knows no leader",
      registers,
      collect() {
        this.set(sum((t) => t.leaderlessGroups()));
      },
    });
    new Gauge({
      name: "tern_raft_follower_lag_entries",
      help: "leader commit index minus the peer's match index, the worst over the groups led here",
      labelNames: ["peer"],
      registers,
      collect() {
        this.reset();
        const worst = new Map<NodeId, number>();
        for (const t of all)
          for (const [peer, n] of t.followerLag())
            worst.set(peer, Math.max(worst.get(peer) ?? 0, n));
        for (const [peer, n] of worst) this.set({ peer: String(peer) }, n);
      },
    });
  }
  return all;
}
