// Lazy commit in the core: a leader sends a new commit index only with messages it sends anyway
// (Appends with entries, heartbeats), never in an empty Append of its own; what commits and in
// which order is unchanged, only when followers learn it.
import { describe, expect, it } from "vitest";
import { appliedData, TestCluster } from "./testing/test-cluster.js";
import { MessageType, type Message } from "./types.js";

const CONFIG = { heartbeatTick: 1, idleHeartbeatTick: 3, electionTick: 10 };

/** Appends node 1 sent after `from` (an index into its sent list), split by whether they carry entries. */
function appendsSince(c: TestCluster, from: number): { empty: Message[]; withEntries: Message[] } {
  const appends = c
    .get(1)
    .sent.slice(from)
    .filter((m) => m.type === MessageType.Append);
  return {
    empty: appends.filter((m) => m.entries.length === 0),
    withEntries: appends.filter((m) => m.entries.length > 0),
  };
}

function electedCluster(lazyCommit: boolean): TestCluster {
  const c = new TestCluster([1, 2, 3], { ...CONFIG, lazyCommit });
  c.elect(1);
  c.propose(1, "a");
  c.tickAll(5); // everyone learns everything so far
  return c;
}

describe("lazyCommit", () => {
  it("etcd's way: a write costs an Append with the entry and an empty one with the commit, per follower", () => {
    const c = electedCluster(false);
    const from = c.get(1).sent.length;
    c.propose(1, "b");
    const { empty, withEntries } = appendsSince(c, from);
    expect(withEntries).toHaveLength(2);
    expect(empty).toHaveLength(2);
    // The followers applied at once.
    for (const id of [2, 3]) expect(appliedData(c.get(id))).toEqual(["a", "b"]);
  });

  it("lazy: no empty Append; the leader applies at once, followers with the next write", () => {
    const c = electedCluster(true);
    const from = c.get(1).sent.length;
    c.propose(1, "b");
    const { empty, withEntries } = appendsSince(c, from);
    expect(withEntries).toHaveLength(2);
    expect(empty).toHaveLength(0);
    expect(appliedData(c.get(1))).toEqual(["a", "b"]);
    for (const id of [2, 3]) expect(appliedData(c.get(id))).toEqual(["a"]);
    // The next write's Appends carry b's commit.
    c.propose(1, "c");
    for (const id of [2, 3]) expect(appliedData(c.get(id))).toEqual(["a", "b"]);
    expect(appliedData(c.get(1))).toEqual(["a", "b", "c"]);
  });

  it("lazy: an idle group's followers learn the last commit from a heartbeat within the idle interval", () => {
    const c = electedCluster(true);
    c.propose(1, "b");
    for (const id of [2, 3]) expect(appliedData(c.get(id))).toEqual(["a"]);
    c.tickAll(CONFIG.idleHeartbeatTick);
    for (const id of [1, 2, 3]) expect(appliedData(c.get(id))).toEqual(["a", "b"]);
  });

  it("lazy: a follower that becomes leader commits and applies everything the old leader committed", () => {
    const c = electedCluster(true);
    c.propose(1, "b");
    expect(appliedData(c.get(2))).toEqual(["a"]);
    c.isolate(1);
    for (let i = 0; i < 100 && c.leader() !== 2 && c.leader() !== 3; i++) c.tickAll();
    const lead = c.leader()!;
    expect(lead === 2 || lead === 3).toBe(true);
    // The new leader applied b once its own term's first entry committed; the other follower
    // learns that commit within the idle heartbeat interval.
    expect(appliedData(c.get(lead))).toEqual(["a", "b"]);
    c.tickAll(CONFIG.idleHeartbeatTick);
    for (const id of [2, 3]) expect(appliedData(c.get(id))).toEqual(["a", "b"]);
  });
});
