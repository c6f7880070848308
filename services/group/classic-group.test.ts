// The classic group state machine (JoinGroup/SyncGroup/Heartbeat/LeaveGroup) with an injected
// clock, its records applied to a real offsets state machine as the Raft log would: KIP-394
// member ids, the join and sync phases, generations, leaves, session expiry, the rebalance and
// sync deadlines, the initial rebalance delay, static members, protocol checks, commit fencing
// (leader-side and while applying), a failed write, and a new leader starting from the record.
import { describe, expect, it } from "vitest";
import type { ErrorName } from "../../libs/common/errors.js";
import {
  ClassicGroup,
  type ClassicGroupLimits,
  type JoinOutcome,
  type JoinRequest,
  type SyncOutcome,
} from "./classic-group.js";
import type { ClassicGroupRecord } from "./classic-groups-state.js";
import { encodeEntry, type OffsetsEntry } from "./offsets-codec.js";
import { OffsetsStateMachine, type OffsetsApplyResult } from "./offsets-state-machine.js";

const G = "g";
const LIMITS: ClassicGroupLimits = {
  sessionTimeoutMsMin: 1_000,
  sessionTimeoutMsMax: 600_000,
  rebalanceTimeoutMsMax: 600_000,
  membersMax: 10,
  initialRebalanceDelayMs: 0,
  protocolsMax: 8,
  memberBytesMax: 1024,
};

class Harness {
  now = 1_000;
  sm = new OffsetsStateMachine();
  index = 0;
  records: ClassicGroupRecord[] = [];
  failPersist: ErrorName | undefined;
  ids = 0;
  group: ClassicGroup;

  constructor(limits: Partial<ClassicGroupLimits> = {}, record?: ClassicGroupRecord) {
    this.group = new ClassicGroup(G, this.env({ ...LIMITS, ...limits }), record);
  }

  env(limits: ClassicGroupLimits): ConstructorParameters<typeof ClassicGroup>[1] {
    return {
      nowMs: () => this.now,
      newMemberId: (prefix) => `${prefix}-${++this.ids}`,
      limits,
      persist: async (record) => {
        if (this.failPersist) return { error: this.failPersist, message: "injected" };
        this.records.push(record);
        const r = this.apply({ type: "classic-group", ...record, timestampMs: this.now });
        return r.type === "group"
          ? { error: r.error, message: r.message }
          : { error: "UNKNOWN_SERVER_ERROR", message: r.type };
      },
    };
  }

  apply(entry: OffsetsEntry): OffsetsApplyResult {
    return this.sm.apply({ index: ++this.index, term: 1, data: encodeEntry(entry) });
  }

  req(memberId: string, extra: Partial<JoinRequest> = {}): JoinRequest {
    return {
      memberId,
      instanceId: "",
      clientId: "c",
      clientHost: "/127.0.0.1",
      sessionTimeoutMs: 10_000,
      rebalanceTimeoutMs: 30_000,
      protocolType: "consumer",
      protocols: [{ name: "range", metadata: Buffer.from("sub") }],
      requireKnownMemberId: true,
      ...extra,
    };
  }

  /** KIP-394: the first JoinGroup answers MEMBER_ID_REQUIRED with the id to rejoin with. */
  async newMember(extra: Partial<JoinRequest> = {}): Promise<string> {
    const first = await this.group.join(this.req("", extra));
    expect(first.error).toBe("MEMBER_ID_REQUIRED");
    expect(first.memberId).not.toBe("");
    return first.memberId;
  }

  sync(
    memberId: string,
    generationId: number,
    assignments: Array<[string, string]> = [],
  ): Promise<SyncOutcome> {
    return this.group.sync({
      memberId,
      instanceId: "",
      generationId,
      protocolType: null,
      protocolName: null,
      assignments: assignments.map(([m, a]) => ({ memberId: m, assignment: Buffer.from(a) })),
    });
  }

  commit(memberId: string, generationId: number, groupInstanceId = ""): OffsetsApplyResult {
    return this.apply({
      type: "commit",
      groupId: G,
      generationId,
      memberId,
      groupInstanceId,
      timestampMs: this.now,
      offsets: [{ topic: "t", partition: 0, offset: 5n, leaderEpoch: -1, metadata: "" }],
    });
  }

  advance(ms: number): void {
    this.now += ms;
    this.group.tick();
  }
}

/** Whether a promise has settled (after the microtasks queued so far ran). */
async function settled<T>(p: Promise<T>): Promise<boolean> {
  let done = false;
  void p.then(
    () => (done = true),
    () => (done = true),
  );
  for (let i = 0; i < 20; i++) await Promise.resolve();
  return done;
}

