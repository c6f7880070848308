// Swarm testing: each seed draws its own fault mix and Raft limits, so across many seeds the
// simulator explores calm runs, lossy runs, partition-heavy runs and crash-heavy runs.
import type { Random } from "../common/prng.js";
import type { RaftConfig } from "../raft/types.js";
import type { NetworkFaults } from "./sim-network.js";
import type { PeerLossPlan } from "./sim-peer-loss.js";

export interface SwarmPlan {
  network: NetworkFaults;
  partitionRate: number;
  crashRate: number;
  restartRate: number;
  tickSkipRate: number;
  proposeRate: number;
  transferRate: number;
  readRate: number;
  /** Chance per tick that the leader proposes a membership change (remove / add learner / promote). */
  membershipRate: number;
  /** Chance per pipeline round that the host's batch in flight does not land yet (a slow disk). */
  asyncReadyRate: number;
  /** Compact once this many entries are applied past the last snapshot (0: never). */
  compactEvery: number;
  /** Quiescence seeds: node-level liveness beats every this many ticks (SimLiveness). */
  livenessBeatEveryTicks: number;
  /** Quiescence seeds: client operations pause every other window of this many ticks (0: never), so groups go idle and quiesce under faults. */
  quietWindowTicks: number;
  /** The host's connection-loss signal as a fault (SimPeerLoss): late, missed and spurious reports. */
  peerLoss: PeerLossPlan;
  raft: Omit<RaftConfig, "id" | "applied">;
}

export function drawSwarmPlan(r: Random): SwarmPlan {
  const plan = drawBasePlan(r);
  // Drawn last so that every earlier field of a seed's plan stays what it was before it existed.
  const heartbeatTick = plan.raft.heartbeatTick;
  const idleHeartbeatTick = r.bool(0.5)
    ? heartbeatTick
    : r.int(heartbeatTick, plan.raft.electionTick);
  // Quiescence (half the seeds), drawn after idleHeartbeatTick for the same reason. Beats at
  // least three times per election timeout, as the host's transport does.
  const quiesce = r.bool(0.5);
  const livenessBeatEveryTicks = r.int(1, Math.max(2, Math.floor(plan.raft.electionTick / 3) + 1));
  const quietWindowTicks = quiesce ? r.int(15, 150) : 0;
  // Connection-loss signals (most seeds), drawn last for the same reason: up to three election
  // timeouts late, sometimes missed, and spurious ones up to once per 50 ticks.
  const e = plan.raft.electionTick;
  const peerLoss: PeerLossPlan = {
    enabled: r.bool(0.75),
    spuriousRate: r.bool(0.3) ? 0 : r.next() * 0.02,
    delayTicksMax: r.pick([0, 1, 3, e, 3 * e]),
    missRate: r.bool(0.5) ? 0 : r.next() * 0.5,
  };
  return {
    ...plan,
    livenessBeatEveryTicks,
    quietWindowTicks,
    peerLoss,
    raft: { ...plan.raft, idleHeartbeatTick, quiesce },
  };
}

function drawBasePlan(r: Random): SwarmPlan {
  const maxSizePerMsg = r.pick([64, 256, 4096, 1 << 20]);
  const plan = {
    network: {
      lossRate: r.bool(0.3) ? 0 : r.next() * 0.2,
      duplicateRate: r.bool(0.5) ? 0 : r.next() * 0.1,
      delayTicksMax: r.int(1, 6),
      reorder: r.bool(0.7),
    },
    partitionRate: r.bool(0.3) ? 0 : r.next() * 0.03,
    crashRate: r.bool(0.3) ? 0 : r.next() * 0.01,
    restartRate: 0.02 + r.next() * 0.1,
    tickSkipRate: r.next() * 0.2,
    proposeRate: 0.1 + r.next() * 0.8,
    transferRate: r.bool(0.5) ? 0 : r.next() * 0.01,
    readRate: r.next() * 0.05,
    membershipRate: r.bool(0.5) ? 0 : r.next() * 0.02,
    asyncReadyRate: r.bool(0.5) ? 0 : 0.2 + r.next() * 0.7,
    compactEvery: r.bool(0.3) ? 0 : r.int(5, 100),
    livenessBeatEveryTicks: 1,
    quietWindowTicks: 0,
    peerLoss: { enabled: false, spuriousRate: 0, delayTicksMax: 0, missRate: 0 },
    raft: {
      electionTick: 10,
      heartbeatTick: r.int(1, 4),
      maxSizePerMsg,
      maxInflightMsgs: r.int(1, 33),
      maxUncommittedEntriesSize: Math.max(maxSizePerMsg, r.pick([2048, 65536, 1 << 30])),
      maxCommittedSizePerReady: r.pick([64, 1024, 1 << 20]),
      preVote: r.bool(0.8),
      checkQuorum: r.bool(0.8),
    },
  };
  // No draw of its own, so every seed keeps its plan: half the plans bound inflight bytes too.
  return {
    ...plan,
    raft: {
      ...plan.raft,
      maxInflightBytes: plan.raft.maxInflightMsgs % 2 === 0 ? maxSizePerMsg * 3 : 0,
    },
  };
}
