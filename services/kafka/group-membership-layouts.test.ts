// The classic group membership APIs' flexible versions against frames written field by field
// from Kafka's schemas, over a stand-in group coordinator: JoinGroup v6-v8 (v7 answers the
// protocol type, an empty protocol name as null; v8's reason read), SyncGroup v4-v5 (v5's
// protocol type and name reach the group and come back, null with an error), Heartbeat v4,
// LeaveGroup v4-v5 (v5's per-member reason read), DescribeGroups v5-v6 (v6: an unknown group
// is GROUP_ID_NOT_FOUND with a message), ListGroups v3-v5 (states and types, filtered) and
// OffsetFetch v6-v7 (require_stable);
// each with unknown tagged fields
// skipped and a truncated frame refused; the classic layouts of the versions before unchanged.
import { describe, expect, it } from "vitest";
import { silentLogger } from "../../libs/common/logger.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import type { JoinRequest, SyncRequest } from "../group/classic-group.js";
import { describeGroupsResponse } from "./describe-groups-api.js";
import { heartbeatResponse } from "./heartbeat-api.js";
import { joinGroupResponse } from "./join-group-api.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { leaveGroupResponse } from "./leave-group-api.js";
import { listGroupsResponse } from "./list-groups-api.js";
import { offsetFetchResponse } from "./offset-fetch-api.js";
import { syncGroupResponse } from "./sync-group-api.js";

const META = Buffer.from([1, 2, 3]);
const ASSIGNMENT = Buffer.from([9, 8]);

/** A stand-in group coordinator: what it was asked, and fixed answers. */
function groups(error: string = "NONE") {
  const asked: unknown[] = [];
  const classic = {
    join: async (_g: string, r: JoinRequest) => {
      asked.push(r);
      return {
        error,
        message: "",
        generationId: 3,
        protocolType: "consumer",
        protocolName: error === "NONE" ? "range" : "",
        leader: "m-1",
        memberId: "m-1",
        members: [{ memberId: "m-1", instanceId: "", metadata: META }],
      };
    },
    sync: async (_g: string, r: SyncRequest) => {
      asked.push(r);
      return {
        error,
        message: "",
        protocolType: "consumer",
        protocolName: "range",
        assignment: ASSIGNMENT,
      };
    },
    heartbeat: async (...args: unknown[]) => {
      asked.push(args);
      return { error };
    },
    leave: async (_g: string, refs: Array<{ memberId: string; instanceId: string }>) => {
      asked.push(refs);
      return refs.map((r) => ({ ...r, error }));
    },
  };
  const deps = {
    logger: silentLogger(),
    nodeId: 0,
    groups: { classic },
  } as unknown as KafkaDeps;
  return { deps, asked };
}

/** An unknown tagged field (tag 7, one byte). */
function tag(w: KafkaWriter): void {
  w.uvarint(1).uvarint(7).uvarint(1).int8(0);
}

function joinBody(version: number): Buffer {
  const w = new KafkaWriter(128);
  if (version < 6) {
    w.string("g").int32(10_000).int32(30_000).string("").nullableString(null).string("consumer");
    w.array(["range"], (x, n) => x.string(n).nullableBytes(META));
    return w.finish();
  }
  w.compactNullableString("g").int32(10_000).int32(30_000).compactNullableString("");
  w.compactNullableString(null).compactNullableString("consumer");
  w.compactArray(["range"], (x, n) => {
    x.compactNullableString(n)
      .uvarint(META.length + 1)
      .raw(META);
    tag(x);
  });
  if (version >= 8) w.compactNullableString("rebalance needed");
  tag(w);
  return w.finish();
}

