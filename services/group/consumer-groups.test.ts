// Consumer-group membership (KIP-848) in the offsets state machine, driven entry by entry as
// the Raft host would: joins, incremental reconciliation (nothing is owned twice at any step),
// leaves, fencing, static members, regex subscriptions, commit fencing and snapshots.
import { describe, expect, it } from "vitest";
import type { HeartbeatResult } from "./consumer-groups.js";
import type { HeartbeatEntry, TopicPartitionsRow } from "./group-codec.js";
import { encodeEntry, type OffsetsEntry } from "./offsets-codec.js";
import { OffsetsStateMachine, type OffsetsApplyResult } from "./offsets-state-machine.js";

const G = "g";

class Driver {
  sm = new OffsetsStateMachine();
  index = 0;
  now = 1_000;
  topics: Array<[string, number]> = [["t", 6]];
  /** What each simulated client owns (it acknowledges revocations at once). */
  readonly owned = new Map<string, TopicPartitionsRow[]>();
  readonly epochs = new Map<string, number>();

  apply(entry: OffsetsEntry): OffsetsApplyResult {
    this.index++;
    const r = this.sm.apply({ index: this.index, term: 1, data: encodeEntry(entry) });
    this.checkNothingOwnedTwice();
    return r;
  }

  entry(
    memberId: string,
    memberEpoch: number,
    extra: Partial<HeartbeatEntry> = {},
  ): HeartbeatEntry {
    return {
      type: "group-heartbeat",
      groupId: G,
      memberId,
      memberEpoch,
      instanceId: "",
      rackId: "",
      clientId: "c",
      clientHost: "h",
      rebalanceTimeoutMs: 30_000,
      subscribedTopicNames: ["t"],
      subscribedTopicRegex: "",
      serverAssignor: "",
      ownedPartitions: this.owned.get(memberId) ?? [],
      timestampMs: this.now,
      topics: this.topics,
      ...extra,
    };
  }

  hb(memberId: string, extra: Partial<HeartbeatEntry> = {}): HeartbeatResult {
    const r = this.apply(
      this.entry(memberId, extra.memberEpoch ?? this.epochs.get(memberId) ?? 0, extra),
    );
    if (r.type !== "heartbeat") throw new Error(`expected a heartbeat result, got ${r.type}`);
    if (r.error === "NONE") {
      this.epochs.set(memberId, r.memberEpoch);
      this.owned.set(
        memberId,
        r.assignment.map(([t, ps]) => [t, [...ps]]),
      );
    }
    return r;
  }

  /** Heartbeats every member round-robin until the group is stable (bounded). */
  settle(ids: string[]): void {
    for (let round = 0; round < 20; round++) {
      for (const id of ids) this.hb(id);
      if (this.sm.describeGroup(G)?.state === "STABLE") return;
    }
    throw new Error(`group did not settle: ${JSON.stringify(this.sm.describeGroup(G))}`);
  }

  assigned(memberId: string): string[] {
    const m = this.sm.describeGroup(G)!.members.find((x) => x.memberId === memberId)!;
    return m.assigned.flatMap(([t, ps]) => ps.map((p) => `${t}-${p}`));
  }

  private checkNothingOwnedTwice(): void {
    const view = this.sm.describeGroup(G);
    if (!view) return;
    const seen = new Set<string>();
    for (const m of view.members) {
      for (const [t, ps] of [...m.assigned, ...m.pendingRevocation]) {
        for (const p of ps) {
          const k = `${t}-${p}`;
          if (seen.has(k)) throw new Error(`${k} owned twice: ${JSON.stringify(view.members)}`);
          seen.add(k);
        }
      }
    }
  }
}

const all6 = ["t-0", "t-1", "t-2", "t-3", "t-4", "t-5"];

