// A (pre-)candidate asks again a voter whose vote request the host reported lost
// (reportUnreachable), at the next slot of electionTick/8 ticks, instead of waiting out a
// randomized election timeout. The case: the leader dies right after another node restarted;
// only one survivor follows the dead leader and gets the connection-loss signal, and its first
// pre-vote goes down with a connection that broke (raft-crash-failover.test.ts, back to back).
import { describe, expect, it } from "vitest";
import { TestCluster } from "./testing/test-cluster.js";
import { MessageType, type Message } from "./types.js";

const ELECTION_TICK = 30;
const CONFIG = { electionTick: ELECTION_TICK, heartbeatTick: 2 };

/** Leader 1 with a committed entry; node 3 then restarts (knows no leader); node 1 dies. */
function afterRestartThenCrash(seed: number): TestCluster {
  const c = new TestCluster([1, 2, 3], CONFIG, seed);
  c.elect(1);
  c.propose(1, "a");
  c.tickAll(3);
  c.restart(3, CONFIG);
  c.isolate(1);
  return c;
}

/** Drops node 2's first pre-vote to node 3 (and node 1's traffic); `report` says so to node 2. */
function loseFirstPreVote(c: TestCluster, report: boolean): () => number {
  let lost = 0;
  c.drop = (m: Message) => {
    if (m.from === 1 || m.to === 1) return true;
    if (lost === 0 && m.type === MessageType.PreVote && m.from === 2 && m.to === 3) {
      lost += 1;
      if (report) c.get(2).node.reportUnreachable(3);
      return true;
    }
    return false;
  };
  return () => lost;
}

describe("vote requests reported lost are sent again", () => {
  it("the one survivor with the signal still elects within a few slots (20 seeds)", () => {
    for (let seed = 1; seed <= 20; seed++) {
      const c = afterRestartThenCrash(seed);
      const lost = loseFirstPreVote(c, true);
      c.get(2).node.reportNodeLost(1);
      const ticks = c.ticksUntilLeader([2, 3], 3 * ELECTION_TICK);
      expect(lost(), `seed ${seed}: the pre-vote was lost`).toBe(1);
      // Campaign within 1 + 2 slots, then the resend at the next slot boundary.
      expect(ticks, `seed ${seed}`).toBeLessThanOrEqual(1 + 4 * (ELECTION_TICK / 8));
      expect(c.leader(), `seed ${seed}`).toBe(2);
    }
  });

  it("without the report the same loss costs a randomized election timeout (the test can tell)", () => {
    const c = afterRestartThenCrash(1);
    const lost = loseFirstPreVote(c, false);
    c.get(2).node.reportNodeLost(1);
    expect(c.ticksUntilLeader([2, 3], 3 * ELECTION_TICK)).toBeGreaterThanOrEqual(ELECTION_TICK);
    expect(lost()).toBe(1);
  });

  it("a voter that ignored the request (its leader lease) is not asked again", () => {
    const c = new TestCluster([1, 2, 3], CONFIG, 4);
    c.elect(1);
    c.propose(1, "a");
    c.tickAll(3);
    c.isolate(1);
    // Only node 2 got the signal: node 3 still holds its lease and ignores the pre-vote.
    c.get(2).node.reportNodeLost(1);
    const sentBefore = c.get(2).sent.length;
    c.tick(2, ELECTION_TICK / 8 + 1);
    c.deliver();
    expect(c.get(2).node.status().role).toBe("pre-candidate");
    c.tick(2, ELECTION_TICK / 2);
    c.deliver();
    const preVotesTo3 = c
      .get(2)
      .sent.slice(sentBefore)
      .filter((m) => m.type === MessageType.PreVote && m.to === 3);
    expect(preVotesTo3).toHaveLength(1);
  });

  it("a report about a voter that already answered, or from a follower, sends nothing", () => {
    const c = new TestCluster([1, 2, 3], CONFIG, 5);
    c.elect(1);
    c.tickAll(3);
    const before = c.get(2).sent.length;
    c.get(2).node.reportUnreachable(3); // a follower: nothing to resend
    c.tick(2, ELECTION_TICK / 8);
    c.deliver();
    expect(
      c
        .get(2)
        .sent.slice(before)
        .filter((m) => m.type === MessageType.PreVote || m.type === MessageType.Vote),
    ).toEqual([]);
  });
});