function readJoin(version: number, body: Buffer) {
  const r = new KafkaReader(body);
  const flex = version >= 6;
  const str = () => (flex ? r.compactNullableString() : r.nullableString());
  r.int32();
  const out = {
    error: r.int16(),
    generation: r.int32(),
    protocolType: version >= 7 ? str() : undefined,
    protocolName: str(),
    leader: str(),
    memberId: str(),
    members: (flex ? r.compactArray.bind(r) : r.array.bind(r))((x: KafkaReader) => {
      const m = {
        memberId: str(),
        instanceId: str(),
        metadata: Buffer.from((flex ? x.compactNullableBytes() : x.nullableBytes())!),
      };
      if (flex) x.taggedFields();
      return m;
    }),
  };
  if (flex) r.taggedFields();
  expect(r.remaining()).toBe(0);
  return out;
}

describe("JoinGroup v6-v8", () => {
  it("decodes the flexible layout (reason, tagged fields) and answers with the protocol type from v7", async () => {
    for (const version of [5, 6, 7, 8]) {
      const { deps, asked } = groups();
      const body = await joinGroupResponse(deps, version, new KafkaReader(joinBody(version)), {
        clientId: "c",
        clientHost: "/h",
      });
      expect(asked[0]).toMatchObject({
        memberId: "",
        instanceId: "",
        sessionTimeoutMs: 10_000,
        rebalanceTimeoutMs: 30_000,
        protocolType: "consumer",
        protocols: [{ name: "range", metadata: META }],
      });
      expect(readJoin(version, body)).toEqual({
        error: 0,
        generation: 3,
        protocolType: version >= 7 ? "consumer" : undefined,
        protocolName: "range",
        leader: "m-1",
        memberId: "m-1",
        members: [{ memberId: "m-1", instanceId: null, metadata: META }],
      });
    }
  });

  it("answers an error with null protocol type and name from v7, and refuses a truncated frame", async () => {
    const { deps } = groups("UNKNOWN_MEMBER_ID");
    const client = { clientId: "c", clientHost: "/h" };
    const body = await joinGroupResponse(deps, 7, new KafkaReader(joinBody(7)), client);
    expect(readJoin(7, body)).toMatchObject({ error: 25, protocolType: null, protocolName: null });
    const b = joinBody(8);
    await expect(
      joinGroupResponse(deps, 8, new KafkaReader(b.subarray(0, b.length - 4)), client),
    ).rejects.toThrow();
  });
});

function syncBody(version: number, protocol: [string, string] | null = ["consumer", "range"]) {
  const w = new KafkaWriter(128);
  if (version < 4) {
    w.string("g").int32(3).string("m-1").nullableString(null);
    w.array(["m-1"], (x, m) => x.string(m).nullableBytes(ASSIGNMENT));
    return w.finish();
  }
  w.compactNullableString("g").int32(3).compactNullableString("m-1").compactNullableString(null);
  if (version >= 5)
    w.compactNullableString(protocol?.[0] ?? null).compactNullableString(protocol?.[1] ?? null);
  w.compactArray(["m-1"], (x, m) => {
    x.compactNullableString(m)
      .uvarint(ASSIGNMENT.length + 1)
      .raw(ASSIGNMENT);
    tag(x);
  });
  tag(w);
  return w.finish();
}

