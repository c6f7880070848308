// Behaviour beyond the paper's core: pre-vote, check-quorum, leadership transfer, snapshots,
// membership changes, read-index, flow-control limits, Ready semantics and config validation.
import { describe, expect, it } from "vitest";
import { SeededRandom } from "../common/prng.js";
import { encodeConfChange } from "./codec.js";
import { validateConfig } from "./config-validate.js";
import { MemoryStorage } from "./memory-storage.js";
import { RawNode } from "./raw-node.js";
import { TEST_CONFIG, TestCluster, appliedData } from "./testing/test-cluster.js";
import {
  ConfChangeType,
  EntryType,
  MessageType,
  ProposalDroppedError,
  type RaftConfig,
} from "./types.js";

const text = (s: string): Uint8Array => new TextEncoder().encode(s);

function dropReason(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    if (e instanceof ProposalDroppedError) return e.reason;
    throw e;
  }
  return undefined;
}

describe("pre-vote and check-quorum", () => {
  it("pre-vote: a partitioned node rejoining does not disrupt the leader", () => {
    const c = new TestCluster([1, 2, 3]);
    c.elect(1);
    const term = c.get(1).node.status().term;
    c.isolate(3);
    c.tick(3, 200); // many election timeouts alone
    c.deliver();
    expect(c.get(3).node.status().term).toBe(term); // pre-votes failed; term not inflated
    c.heal();
    c.tickAll(5);
    expect(c.leader()).toBe(1);
    expect(c.get(1).node.status().term).toBe(term);
  });

  it("without pre-vote the same rejoin does disrupt (the test can tell the difference)", () => {
    const c = new TestCluster([1, 2, 3], { preVote: false, checkQuorum: false });
    c.elect(1);
    const term = c.get(1).node.status().term;
    c.isolate(3);
    c.tick(3, 200);
    c.deliver();
    expect(c.get(3).node.status().term).toBeGreaterThan(term);
    c.heal();
    c.tickAll(30);
    expect(c.get(1).node.status().term).toBeGreaterThan(term);
  });

  it("check-quorum: an isolated leader steps down within two election timeouts", () => {
    const c = new TestCluster([1, 2, 3]);
    c.elect(1);
    c.isolate(1);
    c.tick(1, TEST_CONFIG.electionTick);
    c.deliver();
    c.tick(1, TEST_CONFIG.electionTick);
    c.deliver();
    expect(c.get(1).node.status().role).toBe("follower");
  });

  it("leader lease: followers hearing from a live leader ignore a disruptive Vote", () => {
    const c = new TestCluster([1, 2, 3], { preVote: false, checkQuorum: true });
    c.elect(1);
    const term = c.get(1).node.status().term;
    c.get(3).node.campaign(); // not a transfer: no lease override
    c.deliver();
    expect(c.get(2).node.status().term).toBe(term);
    expect(c.get(1).node.status().role).toBe("leader");
  });
});

describe("leadership transfer", () => {
  it("transfers to an up-to-date follower and drops proposals meanwhile", () => {
    const c = new TestCluster([1, 2, 3]);
    c.elect(1);
    c.propose(1, "a");
    c.drop = (m) => m.type === MessageType.TimeoutNow;
    c.get(1).node.transferLeadership(2);
    c.deliver();
    expect(c.get(1).node.status().leadTransferee).toBe(2);
    expect(dropReason(() => c.get(1).node.propose(text("x")))).toBe("transferring");
    c.heal();
    c.get(1).node.transferLeadership(2); // same transferee: TimeoutNow is resent on the next heartbeat response
    c.tickAll(2);
    expect(c.leader()).toBe(2);
  });

  it("catches a lagging transferee up first, and a follower can forward the request", () => {
    const c = new TestCluster([1, 2, 3]);
    c.elect(1);
    c.isolate(3);
    c.propose(1, "a");
    c.propose(1, "b");
    c.heal();
    c.get(2).node.transferLeadership(3); // forwarded to leader 1
    c.deliver();
    c.tickAll(3);
    expect(c.leader()).toBe(3);
    expect(appliedData(c.get(3))).toEqual(["a", "b"]);
  });

  it("aborts after an election timeout when the transferee is unreachable", () => {
    const c = new TestCluster([1, 2, 3]);
    c.elect(1);
    c.isolate(3);
    c.get(1).node.transferLeadership(3);
    c.deliver();
    expect(c.get(1).node.status().leadTransferee).toBe(3);
    c.tickAll(TEST_CONFIG.electionTick + 1);
    expect(c.get(1).node.status().leadTransferee).toBe(-1);
    expect(c.leader()).toBe(1);
    expect(dropReason(() => c.get(1).node.propose(text("ok")))).toBeUndefined();
  });
});

