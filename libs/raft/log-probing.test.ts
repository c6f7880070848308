// Probing a follower whose log diverges from the leader's: the leader must skip a whole
// conflicting term per round trip, using the term the follower puts in its rejection, instead
// of backing off one index at a time (simulator seed 200369: 37 divergent entries needed more
// round trips than a leader tenure lasted, so the follower never caught up).
import { describe, expect, it } from "vitest";
import { TestCluster } from "./testing/test-cluster.js";
import { MessageType, type RaftConfig } from "./types.js";

/** Entries the deposed leader appends alone, all of its old term: the divergent suffix. */
const DIVERGENT_ENTRIES = 40;
/** Ticks after healing: heartbeats every tick, so a handful of probe round trips. */
const HEAL_TICKS = 5;

function rejectionsWhileCatchingUp(overrides: Partial<RaftConfig>): {
  rejections: number;
  caughtUp: boolean;
} {
  const c = new TestCluster([1, 2, 3], overrides);
  c.elect(1);
  c.propose(1, "committed");
  // Node 1, still leader of its term, is cut off and appends a long suffix nobody else gets.
  c.isolate(1);
  for (let i = 0; i < DIVERGENT_ENTRIES; i++) c.propose(1, `lost-${i}`);
  // Nodes 2 and 3 elect one of them (a newer term), which writes as many entries at the same
  // indexes, then hand leadership to the other: a new leader starts probing at its last index.
  c.tickAll(3 * 10);
  const first = c.leader()!;
  expect([2, 3]).toContain(first);
  for (let i = 0; i < DIVERGENT_ENTRIES; i++) c.propose(first, `kept-${i}`);
  const leader = first === 2 ? 3 : 2;
  c.get(first).node.transferLeadership(leader);
  c.deliver();
  expect(c.leader()).toBe(leader);
  const before = c.get(1).sent.length;
  c.heal();
  // The leader's heartbeats reach node 1 again, which must be probed back to the common prefix.
  c.tickAll(HEAL_TICKS);
  const rejections = c
    .get(1)
    .sent.slice(before)
    .filter((m) => m.type === MessageType.AppendResponse && m.reject).length;
  const l = c.get(leader).node;
  const caughtUp =
    c.get(1).node.lastIndex() === l.lastIndex() &&
    c.get(1).node.status().commit === l.status().commit;
  return { rejections, caughtUp };
}

describe("log probing", () => {
  for (const cfg of [
    { preVote: false, checkQuorum: false },
    { preVote: true, checkQuorum: true },
  ]) {
    it(`skips a divergent term per round trip (preVote ${cfg.preVote}, checkQuorum ${cfg.checkQuorum})`, () => {
      const { rejections, caughtUp } = rejectionsWhileCatchingUp(cfg);
      expect(caughtUp).toBe(true);
      // One rejection finds node 1's last entry (old term), a second lands on the common prefix.
      // Backing off one index per rejection took about DIVERGENT_ENTRIES of them.
      expect(rejections).toBeLessThanOrEqual(3);
    });
  }
});