describe("consumer groups: joining and reconciliation", () => {
  it("three members get disjoint partitions covering all six, at the group's epoch", () => {
    const d = new Driver();
    d.settle(["a", "b", "c"]);
    const parts = ["a", "b", "c"].map((id) => d.assigned(id));
    expect(parts.flat().sort()).toEqual(all6);
    expect(parts.map((p) => p.length)).toEqual([2, 2, 2]);
    const view = d.sm.describeGroup(G)!;
    expect(view.members.every((m) => m.memberEpoch === view.groupEpoch)).toBe(true);
  });

  it("a joining member takes partitions only after their owners acknowledge the revocation", () => {
    const d = new Driver();
    d.settle(["a", "b", "c"]);
    const before = new Map(["a", "b", "c"].map((id) => [id, d.assigned(id)]));
    const join = d.hb("d");
    expect(join.assignment).toEqual([]); // everything is still owned
    expect(d.sm.describeGroup(G)!.state).toBe("RECONCILING");
    d.settle(["a", "b", "c", "d"]);
    const after = new Map(["a", "b", "c", "d"].map((id) => [id, d.assigned(id)]));
    expect([...after.values()].flat().sort()).toEqual(all6);
    // Only what d took moved: everyone else kept a subset of what they had.
    for (const id of ["a", "b", "c"])
      expect(before.get(id)!.filter((p) => after.get(id)!.includes(p))).toEqual(after.get(id));
    expect(after.get("d")!.length).toBe(1);
  });

  it("holds a revoked partition as pending (with a rebalance deadline) until the owner stops reporting it", () => {
    const d = new Driver();
    d.settle(["a"]);
    d.now = 5_000;
    d.hb("b");
    const a = d.hb("a", { ownedPartitions: [["t", [0, 1, 2, 3, 4, 5]]] });
    const view = d.sm.describeGroup(G)!;
    const ma = view.members.find((m) => m.memberId === "a")!;
    expect(ma.state).toBe("UNREVOKED_PARTITIONS");
    expect(ma.pendingRevocation.flatMap(([, ps]) => ps).length).toBe(3);
    expect(d.sm.groups.get(G)!.members.get("a")!.revocationDeadlineMs).toBe(35_000);
    expect(a.assignment.flatMap(([, ps]) => ps).length).toBe(3);
    // Still reported as owned: b gets nothing yet.
    d.hb("a", { ownedPartitions: [["t", [0, 1, 2, 3, 4, 5]]] });
    expect(d.hb("b").assignment).toEqual([]);
    d.settle(["a", "b"]);
    expect([...d.assigned("a"), ...d.assigned("b")].sort()).toEqual(all6);
  });

  it("a leaving member's partitions go to the others; a repeated leave is harmless", () => {
    const d = new Driver();
    d.settle(["a", "b", "c"]);
    const bHad = d.assigned("b");
    expect(d.hb("b", { memberEpoch: -1 })).toMatchObject({ error: "NONE", memberEpoch: -1 });
    expect(d.hb("b", { memberEpoch: -1 })).toMatchObject({ error: "NONE", memberEpoch: -1 });
    d.settle(["a", "c"]);
    expect([...d.assigned("a"), ...d.assigned("c")].sort()).toEqual(all6);
    expect(bHad.every((p) => d.assigned("a").includes(p) || d.assigned("c").includes(p))).toBe(
      true,
    );
  });

  it("a removed member's own topics leave the group's metadata: the next heartbeat does not rebalance again", () => {
    const d = new Driver();
    d.topics = [
      ["t", 6],
      ["u", 2],
    ];
    d.settle(["a"]);
    d.hb("b", { subscribedTopicNames: ["u"] });
    d.settle(["a"]);
    d.hb("b", { subscribedTopicNames: ["u"] });
    expect(d.hb("b", { memberEpoch: -1 })).toMatchObject({ error: "NONE" });
    const epochAfterLeave = d.sm.describeGroup(G)!.groupEpoch;
    // a's heartbeat (its metadata only has the topics someone still subscribes to) changes nothing.
    d.hb("a");
    d.hb("a");
    expect(d.sm.describeGroup(G)).toMatchObject({ groupEpoch: epochAfterLeave, state: "STABLE" });
    expect([...d.sm.groups.get(G)!.metadata.keys()]).toEqual(["t"]);
  });

  it("a fenced member (session timeout) is removed only at the epoch it was fenced at", () => {
    const d = new Driver();
    d.settle(["a", "b"]);
    const epoch = d.epochs.get("b")!;
    expect(
      d.apply({
        type: "group-fence",
        groupId: G,
        memberId: "b",
        memberEpoch: epoch + 5,
        reason: "session-timeout",
        timestampMs: d.now,
      }),
    ).toMatchObject({ error: "UNKNOWN_MEMBER_ID" });
    expect(
      d.apply({
        type: "group-fence",
        groupId: G,
        memberId: "b",
        memberEpoch: epoch,
        reason: "session-timeout",
        timestampMs: d.now,
      }),
    ).toMatchObject({ error: "NONE" });
    expect(d.hb("b")).toMatchObject({ error: "UNKNOWN_MEMBER_ID" });
    d.settle(["a"]);
    expect(d.assigned("a").sort()).toEqual(all6);
    // It may rejoin with epoch 0 and the same member id.
    d.owned.set("b", []);
    expect(d.hb("b", { memberEpoch: 0 }).error).toBe("NONE");
    d.settle(["a", "b"]);
    expect(d.assigned("b").length).toBe(3);
  });

  it("refuses a wrong epoch with FENCED_MEMBER_EPOCH but tolerates the previous epoch after a lost answer", () => {
    const d = new Driver();
    d.settle(["a"]);
    const e = d.epochs.get("a")!;
    expect(d.hb("a", { memberEpoch: e + 1 }).error).toBe("FENCED_MEMBER_EPOCH");
    d.hb("b");
    d.settle(["a", "b"]);
    const prev = d.sm.groups.get(G)!.members.get("a")!.previousMemberEpoch;
    expect(d.hb("a", { memberEpoch: prev, ownedPartitions: [] }).error).toBe("NONE");
  });
});