/** One member: joined, synced with its own assignment; returns its member id. */
async function stableOne(h: Harness, assignment = "a1"): Promise<string> {
  const a = await h.newMember();
  const joined = await h.group.join(h.req(a));
  expect(joined).toMatchObject({
    error: "NONE",
    generationId: 1,
    leader: a,
    memberId: a,
    protocolName: "range",
  });
  expect(joined.members.map((m) => m.memberId)).toEqual([a]);
  expect(h.group.state).toBe("CompletingRebalance");
  expect((await h.sync(a, 1, [[a, assignment]])).assignment.toString()).toBe(assignment);
  expect(h.group.state).toBe("Stable");
  return a;
}

describe("classic group: join and sync", () => {
  it("hands out a member id first (KIP-394), then runs a generation through the leader's SyncGroup into the log", async () => {
    const h = new Harness();
    const a = await stableOne(h);
    expect(h.records).toHaveLength(1);
    expect(h.records[0]).toMatchObject({
      generationId: 1,
      protocolType: "consumer",
      protocolName: "range",
      leader: a,
    });
    expect(Buffer.from(h.records[0]!.members[0]!.assignment, "base64").toString()).toBe("a1");
    expect(h.group.heartbeat(a, "", 1).error).toBe("NONE");
    expect(h.group.heartbeat(a, "", 0).error).toBe("ILLEGAL_GENERATION");
    expect(h.group.heartbeat("nobody", "", 1).error).toBe("UNKNOWN_MEMBER_ID");
  });

  it("a v0-v3 join (no KIP-394) gets its member id in the join answer", async () => {
    const h = new Harness();
    const joined = await h.group.join(h.req("", { requireKnownMemberId: false }));
    expect(joined.error).toBe("NONE");
    expect(joined.generationId).toBe(1);
    expect(joined.leader).toBe(joined.memberId);
  });

  it("a second member rebalances the group: the first learns by heartbeat, both get the next generation, the follower waits for the leader's assignment", async () => {
    const h = new Harness();
    const a = await stableOne(h);
    const b = await h.newMember();
    const bJoin = h.group.join(h.req(b));
    expect(h.group.state).toBe("PreparingRebalance");
    expect(await settled(bJoin)).toBe(false);
    expect(h.group.heartbeat(a, "", 1).error).toBe("REBALANCE_IN_PROGRESS");
    // Commits of the current generation still pass while preparing (Kafka allows them).
    expect(
      h.group.checkCommit({ generationId: 1, memberId: a, groupInstanceId: "" }, false),
    ).toBeUndefined();
    const aJoin = await h.group.join(h.req(a));
    const bJoined = await bJoin;
    expect(aJoin).toMatchObject({ error: "NONE", generationId: 2, leader: a });
    expect(aJoin.members.map((m) => m.memberId).sort()).toEqual([a, b].sort());
    expect(bJoined).toMatchObject({ error: "NONE", generationId: 2, leader: a, members: [] });
    // CompletingRebalance: commits wait for the assignment; the follower's sync waits for the leader's.
    expect(
      h.group.checkCommit({ generationId: 2, memberId: b, groupInstanceId: "" }, false)?.error,
    ).toBe("REBALANCE_IN_PROGRESS");
    const bSync = h.sync(b, 2);
    expect(await settled(bSync)).toBe(false);
    const aSync = await h.sync(a, 2, [
      [a, "A"],
      [b, "B"],
    ]);
    expect(aSync.assignment.toString()).toBe("A");
    expect((await bSync).assignment.toString()).toBe("B");
    expect(h.group.state).toBe("Stable");
    expect(h.records.map((r) => r.generationId)).toEqual([1, 2]);
    // Commit fencing while applying: the record of generation 2 is what counts now.
    expect(h.commit(b, 2)).toMatchObject({ type: "commit", error: "NONE" });
    expect(h.commit(a, 1)).toMatchObject({ type: "commit", error: "ILLEGAL_GENERATION" });
    expect(h.commit("stranger", 2)).toMatchObject({ type: "commit", error: "UNKNOWN_MEMBER_ID" });
    expect(h.commit("", -1)).toMatchObject({ type: "commit", error: "UNKNOWN_MEMBER_ID" });
  });

  it("a lost JoinGroup answer gets the same generation again; a stale SyncGroup generation is ILLEGAL_GENERATION", async () => {
    const h = new Harness();
    const a = await h.newMember();
    const first = await h.group.join(h.req(a));
    const again = await h.group.join(h.req(a));
    expect(again.generationId).toBe(first.generationId);
    expect(h.group.state).toBe("CompletingRebalance");
    expect((await h.sync(a, first.generationId - 1)).error).toBe("ILLEGAL_GENERATION");
  });

  it("refuses another protocol type, no common protocol, and a session timeout out of bounds", async () => {
    const h = new Harness();
    await stableOne(h);
    const b = await h.newMember();
    expect((await h.group.join(h.req(b, { protocolType: "connect" }))).error).toBe(
      "INCONSISTENT_GROUP_PROTOCOL",
    );
    expect(
      (await h.group.join(h.req(b, { protocols: [{ name: "sticky", metadata: Buffer.alloc(0) }] })))
        .error,
    ).toBe("INCONSISTENT_GROUP_PROTOCOL");
    expect((await h.group.join(h.req(b, { sessionTimeoutMs: 10 }))).error).toBe(
      "INVALID_SESSION_TIMEOUT",
    );
    expect(h.group.state).toBe("Stable");
  });

  it("selects the protocol every member supports that most prefer", async () => {
    const h = new Harness({ initialRebalanceDelayMs: 1_000 });
    const p = (...names: string[]) => names.map((name) => ({ name, metadata: Buffer.from(name) }));
    const a = await h.newMember();
    const b = await h.newMember();
    const c = await h.newMember();
    const joins = [
      h.group.join(h.req(a, { protocols: p("roundrobin", "range") })),
      h.group.join(h.req(b, { protocols: p("range", "roundrobin") })),
      h.group.join(h.req(c, { protocols: p("range", "roundrobin", "sticky") })),
    ];
    h.advance(1_000); // members joined during the delay: one more
    h.advance(1_000);
    const answers = await Promise.all(joins);
    expect(answers.every((x) => x.protocolName === "range")).toBe(true);
    const leader = answers.find((x) => x.members.length > 0)!;
    expect(leader.members.find((m) => m.memberId === a)!.metadata.toString()).toBe("range");
  });
});