describe("snapshots", () => {
  it("a follower behind the leader's compacted log is restored by InstallSnapshot", () => {
    const c = new TestCluster([1, 2, 3]);
    c.elect(1);
    c.isolate(3);
    for (let i = 0; i < 20; i++) c.propose(1, `e${i}`);
    const leader = c.get(1);
    const applied = leader.node.status().applied;
    leader.storage.createSnapshot(applied, leader.node.confState(), text(`state@${applied}`));
    leader.storage.compact(applied);
    expect(leader.storage.firstIndex()).toBe(applied + 1);
    c.heal();
    c.tickAll(3);
    const follower = c.get(3);
    expect(follower.storage.snapshot().metadata.index).toBe(applied);
    expect(new TextDecoder().decode(follower.storage.snapshot().data)).toBe(`state@${applied}`);
    expect(
      follower.sent.some((m) => m.type === MessageType.AppendResponse && m.index === applied),
    ).toBe(true);
    c.propose(1, "after");
    expect(appliedData(follower)).toEqual(["after"]); // entries after the snapshot applied normally
    expect(follower.node.status().applied).toBe(leader.node.status().applied);
    expect(c.get(1).node.status().progress.get(3)?.state).toBe("replicate");
  });

  it("a failed snapshot transfer is retried after reportSnapshot(false)", () => {
    const c = new TestCluster([1, 2, 3]);
    c.elect(1);
    c.isolate(3);
    for (let i = 0; i < 5; i++) c.propose(1, `e${i}`);
    const leader = c.get(1);
    const applied = leader.node.status().applied;
    leader.storage.createSnapshot(applied, leader.node.confState(), text("s"));
    leader.storage.compact(applied);
    c.drop = (m) => m.type === MessageType.Snapshot;
    c.tickAll(2);
    expect(leader.node.status().progress.get(3)?.state).toBe("snapshot");
    c.heal();
    leader.node.reportSnapshot(3, false);
    c.tickAll(3);
    expect(c.get(3).storage.snapshot().metadata.index).toBe(applied);
  });
});

describe("membership", () => {
  it("adds a learner, promotes it once caught up, then removes the old leader", () => {
    const c = new TestCluster([1, 2, 3]);
    c.elect(1);
    c.propose(1, "a");
    c.add(4, { voters: [] }); // a brand-new, empty replica
    c.get(1).node.proposeConfChange({ type: ConfChangeType.AddLearner, nodeId: 4 });
    expect(
      dropReason(() =>
        c.get(1).node.proposeConfChange({ type: ConfChangeType.AddVoter, nodeId: 4 }),
      ),
    ).toBe("conf-change-pending");
    c.deliver();
    c.tickAll(3);
    expect(c.get(1).node.status().confState.learners).toEqual([4]);
    expect(appliedData(c.get(4))).toEqual(["a"]);
    expect(c.get(4).node.status().confState.learners).toEqual([4]); // learned from the log
    c.get(1).node.proposeConfChange({ type: ConfChangeType.AddVoter, nodeId: 4 });
    c.deliver();
    expect(c.get(1).node.status().confState.voters).toEqual([1, 2, 3, 4]);
    c.get(1).node.proposeConfChange({ type: ConfChangeType.RemoveNode, nodeId: 1 });
    c.deliver();
    c.tickAll(2);
    expect(c.get(1).node.status().role).toBe("follower"); // the removed leader stepped down
    c.tickAll(4 * TEST_CONFIG.electionTick);
    const leader = c.leader();
    expect([2, 3, 4]).toContain(leader);
    expect(c.get(leader!).node.status().confState.voters).toEqual([2, 3, 4]);
    c.propose(leader!, "b");
    expect(appliedData(c.get(4))).toEqual(["a", "b"]);
    expect(c.get(2).storage.initialState().confState.voters).toEqual([2, 3, 4]); // persisted via Ready.confState
  });

  it("a leader of a 3-node group still commits with one node removed and one down", () => {
    const c = new TestCluster([1, 2, 3]);
    c.elect(1);
    c.get(1).node.proposeConfChange({ type: ConfChangeType.RemoveNode, nodeId: 3 });
    c.deliver();
    c.tickAll(1);
    c.isolate(3);
    c.propose(1, "x");
    expect(appliedData(c.get(2))).toEqual(["x"]);
  });
});