describe("consumer groups: static members, subscriptions, validation", () => {
  it("a static member leaving with -2 keeps its partitions for its instance id", () => {
    const d = new Driver();
    d.settle(["a"]);
    d.hb("s1", { instanceId: "i" });
    d.settle(["a", "s1"]);
    const had = d.assigned("s1");
    expect(d.hb("s2", { instanceId: "i", memberEpoch: 0 }).error).toBe("UNRELEASED_INSTANCE_ID");
    expect(d.hb("s1", { memberEpoch: -2, instanceId: "i" })).toMatchObject({
      error: "NONE",
      memberEpoch: -2,
    });
    const epochBefore = d.sm.describeGroup(G)!.groupEpoch;
    const back = d.hb("s2", { instanceId: "i", memberEpoch: 0 });
    expect(back.error).toBe("NONE");
    expect(back.assignment.flatMap(([t, ps]) => ps.map((p) => `${t}-${p}`))).toEqual(had);
    expect(d.sm.describeGroup(G)!.groupEpoch).toBe(epochBefore); // no rebalance
    expect(
      d.sm
        .describeGroup(G)!
        .members.map((m) => m.memberId)
        .sort(),
    ).toEqual(["a", "s2"]);
  });

  it("a regex subscription picks up new matching topics and new partitions", () => {
    const d = new Driver();
    d.topics = [
      ["t1", 2],
      ["other", 3],
    ];
    const sub = { subscribedTopicNames: [], subscribedTopicRegex: "t.*" };
    expect(d.hb("a", sub).assignment).toEqual([["t1", [0, 1]]]);
    d.topics = [
      ["t1", 3],
      ["t2", 1],
      ["other", 3],
    ];
    d.hb("a", sub);
    d.hb("a", sub);
    expect(d.assigned("a").sort()).toEqual(["t1-0", "t1-1", "t1-2", "t2-0"]);
  });

  it("a regex member gets only the topics the leader resolved for it (DESCRIBE-filtered)", () => {
    const d = new Driver();
    d.topics = [
      ["t1", 2],
      ["secret", 2],
    ];
    // b names "secret" (it may describe it), so the group's metadata holds it; a's ".*" must
    // still not take it: the leader left it out of a's regexTopics.
    d.hb("b", { subscribedTopicNames: ["secret"] });
    const sub = { subscribedTopicNames: [], subscribedTopicRegex: ".*", regexTopics: ["t1"] };
    d.hb("a", sub);
    for (let i = 0; i < 5; i++) {
      d.hb("a", sub);
      d.hb("b", { subscribedTopicNames: ["secret"] });
    }
    expect(d.assigned("a").sort()).toEqual(["t1-0", "t1-1"]);
    expect(d.assigned("b").sort()).toEqual(["secret-0", "secret-1"]);
  });

  it("refuses regexes RE2 does not accept, and long ones, as INVALID_REGULAR_EXPRESSION", () => {
    const d = new Driver();
    const regex = (subscribedTopicRegex: string) =>
      d.hb("a", { subscribedTopicNames: [], subscribedTopicRegex });
    expect(regex("(?<=a)b").error).toBe("INVALID_REGULAR_EXPRESSION");
    const long = regex("a".repeat(1_001));
    expect(long.error).toBe("INVALID_REGULAR_EXPRESSION");
    expect(long.message).toContain("at most 1000");
  });

  it("refuses bad requests with Kafka's codes", () => {
    const d = new Driver();
    expect(d.hb("a", { subscribedTopicNames: [], subscribedTopicRegex: "(" }).error).toBe(
      "INVALID_REGULAR_EXPRESSION",
    );
    expect(d.hb("a", { serverAssignor: "sticky" }).error).toBe("UNSUPPORTED_ASSIGNOR");
    expect(d.hb("", {}).error).toBe("INVALID_REQUEST");
    expect(d.hb("a", { subscribedTopicNames: [] }).error).toBe("INVALID_REQUEST");
    expect(d.hb("a", { memberEpoch: 3 }).error).toBe("UNKNOWN_MEMBER_ID");
    expect(d.sm.describeGroup(G)).toBeUndefined();
  });

  it("the range assignor is used when members ask for it", () => {
    const d = new Driver();
    d.hb("a", { serverAssignor: "range" });
    d.hb("b", { serverAssignor: "range" });
    for (let i = 0; i < 5; i++) {
      d.hb("a", { serverAssignor: "range" });
      d.hb("b", { serverAssignor: "range" });
    }
    expect(d.assigned("a")).toEqual(["t-0", "t-1", "t-2"]);
    expect(d.sm.describeGroup(G)!.assignor).toBe("range");
  });
});

