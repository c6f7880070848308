// The lagging-follower rule: silent, or not caught up with the previous commit, for lagTimeMaxMs.
import { describe, expect, it } from "vitest";
import { FollowerLagTracker, type LeadSample } from "./replication-health.js";
import type { PeerProgress } from "../raft/types.js";

const pr = (match: number, recentActive: boolean): PeerProgress => ({
  match,
  next: match + 1,
  state: "replicate",
  recentActive,
  isLearner: false,
});

function lead(commit: number, peers: Record<number, PeerProgress | undefined>): LeadSample {
  const progress = new Map<number, PeerProgress>();
  for (const [id, p] of Object.entries(peers)) if (p !== undefined) progress.set(Number(id), p);
  return {
    groupId: "t/0",
    status: {
      commit,
      leader: 0,
      confState: {
        voters: [0, ...Object.keys(peers).map(Number)],
        learners: [],
        outgoingVoters: [],
      },
      progress,
    },
  };
}

describe("FollowerLagTracker", () => {
  it("a follower that keeps up is never lagging, even when sampled between heartbeats", () => {
    const t = new FollowerLagTracker(0, 1_000);
    for (let ms = 0; ms <= 5_000; ms += 500)
      t.sample(ms, [lead(ms, { 1: pr(ms, ms % 1000 !== 0), 2: pr(ms - 1, true) })], 0);
    expect(t.underReplicatedGroups()).toBe(0);
  });

  it("a silent follower counts once lagTimeMaxMs has passed", () => {
    const t = new FollowerLagTracker(0, 1_000);
    t.sample(0, [lead(10, { 1: pr(10, true), 2: pr(10, true) })], 0);
    t.sample(900, [lead(10, { 1: pr(10, true), 2: pr(10, false) })], 0);
    expect(t.underReplicatedGroups()).toBe(0);
    t.sample(1_500, [lead(10, { 1: pr(10, true), 2: pr(10, false) })], 0);
    expect(t.underReplicatedGroups()).toBe(1);
  });

  it("a live follower that falls behind the commit index counts, with its lag in entries", () => {
    const t = new FollowerLagTracker(0, 1_000);
    for (let ms = 0; ms <= 2_000; ms += 500)
      t.sample(ms, [lead(100 + ms, { 1: pr(100 + ms, true), 2: pr(50, true) })], 0);
    expect(t.underReplicatedGroups()).toBe(1);
    expect(t.followerLag().get(2)).toBe(2_050);
    expect(t.followerLag().get(1)).toBe(0);
  });

  it("a voter missing from progress counts, and leadership lost forgets the group", () => {
    const t = new FollowerLagTracker(0, 1_000);
    t.sample(0, [lead(5, { 1: pr(5, true), 2: undefined })], 3);
    t.sample(2_000, [lead(5, { 1: pr(5, true), 2: undefined })], 3);
    expect(t.underReplicatedGroups()).toBe(1);
    expect(t.leaderlessGroups()).toBe(3);
    t.sample(2_500, [], 0);
    expect(t.underReplicatedGroups()).toBe(0);
  });
});
