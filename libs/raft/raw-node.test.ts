import { describe, expect, it } from "vitest";
import { SeededRandom } from "../common/prng.js";
import { MemoryStorage } from "./memory-storage.js";
import { RawNode } from "./raw-node.js";
import { TEST_CONFIG, TestCluster, appliedData } from "./testing/test-cluster.js";
import { MessageType, type Message } from "./types.js";

describe("RawNode basics", () => {
  it("elects a leader and replicates", () => {
    const c = new TestCluster([1, 2, 3]);
    c.elect(1);
    expect(c.leader()).toBe(1);
    c.propose(1, "a");
    c.propose(1, "b");
    for (const id of [1, 2, 3]) expect(appliedData(c.get(id))).toEqual(["a", "b"]);
  });

  it("elects by ticking", () => {
    const c = new TestCluster([1, 2, 3]);
    c.tickAll(40);
    expect(c.leader()).toBeDefined();
  });
});

describe("async storage writes (advanceAsync / persisted)", () => {
  it("a single voter commits only what persisted() reported durable", () => {
    const storage = new MemoryStorage({ voters: [1] });
    const node = new RawNode({ ...TEST_CONFIG, id: 1 }, storage, new SeededRandom(1));
    node.campaign();
    let rd = node.ready();
    storage.setHardState(rd.hardState!);
    storage.append(rd.entries);
    node.advance(); // the no-op is durable
    node.propose(new Uint8Array([7]));
    rd = node.ready();
    const last = rd.entries.at(-1)!;
    expect(rd.committedEntries.map((e) => e.index)).toEqual([last.index - 1]); // the no-op only
    storage.append(rd.entries);
    node.advanceAsync(); // in storage, not yet durable
    node.propose(new Uint8Array([8])); // the next Ready may come while the write is in flight
    rd = node.ready();
    expect(rd.entries.map((e) => e.index)).toEqual([last.index + 1]);
    expect(rd.committedEntries).toEqual([]); // the first proposal is not durable yet
    storage.append(rd.entries);
    node.advanceAsync();
    expect(node.basicStatus().commit).toBe(last.index - 1);
    node.persisted(last.index, last.term);
    expect(node.basicStatus().commit).toBe(last.index);
    node.persisted(last.index + 1, last.term);
    expect(node.basicStatus().commit).toBe(last.index + 1);
  });

  it("a leader does not count its own undurable copy: one follower's ack is not a quorum of 3", () => {
    const c = new TestCluster([1, 2, 3]);
    c.elect(1);
    const leader = c.get(1).node;
    const commitBefore = leader.basicStatus().commit;
    const index = leader.propose(new TextEncoder().encode("x"));
    const rd = leader.ready();
    c.get(1).storage.append(rd.entries);
    leader.advanceAsync();
    const append = rd.messages.find((m) => m.type === MessageType.Append && m.to === 2)!;
    expect(append.entries.map((e) => e.index)).toEqual([index]);
    // Follower 2 persists and acknowledges; the leader's own write has not landed.
    const ack: Message = {
      ...append,
      type: MessageType.AppendResponse,
      from: 2,
      to: 1,
      index,
      entries: [],
      reject: false,
      rejectHint: 0,
    };
    leader.step(ack);
    expect(leader.basicStatus().commit).toBe(commitBefore);
    leader.persisted(index, rd.entries.at(-1)!.term);
    expect(leader.basicStatus().commit).toBe(index);
  });

  it("a truncated durable record does not count: persisted() for a replaced entry is ignored", () => {
    const storage = new MemoryStorage({ voters: [1] });
    const node = new RawNode({ ...TEST_CONFIG, id: 1 }, storage, new SeededRandom(1));
    node.campaign();
    const rd = node.ready();
    storage.setHardState(rd.hardState!);
    storage.append(rd.entries);
    node.advanceAsync();
    const noop = rd.entries.at(-1)!;
    node.persisted(noop.index, noop.term + 5); // a different term at that index: not our log
    expect(node.basicStatus().commit).toBe(0);
    node.persisted(noop.index, noop.term);
    expect(node.basicStatus().commit).toBe(noop.index);
  });
});