describe("classic group: leaving and timeouts", () => {
  it("LeaveGroup rebalances at once; the last member leaving empties the group and records it", async () => {
    const h = new Harness();
    const a = await stableOne(h);
    const b = await h.newMember();
    const bJoin = h.group.join(h.req(b));
    await h.group.join(h.req(a));
    await bJoin;
    await Promise.all([
      h.sync(a, 2, [
        [a, "A"],
        [b, "B"],
      ]),
      h.sync(b, 2),
    ]);
    expect(h.group.leave([{ memberId: b, instanceId: "" }])).toEqual([
      { memberId: b, instanceId: "", error: "NONE" },
    ]);
    expect(h.group.state).toBe("PreparingRebalance");
    expect(h.group.heartbeat(a, "", 2).error).toBe("REBALANCE_IN_PROGRESS");
    expect((await h.group.join(h.req(a))).generationId).toBe(3);
    expect(h.group.leave([{ memberId: "gone", instanceId: "" }])[0]!.error).toBe(
      "UNKNOWN_MEMBER_ID",
    );
    expect(h.group.leave([{ memberId: a, instanceId: "" }])[0]!.error).toBe("NONE");
    expect(h.group.state).toBe("Empty");
    expect(h.group.generationId).toBe(4);
    await Promise.resolve();
    expect(h.records.at(-1)).toMatchObject({ generationId: 4, members: [] });
    // An empty group takes simple commits again (generation -1), as Kafka does.
    expect(h.commit("", -1)).toMatchObject({ type: "commit", error: "NONE" });
    expect(h.commit(a, 3)).toMatchObject({ type: "commit", error: "UNKNOWN_MEMBER_ID" });
  });

  it("a member silent past its session timeout is removed (injected clock)", async () => {
    const h = new Harness();
    const a = await stableOne(h);
    const b = await h.newMember({ sessionTimeoutMs: 5_000 });
    const bJoin = h.group.join(h.req(b, { sessionTimeoutMs: 5_000 }));
    await h.group.join(h.req(a));
    await bJoin;
    await Promise.all([
      h.sync(a, 2, [
        [a, "A"],
        [b, "B"],
      ]),
      h.sync(b, 2),
    ]);
    h.advance(4_000);
    expect(h.group.heartbeat(a, "", 2).error).toBe("NONE");
    expect(h.group.state).toBe("Stable");
    h.advance(1_500); // b: 5.5 s since it was last seen; a: 1.5 s
    expect(h.group.has(b)).toBe(false);
    expect(h.group.state).toBe("PreparingRebalance");
    const aJoin = await h.group.join(h.req(a));
    expect(aJoin.generationId).toBe(3);
    expect(aJoin.members.map((m) => m.memberId)).toEqual([a]);
    expect(h.group.heartbeat(b, "", 2).error).toBe("UNKNOWN_MEMBER_ID");
  });

  it("a member that does not rejoin within the rebalance timeout is left out of the next generation", async () => {
    const h = new Harness();
    const a = await stableOne(h);
    const b = await h.newMember();
    const bJoin = h.group.join(h.req(b, { rebalanceTimeoutMs: 20_000 }));
    await h.group.join(h.req(a, { rebalanceTimeoutMs: 20_000 }));
    await bJoin;
    await Promise.all([
      h.sync(a, 2, [
        [a, "A"],
        [b, "B"],
      ]),
      h.sync(b, 2),
    ]);
    const c = await h.newMember();
    const cJoin = h.group.join(h.req(c, { rebalanceTimeoutMs: 20_000 }));
    const aJoin = h.group.join(h.req(a, { rebalanceTimeoutMs: 20_000 }));
    // b keeps heartbeating (REBALANCE_IN_PROGRESS) but never rejoins.
    for (let t = 0; t < 19; t++) {
      h.advance(1_000);
      expect(h.group.heartbeat(b, "", 2).error).toBe("REBALANCE_IN_PROGRESS");
    }
    expect(await settled(aJoin)).toBe(false);
    h.advance(1_001);
    const [aj, cj] = await Promise.all([aJoin, cJoin]);
    expect(aj.generationId).toBe(3);
    expect(aj.members.map((m) => m.memberId).sort()).toEqual([a, c].sort());
    expect(cj.error).toBe("NONE");
    expect(h.group.heartbeat(b, "", 2).error).toBe("UNKNOWN_MEMBER_ID");
  });

  it("a leader that never sends SyncGroup: at the sync deadline the waiting followers are told to rejoin", async () => {
    const h = new Harness();
    const a = await h.newMember({ rebalanceTimeoutMs: 10_000 });
    const b = await h.newMember({ rebalanceTimeoutMs: 10_000 });
    const joins = [
      h.group.join(h.req(a, { rebalanceTimeoutMs: 10_000 })),
      h.group.join(h.req(b, { rebalanceTimeoutMs: 10_000 })),
    ];
    const [aj, bj] = await Promise.all(joins);
    const leader = aj!.members.length > 0 ? a : b;
    const follower = leader === a ? b : a;
    expect(bj!.generationId).toBe(1);
    const followerSync = h.sync(follower, 1);
    h.advance(9_000);
    expect(await settled(followerSync)).toBe(false);
    h.advance(1_001);
    expect((await followerSync).error).toBe("REBALANCE_IN_PROGRESS");
    expect(h.group.has(leader)).toBe(false);
    expect(h.group.state).toBe("PreparingRebalance");
  });

  it("an expired KIP-394 pending member no longer blocks the join", async () => {
    const h = new Harness();
    const a = await stableOne(h);
    await h.newMember({ sessionTimeoutMs: 3_000 }); // never comes back
    const b = await h.newMember();
    const bJoin = h.group.join(h.req(b));
    const aJoin = h.group.join(h.req(a));
    expect(await settled(aJoin)).toBe(false);
    h.advance(3_001);
    expect((await aJoin).members).toHaveLength(2);
    expect((await bJoin).generationId).toBe(2);
  });

  it("the initial rebalance delay gathers members that join an empty group close together into one generation", async () => {
    const h = new Harness({ initialRebalanceDelayMs: 3_000 });
    const a = await h.newMember();
    const aJoin = h.group.join(h.req(a));
    h.advance(1_000);
    const b = await h.newMember();
    const bJoin = h.group.join(h.req(b));
    h.advance(2_000); // the first delay ends; b joined meanwhile: one more delay
    expect(await settled(aJoin)).toBe(false);
    h.advance(3_000);
    const [aj, bj] = await Promise.all([aJoin, bJoin]);
    expect(aj.generationId).toBe(1);
    expect(bj.generationId).toBe(1);
  });
});