describe("SyncGroup v4-v5", () => {
  it("passes v5's protocol type and name to the group and answers the group's", async () => {
    const { deps, asked } = groups();
    const r = new KafkaReader(await syncGroupResponse(deps, 5, new KafkaReader(syncBody(5))));
    expect(asked[0]).toMatchObject({
      memberId: "m-1",
      generationId: 3,
      protocolType: "consumer",
      protocolName: "range",
      assignments: [{ memberId: "m-1", assignment: ASSIGNMENT }],
    });
    expect([r.int32(), r.int16(), r.compactNullableString(), r.compactNullableString()]).toEqual([
      0,
      0,
      "consumer",
      "range",
    ]);
    expect(r.compactNullableBytes()).toEqual(ASSIGNMENT);
    r.taggedFields();
    expect(r.remaining()).toBe(0);
  });

  it("v4 sends no protocol (the group checks none); an error answers null protocols; truncated refused", async () => {
    const { deps, asked } = groups();
    const v4 = new KafkaReader(await syncGroupResponse(deps, 4, new KafkaReader(syncBody(4))));
    expect(asked[0]).toMatchObject({ protocolType: null, protocolName: null });
    expect([v4.int32(), v4.int16()]).toEqual([0, 0]);
    expect(v4.compactNullableBytes()).toEqual(ASSIGNMENT);
    v4.taggedFields();
    expect(v4.remaining()).toBe(0);
    const failed = groups("INCONSISTENT_GROUP_PROTOCOL");
    const e = new KafkaReader(
      await syncGroupResponse(failed.deps, 5, new KafkaReader(syncBody(5))),
    );
    expect([e.int32(), e.int16(), e.compactNullableString(), e.compactNullableString()]).toEqual([
      0,
      23,
      null,
      null,
    ]);
    const b = syncBody(5);
    await expect(
      syncGroupResponse(deps, 5, new KafkaReader(b.subarray(0, b.length - 2))),
    ).rejects.toThrow();
  });
});

describe("Heartbeat v4 and LeaveGroup v4-v5", () => {
  it("Heartbeat v4: flexible request and answer", async () => {
    const { deps, asked } = groups("REBALANCE_IN_PROGRESS");
    const w = new KafkaWriter(64).compactNullableString("g").int32(3);
    w.compactNullableString("m-1").compactNullableString("static-1");
    tag(w);
    const r = new KafkaReader(await heartbeatResponse(deps, 4, new KafkaReader(w.finish())));
    expect(asked[0]).toEqual(["g", "m-1", "static-1", 3]);
    expect([r.int32(), r.int16()]).toEqual([0, 27]);
    r.taggedFields();
    expect(r.remaining()).toBe(0);
    const b = w.finish();
    await expect(
      heartbeatResponse(deps, 4, new KafkaReader(b.subarray(0, b.length - 3))),
    ).rejects.toThrow();
  });

  it("LeaveGroup v4-v5: members by id and instance id (v5 with a reason), answered per member", async () => {
    for (const version of [4, 5]) {
      const { deps, asked } = groups();
      const w = new KafkaWriter(64).compactNullableString("g");
      w.compactArray(
        [
          ["m-1", null],
          ["", "static-2"],
        ] as const,
        (x, [id, instance]) => {
          x.compactNullableString(id).compactNullableString(instance);
          if (version >= 5) x.compactNullableString("shutting down");
          tag(x);
        },
      );
      tag(w);
      const r = new KafkaReader(
        await leaveGroupResponse(deps, version, new KafkaReader(w.finish())),
      );
      expect(asked[0]).toEqual([
        { memberId: "m-1", instanceId: "" },
        { memberId: "", instanceId: "static-2" },
      ]);
      expect([r.int32(), r.int16()]).toEqual([0, 0]);
      const members = r.compactArray((x) => {
        const m = [x.compactNullableString(), x.compactNullableString(), x.int16()];
        x.taggedFields();
        return m;
      });
      r.taggedFields();
      expect(r.remaining()).toBe(0);
      expect(members).toEqual([
        ["m-1", null, 0],
        ["", "static-2", 0],
      ]);
    }
  });
});

