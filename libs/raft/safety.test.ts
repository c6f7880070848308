// One test per safety claim of the Raft paper (Figure 3), each on a scenario built to break it.
import { describe, expect, it } from "vitest";
import { SeededRandom } from "../common/prng.js";
import { TestCluster, appliedData } from "./testing/test-cluster.js";
import { MessageType, type NodeId } from "./types.js";

function logTerms(c: TestCluster, id: NodeId): number[] {
  const s = c.get(id).storage;
  const out: number[] = [];
  for (let i = s.firstIndex(); i <= s.lastIndex(); i++) out.push(s.term(i));
  return out;
}

describe("Raft safety claims", () => {
  it("election safety: at most one leader per term, under contested elections and random loss", () => {
    const random = new SeededRandom(7);
    const leaderOfTerm = new Map<number, NodeId>();
    const c = new TestCluster([1, 2, 3, 4, 5], { preVote: false, checkQuorum: false }, 7);
    c.drop = () => random.bool(0.3);
    for (let round = 0; round < 150; round++) {
      // Several nodes campaign at once, often in the same term.
      for (const id of [1, 2, 3, 4, 5]) if (random.bool(0.3)) c.get(id).node.campaign();
      c.deliver();
      for (const [id, m] of c.members) {
        const s = m.node.status();
        if (s.role !== "leader") continue;
        const known = leaderOfTerm.get(s.term);
        expect(
          known === undefined || known === id,
          `term ${s.term}: leaders ${known} and ${id}`,
        ).toBe(true);
        leaderOfTerm.set(s.term, id);
      }
    }
    expect(leaderOfTerm.size).toBeGreaterThan(10);
  });

  it("leader append-only: a leader never overwrites or deletes its entries", () => {
    const c = new TestCluster([1, 2, 3]);
    c.elect(1);
    c.propose(1, "a");
    const term = c.get(1).node.status().term;
    const before = logTerms(c, 1);
    // A stale Append (older term) with a conflicting entry must not touch the leader's log.
    c.get(1).node.step({
      type: MessageType.Append,
      from: 2,
      to: 1,
      term: term - 1,
      logTerm: 0,
      index: 0,
      commit: 0,
      reject: false,
      rejectHint: 0,
      entries: [{ term: term - 1, index: 1, type: 0, data: new Uint8Array([9]) }],
    });
    c.deliver();
    expect(logTerms(c, 1)).toEqual(before);
    expect(c.get(1).node.status().role).toBe("leader");
    c.propose(1, "b");
    expect(logTerms(c, 1).slice(0, before.length)).toEqual(before);
  });

  it("log matching: conflicting uncommitted entries are replaced and logs end identical", () => {
    const c = new TestCluster([1, 2, 3], { preVote: false, checkQuorum: false });
    c.elect(1);
    c.propose(1, "committed");
    // Leader 1 appends entries nobody else receives.
    c.isolate(1);
    c.get(1).node.propose(new TextEncoder().encode("lost-1"));
    c.get(1).node.propose(new TextEncoder().encode("lost-2"));
    c.deliver();
    expect(c.get(1).storage.lastIndex()).toBe(c.get(2).storage.lastIndex() + 2);
    // 2 and 3 move on in a new term, overlapping indexes with different entries.
    c.elect(2);
    c.propose(2, "new-1");
    c.heal();
    c.get(2).node.tick(); // heartbeat
    c.tickAll(3);
    for (const id of [1, 3]) expect(logTerms(c, id)).toEqual(logTerms(c, 2));
    for (const id of [1, 2, 3]) expect(appliedData(c.get(id))).toEqual(["committed", "new-1"]);
  });

  it("leader completeness: a node missing committed entries cannot be elected", () => {
    const c = new TestCluster([1, 2, 3], { preVote: false, checkQuorum: false });
    c.elect(1);
    c.isolate(3);
    c.propose(1, "x");
    c.propose(1, "y");
    expect(appliedData(c.get(2))).toEqual(["x", "y"]);
    // 3 (stale) campaigns while 1 is gone: 2 refuses, so 3 cannot win.
    c.drop = (m) => m.from === 1 || m.to === 1;
    c.elect(3);
    expect(c.get(3).node.status().role).not.toBe("leader");
    c.elect(2);
    expect(c.leader()).toBe(2);
    c.propose(2, "z");
    expect(appliedData(c.get(3))).toEqual(["x", "y", "z"]);
  });

  it("leader completeness: a leader commits entries of earlier terms only through one of its own term", () => {
    const c = new TestCluster([1, 2, 3], { preVote: false, checkQuorum: false });
    c.elect(1);
    // Entry 2 (term 1) reaches node 2, but no acknowledgement comes back: uncommitted.
    c.drop = (m) => m.type === MessageType.AppendResponse || m.to === 3;
    c.get(1).node.propose(new TextEncoder().encode("old"));
    c.deliver();
    expect(c.get(2).storage.lastIndex()).toBe(2);
    c.drop = (m) => m.type === MessageType.Append || m.type === MessageType.Heartbeat;
    c.elect(2); // term 2: node 2 (holding entry 2 of term 1) wins and appends its no-op at 3
    const leader = c.get(2).node;
    const term = leader.status().term;
    expect(leader.status().role).toBe("leader");
    expect(leader.status().commit).toBe(1);
    // Node 1 acknowledges only index 2 (the term-1 entry): a majority holds it, but it is not
    // of the current term, so counting replicas must not commit it (Raft §5.4.2, Figure 8).
    leader.step({
      type: MessageType.AppendResponse,
      from: 1,
      to: 2,
      term,
      logTerm: 0,
      index: 2,
      commit: 0,
      reject: false,
      rejectHint: 0,
      entries: [],
    });
    expect(leader.status().commit).toBe(1);
    leader.step({
      type: MessageType.AppendResponse,
      from: 1,
      to: 2,
      term,
      logTerm: 0,
      index: 3,
      commit: 0,
      reject: false,
      rejectHint: 0,
      entries: [],
    });
    expect(leader.status().commit).toBe(3);
  });

  it("state machine safety: every replica applies the same entry at each index under loss and partitions", () => {
    const random = new SeededRandom(11);
    const c = new TestCluster([1, 2, 3, 4, 5], {}, 11);
    let cut = new Set<NodeId>();
    c.drop = (m) => random.bool(0.1) || cut.has(m.from) !== cut.has(m.to);
    for (let tick = 0; tick < 1000; tick++) {
      if (tick % 97 === 0) cut = new Set([1, 2, 3, 4, 5].filter(() => random.bool(0.4)));
      const leader = c.leader();
      if (leader !== undefined && random.bool(0.5)) {
        try {
          c.get(leader).node.propose(new TextEncoder().encode(`e${tick}`));
        } catch {
          /* dropped */
        }
      }
      c.tickAll(1);
    }
    cut = new Set();
    c.heal();
    c.tickAll(50);
    const applied = [...c.members.values()].map((m) =>
      m.applied.map((e) => `${e.index}/${e.term}/${new TextDecoder().decode(e.data)}`),
    );
    const longest = applied.reduce((a, b) => (a.length >= b.length ? a : b));
    expect(longest.length).toBeGreaterThan(50);
    for (const a of applied) expect(a).toEqual(longest.slice(0, a.length));
  });
});