describe("classic group: static members, failures, a new leader", () => {
  it("a static member restarting (same instance id, no member id) keeps its assignment without a rebalance; the old member id is fenced", async () => {
    const h = new Harness();
    const s = (await h.group.join(h.req("", { instanceId: "i1" }))).memberId; // static: no MEMBER_ID_REQUIRED
    expect(h.group.state).toBe("CompletingRebalance");
    await h.sync(s, 1, [[s, "S"]]);
    const again = await h.group.join(h.req("", { instanceId: "i1" }));
    expect(again.error).toBe("NONE");
    expect(again.memberId).not.toBe(s);
    expect(again.generationId).toBe(1);
    expect(h.group.state).toBe("Stable");
    expect(
      (
        await h.group.sync({
          memberId: again.memberId,
          instanceId: "i1",
          generationId: 1,
          protocolType: null,
          protocolName: null,
          assignments: [],
        })
      ).assignment.toString(),
    ).toBe("S");
    expect(h.group.heartbeat(s, "i1", 1).error).toBe("FENCED_INSTANCE_ID");
    expect(h.group.heartbeat(s, "", 1).error).toBe("UNKNOWN_MEMBER_ID");
    // The log learned the new member id: its commits pass, the old one's are fenced.
    expect(h.records.at(-1)!.members[0]!.memberId).toBe(again.memberId);
    expect(h.commit(again.memberId, 1, "i1")).toMatchObject({ error: "NONE" });
    expect(h.commit(s, 1, "i1")).toMatchObject({ error: "FENCED_INSTANCE_ID" });
    expect(h.group.leave([{ memberId: "", instanceId: "i1" }])[0]!.error).toBe("NONE");
  });

  it("a failed write of the leader's assignment answers the waiting SyncGroups with the error and rebalances", async () => {
    const h = new Harness();
    const a = await h.newMember();
    await h.group.join(h.req(a));
    h.failPersist = "NOT_COORDINATOR";
    expect((await h.sync(a, 1, [[a, "A"]])).error).toBe("NOT_COORDINATOR");
    expect(h.group.state).toBe("PreparingRebalance");
  });

  it("a new leader starts Stable from the record: the generation's members heartbeat on; a group id is classic or KIP-848", async () => {
    const h = new Harness();
    const a = await stableOne(h, "A");
    const next = new Harness({}, h.records.at(-1));
    expect(next.group.state).toBe("Stable");
    expect(next.group.heartbeat(a, "", 1).error).toBe("NONE");
    expect((await next.sync(a, 1)).assignment.toString()).toBe("A");
    // A KIP-848 heartbeat for this classic group is refused while it has members.
    const hb = h.apply({
      type: "group-heartbeat",
      groupId: G,
      memberId: "m848",
      memberEpoch: 0,
      instanceId: "",
      rackId: "",
      clientId: "c",
      clientHost: "h",
      rebalanceTimeoutMs: 30_000,
      subscribedTopicNames: ["t"],
      subscribedTopicRegex: "",
      serverAssignor: "",
      ownedPartitions: [],
      timestampMs: h.now,
      topics: [["t", 1]],
    });
    expect(hb).toMatchObject({ type: "heartbeat", error: "GROUP_ID_NOT_FOUND" });
    // ...and a classic record for a KIP-848 group with members is INCONSISTENT_GROUP_PROTOCOL.
    h.apply({
      type: "group-heartbeat",
      groupId: "kip848",
      memberId: "m848",
      memberEpoch: 0,
      instanceId: "",
      rackId: "",
      clientId: "c",
      clientHost: "h",
      rebalanceTimeoutMs: 30_000,
      subscribedTopicNames: ["t"],
      subscribedTopicRegex: "",
      serverAssignor: "",
      ownedPartitions: [],
      timestampMs: h.now,
      topics: [["t", 1]],
    });
    const refused = h.apply({
      type: "classic-group",
      groupId: "kip848",
      generationId: 1,
      protocolType: "consumer",
      protocolName: "range",
      leader: "x",
      members: [],
      timestampMs: h.now,
    });
    expect(refused).toMatchObject({ type: "group", error: "INCONSISTENT_GROUP_PROTOCOL" });
    // Snapshots keep the classic records.
    const copy = new OffsetsStateMachine();
    copy.restore(h.sm.snapshot(), h.index);
    expect(copy.classic.get(G)).toEqual(h.sm.classic.get(G));
    expect(copy.listGroups().find((g) => g.groupId === G)).toMatchObject({
      type: "classic",
      state: "STABLE",
      members: 1,
    });
  });

  it("every join and sync of a deleted group or a lost leadership is answered (nothing waits forever)", async () => {
    const h = new Harness();
    const a = await h.newMember();
    const b = await h.newMember();
    const aJoin = h.group.join(h.req(a));
    const bJoin: Promise<JoinOutcome> = h.group.join(h.req(b));
    const [aj] = await Promise.all([aJoin, bJoin]);
    const follower = aj!.members.length > 0 ? b : a;
    const pendingSync = h.sync(follower, 1);
    h.group.close("NOT_COORDINATOR", "moved");
    expect((await pendingSync).error).toBe("NOT_COORDINATOR");
  });
});