describe("DescribeGroups v5-v6 and ListGroups v3-v5", () => {
  const view = {
    groupId: "g",
    state: "Stable",
    generationId: 3,
    protocolType: "consumer",
    protocolName: "range",
    leader: "m-1",
    members: [
      {
        memberId: "m-1",
        instanceId: "",
        clientId: "c",
        clientHost: "/h",
        metadata: META,
        assignment: ASSIGNMENT,
      },
    ],
  };
  const deps = {
    logger: silentLogger(),
    nodeId: 0,
    groups: {
      classic: { describe: async (id: string) => (id === "g" ? view : undefined) },
      listGroups: () => [
        { groupId: "g", type: "classic", state: "Stable", members: 1, protocolType: "consumer" },
        { groupId: "new", type: "consumer", state: "Stable", members: 1, protocolType: "consumer" },
      ],
    },
  } as unknown as KafkaDeps;

  const deps2 = {
    logger: silentLogger(),
    nodeId: 0,
    groups: {
      listGroups: () => [
        {
          groupId: "a",
          type: "classic",
          state: "PREPARING_REBALANCE",
          members: 2,
          protocolType: "consumer",
        },
        {
          groupId: "b",
          type: "consumer",
          state: "RECONCILING",
          members: 1,
          protocolType: "consumer",
        },
        { groupId: "c", type: "simple", state: "EMPTY", members: 0, protocolType: "" },
      ],
    },
  } as unknown as KafkaDeps;

  function describeBody(ids: readonly string[]): Buffer {
    const w = new KafkaWriter(64).compactArray(ids, (x, id) => x.compactNullableString(id));
    w.bool(false);
    tag(w);
    return w.finish();
  }

  function readDescribe(version: number, body: Buffer) {
    const r = new KafkaReader(body);
    r.int32();
    const groups = r.compactArray((x) => {
      const g = {
        error: x.int16(),
        message: version >= 6 ? x.compactNullableString() : undefined,
        groupId: x.compactString(),
        state: x.compactString(),
        protocolType: x.compactString(),
        protocolName: x.compactString(),
        members: x.compactArray((y) => {
          const m = {
            memberId: y.compactString(),
            instanceId: y.compactNullableString(),
            clientId: y.compactString(),
            clientHost: y.compactString(),
            metadata: y.compactNullableBytes(),
            assignment: y.compactNullableBytes(),
          };
          y.taggedFields();
          return m;
        }),
        operations: x.int32(),
      };
      x.taggedFields();
      return g;
    });
    r.taggedFields();
    expect(r.remaining()).toBe(0);
    return groups;
  }

  it("describes in the flexible layout; v6 answers an unknown group GROUP_ID_NOT_FOUND with a message, v5 Dead", async () => {
    const ids = ["g", "nope", "new"];
    const v6 = readDescribe(
      6,
      await describeGroupsResponse(deps, 6, new KafkaReader(describeBody(ids))),
    );
    expect(v6[0]).toMatchObject({
      error: 0,
      message: null,
      groupId: "g",
      state: "Stable",
      protocolName: "range",
    });
    expect(v6[0]!.members).toEqual([
      {
        memberId: "m-1",
        instanceId: null,
        clientId: "c",
        clientHost: "/h",
        metadata: META,
        assignment: ASSIGNMENT,
      },
    ]);
    expect(v6[1]).toMatchObject({ error: 69, message: "group nope not found", state: "Dead" });
    expect(v6[2]).toMatchObject({ error: 69, message: "group new is not a classic group" });
    const v5 = readDescribe(
      5,
      await describeGroupsResponse(deps, 5, new KafkaReader(describeBody(ids))),
    );
    expect(v5.map((g) => [g.error, g.state])).toEqual([
      [0, "Stable"],
      [0, "Dead"],
      [69, "Dead"],
    ]);
    const b = describeBody(ids);
    await expect(
      describeGroupsResponse(deps, 6, new KafkaReader(b.subarray(0, b.length - 3))),
    ).rejects.toThrow();
  });

  it("lists v5 with Kafka's state and type names, filtered case-insensitively by state and type", async () => {
    const listed = (states: string[], types: string[]) => {
      const w = new KafkaWriter(64);
      w.compactArray(states, (x, s) => x.compactNullableString(s));
      w.compactArray(types, (x, t) => x.compactNullableString(t));
      tag(w);
      const r = new KafkaReader(listGroupsResponse(deps2, 5, new KafkaReader(w.finish())));
      expect([r.int32(), r.int16()]).toEqual([0, 0]);
      const groups = r.compactArray((x) => {
        const g = [x.compactString(), x.compactString(), x.compactString(), x.compactString()];
        x.taggedFields();
        return g;
      });
      r.taggedFields();
      expect(r.remaining()).toBe(0);
      return groups;
    };
    expect(listed([], [])).toEqual([
      ["a", "consumer", "PreparingRebalance", "classic"],
      ["b", "consumer", "Reconciling", "consumer"],
      ["c", "", "Empty", "classic"],
    ]);
    expect(listed(["preparingrebalance", "EMPTY"], []).map((g) => g[0])).toEqual(["a", "c"]);
    expect(listed([], ["Consumer"]).map((g) => g[0])).toEqual(["b"]);
    expect(listed(["Stable"], ["classic"])).toEqual([]);
  });

  it("lists groups in the flexible layout from v3", async () => {
    const w = new KafkaWriter(8);
    tag(w);
    const r = new KafkaReader(listGroupsResponse(deps, 3, new KafkaReader(w.finish())));
    expect([r.int32(), r.int16()]).toEqual([0, 0]);
    const groups = r.compactArray((x) => {
      const g = [x.compactString(), x.compactString()];
      x.taggedFields();
      return g;
    });
    r.taggedFields();
    expect(r.remaining()).toBe(0);
    expect(groups).toEqual([
      ["g", "consumer"],
      ["new", "consumer"],
    ]);
  });
});

