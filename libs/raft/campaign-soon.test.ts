// campaignSoon: a group just created, whose preferred leader campaigns after a couple of ticks
// instead of a randomized election timeout (RaftHost.openGroup calls it on the first initial
// voter), gets that leader at once; the other replicas never compete; and once a leader is
// known the call changes nothing.
import { describe, expect, it } from "vitest";
import { TestCluster } from "./testing/test-cluster.js";

const ELECTION_TICK = 30;
const CONFIG = { electionTick: ELECTION_TICK, heartbeatTick: 2 };

describe("campaignSoon", () => {
  it("a new group's preferred leader leads within a few ticks, in the first term (20 seeds)", () => {
    for (let seed = 1; seed <= 20; seed++) {
      const c = new TestCluster([1, 2, 3], CONFIG, seed);
      c.get(2).node.campaignSoon(2);
      expect(c.ticksUntilLeader([1, 2, 3], 3 * ELECTION_TICK), `seed ${seed}`).toBeLessThanOrEqual(
        2,
      );
      expect(c.leader(), `seed ${seed}`).toBe(2);
      expect(c.get(2).node.status().term, `seed ${seed}: no competing campaign`).toBe(1);
    }
  });

  it("without it the first leader waits out an election timeout (the test can tell)", () => {
    const c = new TestCluster([1, 2, 3], CONFIG, 1);
    expect(c.ticksUntilLeader([1, 2, 3], 3 * ELECTION_TICK)).toBeGreaterThanOrEqual(ELECTION_TICK);
  });

  it("its votes lost (the others had not opened the group yet), it campaigns again at its normal timeout", () => {
    const c = new TestCluster([1, 2, 3], CONFIG, 2);
    c.isolate(1);
    c.get(1).node.campaignSoon(2);
    c.tickAll(3);
    expect(c.leader()).toBeUndefined();
    c.heal();
    expect(c.ticksUntilLeader([1, 2, 3], 3 * ELECTION_TICK)).toBeLessThanOrEqual(2 * ELECTION_TICK);
  });

  it("a replica that opens the group late still gets the request: it is sent again each slot", () => {
    for (let seed = 1; seed <= 10; seed++) {
      const c = new TestCluster([1, 2, 3], CONFIG, seed);
      // Nodes 2 and 3 have not opened the group for the first 10 ticks: they drop every message.
      let ticks = 0;
      c.drop = (m) => ticks < 10 && m.from === 1;
      c.get(1).node.campaignSoon(2);
      for (; ticks < 3 * ELECTION_TICK && c.leader() === undefined; ticks++) c.tickAll(1);
      expect(c.leader(), `seed ${seed}`).toBe(1);
      expect(ticks, `seed ${seed}`).toBeLessThanOrEqual(10 + ELECTION_TICK / 8 + 1);
      expect(c.get(1).node.status().term, `seed ${seed}`).toBe(1);
    }
  });

  it("once a leader is known it changes nothing: no campaign, no new term", () => {
    const c = new TestCluster([1, 2, 3], CONFIG, 3);
    c.elect(1);
    c.tickAll(3);
    const term = c.get(1).node.status().term;
    c.get(2).node.campaignSoon(1);
    c.tickAll(3 * ELECTION_TICK);
    expect(c.leader()).toBe(1);
    for (const id of [1, 2, 3]) expect(c.get(id).node.status().term).toBe(term);
  });
});
