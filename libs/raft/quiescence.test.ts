// Quiescence in the core: an idle group stops its clock (no heartbeats, no elections) until a
// message, a proposal or reportNodeDown wakes it; elections still happen when a leader dies.
import { describe, expect, it } from "vitest";
import { appliedData, TestCluster } from "./testing/test-cluster.js";
import { decodeMessage, encodeMessage } from "./codec.js";
import { MessageType } from "./types.js";

const CONFIG = { heartbeatTick: 1, idleHeartbeatTick: 3, electionTick: 10, quiesce: true };

/** Elects node 1 and ticks everyone until the group is quiesced (bounded). */
function quiescedCluster(): TestCluster {
  const c = new TestCluster([1, 2, 3], CONFIG);
  c.elect(1);
  c.propose(1, "a");
  for (let i = 0; i < 20 && ![1, 2, 3].every((id) => c.get(id).node.isQuiesced()); i++) c.tickAll();
  expect([1, 2, 3].map((id) => c.get(id).node.isQuiesced())).toEqual([true, true, true]);
  return c;
}

describe("quiescence", () => {
  it("an idle group quiesces: no messages at all for many election timeouts, leader unchanged", () => {
    const c = quiescedCluster();
    const sent = (): number => [1, 2, 3].reduce((s, id) => s + c.get(id).sent.length, 0);
    const before = sent();
    c.tickAll(100); // ten election timeouts
    expect(sent()).toBe(before);
    expect(c.leader()).toBe(1);
    expect(c.get(2).node.status().term).toBe(c.get(1).node.status().term);
  });

  it("without quiesce the same group keeps heartbeating (the test can tell the difference)", () => {
    const c = new TestCluster([1, 2, 3], { ...CONFIG, quiesce: false });
    c.elect(1);
    c.propose(1, "a");
    c.tickAll(10);
    const before = c.get(1).sent.length;
    c.tickAll(30);
    expect(c.get(1).sent.length - before).toBeGreaterThanOrEqual(18); // every 3 ticks, 2 followers
    expect(c.get(1).node.isQuiesced()).toBe(false);
  });

  it("a proposal wakes the quiesced leader and commits everywhere at once", () => {
    const c = quiescedCluster();
    c.propose(1, "b");
    for (const id of [1, 2, 3]) expect(appliedData(c.get(id))).toEqual(["a", "b"]);
    // Once idle again it quiesces again.
    for (let i = 0; i < 20 && !c.get(2).node.isQuiesced(); i++) c.tickAll();
    expect([1, 2, 3].every((id) => c.get(id).node.isQuiesced())).toBe(true);
  });

  it("a quiesced follower does not campaign; reportNodeDown(leader) makes it campaign within an election timeout", () => {
    const c = quiescedCluster();
    const oldTerm = c.get(1).node.status().term;
    c.isolate(1); // the leader's node died
    c.tickAll(50);
    expect(c.get(2).node.status().role).toBe("follower"); // clocks stopped: nobody noticed
    // The hosts' node liveness reports node 1 silent.
    c.get(2).node.reportNodeDown(1);
    c.get(3).node.reportNodeDown(1);
    // Lease already expired on wake: the first campaign within one election timeout, and a
    // new leader within a few (a split vote costs another randomized timeout).
    let firstCampaign = -1;
    let ticks = 0;
    const newLeader = (): boolean => [2, 3].some((id) => c.get(id).node.status().role === "leader");
    for (; ticks < 60 && !newLeader(); ticks++) {
      c.tick(2);
      c.tick(3);
      c.deliver();
      if (firstCampaign < 0 && [2, 3].some((id) => c.get(id).node.status().role !== "follower"))
        firstCampaign = ticks + 1;
    }
    expect(firstCampaign).toBeGreaterThan(0);
    expect(firstCampaign).toBeLessThanOrEqual(10);
    expect(newLeader()).toBe(true);
    expect(ticks).toBeLessThanOrEqual(40);
    const lead = c.get(2).node.status().leader;
    expect(c.get(lead).node.status().term).toBeGreaterThan(oldTerm);
  });

  it("a proposal misdirected to a quiesced follower is refused and leaves it quiesced", () => {
    const c = quiescedCluster();
    expect(() => c.get(2).node.propose(new TextEncoder().encode("x"))).toThrow(/not-leader/);
    expect(c.get(2).node.isQuiesced()).toBe(true);
  });

  it("reportNodeDown of a node that is not the leader leaves a quiesced follower quiesced", () => {
    const c = quiescedCluster();
    c.get(2).node.reportNodeDown(3);
    expect(c.get(2).node.isQuiesced()).toBe(true);
  });

  it("a quiesced leader woken by reportNodeDown heartbeats and does not re-quiesce while a voter is silent", () => {
    const c = quiescedCluster();
    c.drop = (m) => m.to === 3 || m.from === 3;
    c.get(1).node.reportNodeDown(3);
    expect(c.get(1).node.isQuiesced()).toBe(false);
    const before = c.get(1).sent.length;
    c.tickAll(9);
    expect(c.get(1).node.isQuiesced()).toBe(false);
    expect(
      c
        .get(1)
        .sent.slice(before)
        .filter((m) => m.type === MessageType.Heartbeat && !m.quiesce).length,
    ).toBeGreaterThan(0);
    expect(c.leader()).toBe(1); // check-quorum still holds with node 2
  });

  it("the quiesce flag survives the wire codec", () => {
    const m = {
      type: MessageType.Heartbeat,
      from: 1,
      to: 2,
      term: 3,
      logTerm: 0,
      index: 0,
      entries: [],
      commit: 7,
      reject: false,
      rejectHint: 0,
      quiesce: true,
    };
    expect(decodeMessage(encodeMessage(m)).quiesce).toBe(true);
    expect(decodeMessage(encodeMessage({ ...m, quiesce: undefined })).quiesce).toBeUndefined();
  });
});