describe("read-index", () => {
  it("leader answers after a heartbeat round; a follower's request is forwarded", () => {
    const c = new TestCluster([1, 2, 3]);
    c.elect(1);
    c.propose(1, "a");
    const commit = c.get(1).node.status().commit;
    c.get(1).node.readIndex(text("r1"));
    c.deliver();
    expect(c.get(1).readStates.map((r) => [r.index, new TextDecoder().decode(r.context)])).toEqual([
      [commit, "r1"],
    ]);
    c.get(2).node.readIndex(text("r2"));
    c.deliver();
    expect(c.get(2).readStates.map((r) => [r.index, new TextDecoder().decode(r.context)])).toEqual([
      [commit, "r2"],
    ]);
  });

  it("an isolated leader never confirms a read", () => {
    const c = new TestCluster([1, 2, 3]);
    c.elect(1);
    c.isolate(1);
    c.get(1).node.readIndex(text("r"));
    c.tickAll(3);
    expect(c.get(1).readStates).toEqual([]);
  });

  it("a deposed leader cut off from the majority cannot complete a read index", () => {
    const c = new TestCluster([1, 2, 3, 4, 5]);
    c.elect(1);
    c.propose(1, "before");
    const oldTerm = c.get(1).node.status().term;
    // {1, 2} | {3, 4, 5}: the majority elects 3 and commits past what 1 knows.
    const minority = new Set([1, 2]);
    c.drop = (m) => minority.has(m.from) !== minority.has(m.to);
    expect(c.ticksUntilLeader([3, 4, 5], 10 * TEST_CONFIG.electionTick)).toBeLessThan(Infinity);
    const newLeader = c.leader()!;
    c.propose(newLeader, "after");
    expect(appliedData(c.get(newLeader))).toEqual(["before", "after"]);
    // 1 has not ticked since: it still leads its old term, and 2 still follows it.
    expect(c.get(1).node.status()).toMatchObject({ role: "leader", term: oldTerm });
    c.get(1).node.readIndex(text("stale-local"));
    c.get(2).node.readIndex(text("stale-forwarded"));
    c.deliver();
    c.tick(1, TEST_CONFIG.electionTick - 1);
    c.tick(2, TEST_CONFIG.electionTick - 1);
    c.deliver();
    expect(c.get(1).node.status().role).toBe("leader"); // deposed, and does not know it yet
    expect(c.get(1).readStates).toEqual([]);
    expect(c.get(2).readStates).toEqual([]);
    // A bridge: the deposed leader's heartbeat reaches a node of the new term, which never
    // acknowledges it; the deposed leader learns the term and steps down, still with no answer.
    c.drop = (m) => minority.has(m.from) !== minority.has(m.to) && !(m.from === 1 && m.to === 3);
    c.get(1).node.readIndex(text("stale-bridged"));
    c.deliver();
    c.tick(1, 2);
    c.deliver();
    expect(c.get(1).readStates).toEqual([]);
  });

  it("a deposed leader steps down and answers no read even when a node of the new term hears it", () => {
    const c = new TestCluster([1, 2, 3]);
    c.elect(1);
    c.propose(1, "before");
    c.isolate(1);
    expect(c.ticksUntilLeader([2, 3], 10 * TEST_CONFIG.electionTick)).toBeLessThan(Infinity);
    c.propose(c.leader()!, "after");
    // Only 1 -> 3 and back get through: 3 is in the new term and never acknowledges term-1 heartbeats.
    c.drop = (m) => !((m.from === 1 && m.to === 3) || (m.from === 3 && m.to === 1));
    c.get(1).node.readIndex(text("stale"));
    c.deliver();
    expect(c.get(1).readStates).toEqual([]);
    expect(c.get(1).node.status().role).toBe("follower");
  });

  it("read indexes asked together are confirmed by the heartbeat round of the latest", () => {
    const c = new TestCluster([1, 2, 3]);
    c.elect(1);
    c.propose(1, "a");
    const commit = c.get(1).node.status().commit;
    // The first two rounds are lost: the third round's acknowledgements confirm all three.
    let heartbeats = 0;
    c.drop = (m) =>
      m.type === MessageType.Heartbeat && m.context !== undefined && ++heartbeats <= 4;
    for (const r of ["r1", "r2", "r3"]) c.get(1).node.readIndex(text(r));
    c.deliver();
    expect(c.get(1).readStates.map((r) => [r.index, new TextDecoder().decode(r.context)])).toEqual([
      [commit, "r1"],
      [commit, "r2"],
      [commit, "r3"],
    ]);
  });

  it("a new leader answers only after committing an entry of its term", () => {
    const c = new TestCluster([1, 2, 3]);
    c.drop = (m) => m.type === MessageType.AppendResponse;
    c.elect(1);
    expect(c.get(1).node.status().role).toBe("leader");
    c.get(1).node.readIndex(text("r"));
    c.tickAll(2);
    expect(c.get(1).readStates).toEqual([]); // no-op not committed yet
    c.heal();
    c.tickAll(2);
    expect(c.get(1).readStates.length).toBe(1);
    expect(c.get(1).readStates[0]!.index).toBe(c.get(1).node.status().commit);
  });
});