describe("consumer groups: commit fencing, snapshots, dry runs", () => {
  const commit = (
    d: Driver,
    memberId: string,
    generationId: number,
    txn = false,
    partition = 0,
  ): string => {
    const offsets = [{ topic: "t", partition, offset: 1n, leaderEpoch: -1, metadata: "" }];
    const r = txn
      ? d.apply({
          type: "txn-commit",
          transactionalId: "tx",
          groupId: G,
          producerId: 1n,
          producerEpoch: 0,
          generationId,
          memberId,
          groupInstanceId: "",
          timestampMs: d.now,
          offsets,
        })
      : d.apply({
          type: "commit",
          groupId: G,
          generationId,
          memberId,
          groupInstanceId: "",
          timestampMs: d.now,
          offsets,
        });
    if (r.type !== "commit") throw new Error(r.type);
    return r.error;
  };

  it("accepts commits only from members at their epoch while the group has members", () => {
    const d = new Driver();
    expect(commit(d, "", -1)).toBe("NONE"); // simple commits before anyone joins
    d.settle(["a"]);
    const e = d.epochs.get("a")!;
    expect(commit(d, "a", e)).toBe("NONE");
    expect(commit(d, "a", e, true)).toBe("NONE");
    expect(commit(d, "a", e + 1)).toBe("FENCED_MEMBER_EPOCH");
    expect(commit(d, "a", e, true)).toBe("NONE");
    // An older epoch: accepted for partitions the member owns now, refused otherwise.
    expect(commit(d, "a", e - 1)).toBe("NONE");
    d.hb("b");
    d.settle(["a", "b"]);
    const now = d.epochs.get("a")!;
    expect(now).toBeGreaterThan(e);
    const gone = [0, 1, 2, 3, 4, 5].find((p) => !d.assigned("a").includes(`t-${p}`))!;
    const kept = [0, 1, 2, 3, 4, 5].find((p) => d.assigned("a").includes(`t-${p}`))!;
    expect(commit(d, "a", e, false, gone)).toBe("STALE_MEMBER_EPOCH");
    expect(commit(d, "a", e, true, kept)).toBe("NONE");
    d.hb("b", { memberEpoch: -1 });
    d.settle(["a"]);
    expect(commit(d, "zombie", e)).toBe("UNKNOWN_MEMBER_ID");
    expect(commit(d, "zombie", e, true)).toBe("UNKNOWN_MEMBER_ID");
    expect(commit(d, "", -1)).toBe("UNKNOWN_MEMBER_ID");
    const last = d.epochs.get("a")!;
    d.hb("a", { memberEpoch: -1 });
    expect(commit(d, "a", last)).toBe("UNKNOWN_MEMBER_ID");
    expect(commit(d, "", -1)).toBe("NONE"); // empty again: simple commits (an offsets reset) work
  });

  it("a snapshot taken mid-rebalance restores members, epochs, targets and pending revocations", () => {
    const d = new Driver();
    d.settle(["a", "b"]);
    d.hb("c");
    d.hb("a", { ownedPartitions: d.owned.get("a") });
    const before = d.sm.describeGroup(G);
    const restored = new OffsetsStateMachine();
    restored.restore(d.sm.snapshot(), d.index);
    expect(restored.describeGroup(G)).toEqual(before);
    // The restored replica continues to the same result as the original.
    const d2 = new Driver();
    d2.sm = restored;
    d2.index = d.index;
    for (const [k, v] of d.owned) d2.owned.set(k, v);
    for (const [k, v] of d.epochs) d2.epochs.set(k, v);
    d.settle(["a", "b", "c"]);
    d2.settle(["a", "b", "c"]);
    expect(d2.sm.describeGroup(G)).toEqual(d.sm.describeGroup(G));
  });

  it("restores a version-1 snapshot (before groups) with no groups", () => {
    const sm = new OffsetsStateMachine();
    sm.restore(
      new TextEncoder().encode(
        JSON.stringify({ format: 1, lastApplied: 3, committed: [], pending: [], producers: [] }),
      ),
      3,
    );
    expect(sm.groups.size).toBe(0);
  });

  it("answers a steady member's heartbeat without a proposal, and only then", () => {
    const d = new Driver();
    d.settle(["a", "b"]);
    const steady = d.sm.groups.dryRun(d.entry("a", d.epochs.get("a")!));
    expect(steady).toMatchObject({ error: "NONE", memberEpoch: d.epochs.get("a") });
    expect(d.sm.groups.dryRun(d.entry("c", 0))).toBeUndefined(); // a join changes state
    expect(d.sm.groups.dryRun(d.entry("a", 99))).toBeUndefined(); // errors go through the log
    d.topics = [["t", 8]];
    expect(d.sm.groups.dryRun(d.entry("a", d.epochs.get("a")!))).toBeUndefined(); // new partitions
  });

  it("deletes only an empty group, with its offsets", () => {
    const d = new Driver();
    d.settle(["a"]);
    expect(d.apply({ type: "group-delete", groupId: G })).toMatchObject({
      error: "NON_EMPTY_GROUP",
    });
    commit(d, "a", d.epochs.get("a")!);
    d.hb("a", { memberEpoch: -1 });
    expect(d.apply({ type: "group-delete", groupId: G })).toMatchObject({ error: "NONE" });
    expect(d.sm.fetchOffsets(G, undefined, false)).toEqual([]);
    expect(d.apply({ type: "group-delete", groupId: G })).toMatchObject({
      error: "GROUP_ID_NOT_FOUND",
    });
  });
});