describe("OffsetFetch v6-v7", () => {
  function body(version: number, topics: Array<[string, number[]]> | null): Buffer {
    const w = new KafkaWriter(64).compactNullableString("g");
    if (topics === null) w.uvarint(0);
    else
      w.compactArray(topics, (x, [name, ps]) => {
        x.compactNullableString(name).compactArray(ps, (y, p) => y.int32(p));
        tag(x);
      });
    if (version >= 7) w.bool(true);
    tag(w);
    return w.finish();
  }

  it("passes v7's require_stable, answers flexible per partition (UNSTABLE_OFFSET_COMMIT kept), v6 asks not stable", async () => {
    for (const version of [6, 7]) {
      const asked: unknown[] = [];
      const deps = {
        logger: silentLogger(),
        nodeId: 0,
        groups: {
          offsetFetch: async (req: unknown) => {
            asked.push(req);
            return {
              partitions: [
                {
                  topic: "t",
                  partition: 0,
                  offset: "5",
                  leaderEpoch: 2,
                  metadata: "m",
                  errorCode: "NONE",
                },
                {
                  topic: "t",
                  partition: 1,
                  offset: "-1",
                  leaderEpoch: -1,
                  metadata: "",
                  errorCode: "UNSTABLE_OFFSET_COMMIT",
                },
              ],
            };
          },
        },
      } as unknown as KafkaDeps;
      const r = new KafkaReader(
        await offsetFetchResponse(deps, version, new KafkaReader(body(version, [["t", [0, 1]]]))),
      );
      expect(asked[0]).toMatchObject({ groupId: "g", requireStable: version >= 7 });
      expect(r.int32()).toBe(0);
      const topics = r.compactArray((x) => {
        const t = {
          name: x.compactString(),
          ps: x.compactArray((y) => {
            const p = [y.int32(), y.int64(), y.int32(), y.compactNullableString(), y.int16()];
            y.taggedFields();
            return p;
          }),
        };
        x.taggedFields();
        return t;
      });
      expect(r.int16()).toBe(0);
      r.taggedFields();
      expect(r.remaining()).toBe(0);
      expect(topics).toEqual([
        {
          name: "t",
          ps: [
            [0, 5n, 2, "m", 0],
            [1, -1n, -1, "", 88],
          ],
        },
      ]);
      const b = body(version, null);
      await expect(
        offsetFetchResponse(deps, version, new KafkaReader(b.subarray(0, b.length - 2))),
      ).rejects.toThrow();
    }
  });
});