describe("flow control and Ready", () => {
  it("an idle leader heartbeats at idleHeartbeatTick, a busy one at heartbeatTick", () => {
    const c = new TestCluster([1, 2, 3], {
      heartbeatTick: 1,
      idleHeartbeatTick: 4,
      electionTick: 10,
    });
    c.elect(1);
    c.deliver();
    const heartbeats = (from: number): number =>
      c
        .get(1)
        .sent.slice(from)
        .filter((m) => m.type === MessageType.Heartbeat).length;
    let before = c.get(1).sent.length;
    for (let i = 0; i < 8; i++) {
      c.tick(1);
      c.deliver();
    }
    expect(heartbeats(before)).toBe(4); // 2 rounds x 2 followers in 8 ticks
    // Followers stay put: 8 ticks < electionTick, and the idle heartbeats keep resetting them.
    expect(c.leader()).toBe(1);
    // Not idle (an entry is unacknowledged): one round per tick.
    c.drop = (m) => m.type === MessageType.AppendResponse;
    c.propose(1, "x");
    c.deliver();
    before = c.get(1).sent.length;
    for (let i = 0; i < 4; i++) {
      c.tick(1);
      c.deliver();
    }
    expect(heartbeats(before)).toBe(8);
  });

  it("rejects idleHeartbeatTick outside [heartbeatTick, electionTick)", () => {
    expect(() => new TestCluster([1], { heartbeatTick: 2, idleHeartbeatTick: 1 })).toThrow(
      /idleHeartbeatTick/,
    );
    expect(() => new TestCluster([1], { electionTick: 10, idleHeartbeatTick: 10 })).toThrow(
      /idleHeartbeatTick/,
    );
  });

  it("pipelining stops at maxInflightMsgs and entries per Append respect maxSizePerMsg", () => {
    const c = new TestCluster([1, 2], { maxInflightMsgs: 2, maxSizePerMsg: 100 });
    c.elect(1);
    c.drop = (m) =>
      m.type === MessageType.AppendResponse || m.type === MessageType.HeartbeatResponse;
    const before = c.get(1).sent.length;
    for (let i = 0; i < 10; i++) c.get(1).node.propose(new Uint8Array(40));
    c.deliver();
    const appends = c
      .get(1)
      .sent.slice(before)
      .filter((m) => m.type === MessageType.Append && m.entries.length > 0);
    expect(appends.length).toBe(2);
    for (const m of appends) expect(m.entries.length).toBeLessThanOrEqual(1); // 40+21 bytes each, 100 max
  });

  it("pipelining also stops once maxInflightBytes of entries are unacknowledged, and resumes as they are", () => {
    const c = new TestCluster([1, 2], {
      maxInflightMsgs: 256,
      maxSizePerMsg: 100,
      maxInflightBytes: 200,
    });
    c.elect(1);
    c.drop = (m) =>
      m.type === MessageType.AppendResponse || m.type === MessageType.HeartbeatResponse;
    const before = c.get(1).sent.length;
    for (let i = 0; i < 10; i++) c.get(1).node.propose(new Uint8Array(40));
    c.deliver();
    const appends = c
      .get(1)
      .sent.slice(before)
      .filter((m) => m.type === MessageType.Append && m.entries.length > 0);
    // 61 bytes per entry: the fourth Append would pass 200 bytes in flight.
    expect(appends.length).toBe(4);
    c.drop = () => false;
    for (let i = 0; i < 10 && appliedData(c.get(2)).length < 10; i++) {
      c.tickAll(2);
      c.deliver();
    }
    expect(appliedData(c.get(2)).length).toBe(10);
  });

  it("rejects a maxInflightBytes below maxSizePerMsg", () => {
    expect(() => new TestCluster([1], { maxSizePerMsg: 100, maxInflightBytes: 99 })).toThrow(
      /maxInflightBytes/,
    );
    expect(() => new TestCluster([1], { maxSizePerMsg: 100, maxInflightBytes: -1 })).toThrow(
      /maxInflightBytes/,
    );
  });

  it("maxUncommittedEntriesSize drops proposals, and too-large entries are refused", () => {
    const c = new TestCluster([1, 2, 3], { maxUncommittedEntriesSize: 1000, maxSizePerMsg: 100 });
    c.elect(1);
    c.isolate(1); // nothing commits
    const reasons = Array.from({ length: 20 }, () =>
      dropReason(() => c.get(1).node.propose(new Uint8Array(100))),
    );
    expect(reasons.filter((r) => r === undefined).length).toBe(8); // 8 * 121 <= 1000
    expect(reasons.at(-1)).toBe("uncommitted-limit");
    expect(dropReason(() => c.get(1).node.propose(new Uint8Array(2000)))).toBe("too-large");
    expect(dropReason(() => c.get(2).node.propose(new Uint8Array(1)))).toBe("not-leader");
  });

  it("committedEntries are bounded by maxCommittedSizePerReady; hardState only when changed; mustSync", () => {
    const storage = new MemoryStorage({ voters: [1] });
    const node = new RawNode(
      { ...TEST_CONFIG, id: 1, maxCommittedSizePerReady: 50 },
      storage,
      new SeededRandom(1),
    );
    node.campaign();
    let rd = node.ready();
    expect(rd.hardState?.term).toBe(1);
    expect(rd.mustSync).toBe(true);
    storage.append(rd.entries);
    storage.setHardState(rd.hardState!);
    node.advance();
    for (let i = 0; i < 5; i++) node.propose(new Uint8Array(20));
    const batches: number[] = [];
    for (let guard = 0; guard < 20 && node.hasReady(); guard++) {
      rd = node.ready();
      storage.append(rd.entries);
      if (rd.hardState) storage.setHardState(rd.hardState);
      batches.push(rd.committedEntries.length);
      node.advance();
    }
    // The no-op commits once advance() reports it durable, so it comes with the proposals' first Ready.
    expect(batches.reduce((a, b) => a + b, 0)).toBe(6);
    for (const n of batches) expect(n).toBeLessThanOrEqual(1); // 41 bytes each, 50 max per Ready
    expect(node.hasReady()).toBe(false);
    node.tick();
    expect(node.hasReady()).toBe(false); // nothing changed: no empty Ready
    expect(() => node.advance()).toThrow(/without an outstanding/);
  });

  it("conf-change entries take effect in advance(), not when committed", () => {
    const storage = new MemoryStorage({ voters: [1] });
    const node = new RawNode({ ...TEST_CONFIG, id: 1 }, storage, new SeededRandom(1));
    node.campaign();
    storage.append(node.ready().entries);
    node.advance();
    node.proposeConfChange({ type: ConfChangeType.AddLearner, nodeId: 2 });
    const appended = node.ready();
    expect(appended.committedEntries.some((e) => e.type === EntryType.ConfChange)).toBe(false); // not durable yet
    storage.append(appended.entries);
    node.advance();
    const rd = node.ready();
    expect(rd.committedEntries.some((e) => e.type === EntryType.ConfChange)).toBe(true);
    expect(node.status().confState.learners).toEqual([]);
    node.advance();
    expect(node.status().confState.learners).toEqual([2]);
    expect(node.ready().confState?.learners).toEqual([2]);
    expect(encodeConfChange({ type: ConfChangeType.AddLearner, nodeId: 2 })).toEqual(
      rd.committedEntries.at(-1)!.data,
    );
  });
});

describe("validateConfig", () => {
  const good: RaftConfig = { ...TEST_CONFIG, id: 1 };
  it("accepts a sane config", () => expect(() => validateConfig(good)).not.toThrow());
  it.each([
    [
      { electionTick: 1, heartbeatTick: 1 },
      /electionTick \(1\) must be greater than heartbeatTick/,
    ],
    [{ heartbeatTick: 0 }, /heartbeatTick must be a positive integer/],
    [{ maxInflightMsgs: 0 }, /maxInflightMsgs must be a positive integer/],
    [{ maxInflightMsgs: 1e9 }, /maxInflightMsgs must be at most/],
    [{ maxSizePerMsg: 1.5 }, /maxSizePerMsg must be a positive integer/],
    [
      { maxUncommittedEntriesSize: 10, maxSizePerMsg: 100 },
      /maxUncommittedEntriesSize \(10\) must be at least maxSizePerMsg/,
    ],
    [{ maxCommittedSizePerReady: -1 }, /maxCommittedSizePerReady/],
    [{ id: -1 }, /id must be a non-negative integer/],
    [{ applied: -3 }, /applied must be/],
  ])("rejects %o", (patch, message) => {
    expect(() => validateConfig({ ...good, ...patch } as RaftConfig)).toThrow(message);
    expect(
      () =>
        new RawNode(
          { ...good, ...patch } as RaftConfig,
          new MemoryStorage({ voters: [1] }),
          new SeededRandom(1),
        ),
    ).toThrow(message);
  });
});
