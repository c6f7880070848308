// The group coordinator end to end over real gRPC on 127.0.0.1, with the real state machines.
// libs/raft-host's host.ts has not landed yet, so a single-replica stand-in applies each
// proposal at once (what a one-node Raft group does); test/integration/group*.test.ts covers
// the real host across processes.
import * as grpc from "@grpc/grpc-js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../libs/runtime/testing/manual-clock.js";
import { TernError } from "../../libs/common/errors.js";
import { fromGrpcError } from "../../libs/common/grpc-errors.js";
import { partitionFor } from "../../libs/common/hash.js";
import { silentLogger } from "../../libs/common/logger.js";
import { drive, turns } from "../../libs/common/testing/virtual-time.js";
import { loadTernProto } from "../../libs/common/proto.js";
import type { ClusterMetadata } from "../../libs/metadata/types.js";
import type {
  GroupOptions,
  ProposeResult,
  RaftGroup,
  RaftHostApi,
} from "../../libs/raft-host/api.js";
import type { StateMachine } from "../../libs/raft-host/state-machine.js";
import {
  createGroupCoordinator,
  offsetsGroupId,
  type GroupCoordinator,
} from "./group-coordinator.js";
import type { TxnPartitionVerifier } from "./ports.js";

class OneReplicaGroup {
  index = 0;
  leader = true;
  proposals = 0;
  failNextWith: TernError | undefined;
  constructor(
    readonly groupId: string,
    readonly sm: StateMachine,
  ) {}
  async propose<R>(data: Uint8Array): Promise<ProposeResult<R>> {
    this.proposals++;
    if (this.failNextWith) {
      const e = this.failNextWith;
      this.failNextWith = undefined;
      throw e;
    }
    if (!this.leader) throw new TernError("NOT_LEADER_OR_FOLLOWER", "not leader", { leader: -1 });
    this.index++;
    return {
      index: this.index,
      term: 1,
      result: this.sm.apply({ index: this.index, term: 1, data }) as R,
    };
  }
  async readBarrier(): Promise<void> {
    if (!this.leader) throw new TernError("NOT_LEADER_OR_FOLLOWER", "not leader", { leader: -1 });
  }
  isLeader(): boolean {
    return this.leader;
  }
  leader_(): number {
    return this.leader ? 1 : -1;
  }
}

function stubHost(): RaftHostApi & { groupsById: Map<string, OneReplicaGroup> } {
  const groupsById = new Map<string, OneReplicaGroup>();
  const unsupported = (): never => {
    throw new Error("not used by the group coordinator");
  };
  return {
    nodeId: 1,
    groupsById,
    openGroup: async (o: GroupOptions) => {
      const g = new OneReplicaGroup(o.groupId, o.stateMachine);
      groupsById.set(o.groupId, g);
      return asRaftGroup(g);
    },
    dropGroup: unsupported,
    group: (id: string) => {
      const g = groupsById.get(id);
      return g ? asRaftGroup(g) : undefined;
    },
    groups: () => [...groupsById.values()].map(asRaftGroup),
    setPeerAddress: () => {},
    onLeaderChange: () => () => {},
    transferAllLeaderships: async () => {},
    close: async () => {},
  };
}

function asRaftGroup(g: OneReplicaGroup): RaftGroup {
  return {
    groupId: g.groupId,
    propose: (data) => g.propose(data),
    readBarrier: () => g.readBarrier(),
    waitApplied: async () => {},
    isLeader: () => g.isLeader(),
    leader: () => g.leader_(),
    term: () => 1,
    appliedIndex: () => g.index,
    status: () => {
      throw new Error("unused");
    },
    readEntries: () => [],
    firstIndex: () => 1,
    transferLeadership: () => {},
    addVoter: async () => {},
    removeNode: async () => {},
  };
}

const metadata: ClusterMetadata = {
  version: "1",
  controllerLeader: 0,
  nodes: [],
  topics: [
    {
      name: "orders",
      internal: false,
      role: "broker",
      partitions: [0, 1, 2].map((p) => ({
        topic: "orders",
        partition: p,
        replicas: [1],
        leader: 1,
        leaderTerm: 1,
      })),
      config: {},
    },
  ],
};

/** The view with an n-partition __consumer_offsets (the count the coordinator hashes group ids by). */
function withOffsetsTopic(m: ClusterMetadata | undefined, n = 50): ClusterMetadata {
  const offsets = {
    name: "__consumer_offsets",
    internal: true,
    role: "broker" as const,
    config: {},
    partitions: Array.from({ length: n }, (_, p) => ({
      topic: "__consumer_offsets",
      partition: p,
      replicas: [1],
      leader: 1,
      leaderTerm: 1,
    })),
  };
  const base = m ?? { version: "1", controllerLeader: 0, nodes: [], topics: [] };
  return { ...base, topics: [...base.topics, offsets] };
}

interface Harness {
  coordinator: GroupCoordinator;
  host: ReturnType<typeof stubHost>;
  server: grpc.Server;
  client: any;
  call(method: string, request: unknown): Promise<any>;
  groupOf(groupId: string): OneReplicaGroup;
}

async function start(
  options: {
    verify?: TxnPartitionVerifier;
    metadata?: ClusterMetadata;
    offsetsPartitions?: number;
    clock?: ManualClock;
    sessionTimeoutMs?: number;
  } = {},
): Promise<Harness> {
  const offsetsPartitions = options.offsetsPartitions ?? 50;
  const host = stubHost();
  const coordinator = createGroupCoordinator({
    host,
    logger: silentLogger(),
    nodeId: 1,
    metadata: () => withOffsetsTopic(options.metadata, offsetsPartitions),
    clock: options.clock ?? new ManualClock(1_000_000),
    expireIntervalMs: 0,
    ...(options.sessionTimeoutMs
      ? {
          groupSessionTimeoutMs: options.sessionTimeoutMs,
          groupHeartbeatIntervalMs: options.sessionTimeoutMs / 4,
        }
      : {}),
    ...(options.verify ? { verifyTxnPartition: options.verify } : {}),
  });
  for (let p = 0; p < offsetsPartitions; p++)
    await host.openGroup({
      groupId: offsetsGroupId(p),
      initialVoters: [1],
      stateMachine: coordinator.stateMachineFor(p),
    });
  const server = new grpc.Server();
  server.addService(coordinator.service.definition, coordinator.service.implementation);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (e, p) =>
      e ? reject(e) : resolve(p),
    ),
  );
  const proto = loadTernProto().grpc;
  const client = new proto.tern.v1.GroupCoordinator(
    `127.0.0.1:${port}`,
    grpc.credentials.createInsecure(),
  );
  const call = (method: string, request: unknown) =>
    new Promise<any>((resolve, reject) =>
      (client as unknown as Record<string, (...args: unknown[]) => void>)[method]!(
        request,
        { deadline: Date.now() + 10_000 },
        (e: unknown, r: unknown) => (e ? reject(fromGrpcError(e)) : resolve(r)),
      ),
    );
  return {
    coordinator,
    host,
    server,
    client,
    call,
    groupOf: (g) => host.groupsById.get(offsetsGroupId(partitionFor(g, offsetsPartitions)))!,
  };
}

const simple = { generationId: -1, memberId: "" };

describe("group coordinator over gRPC", () => {
  let h: Harness;
  beforeEach(async () => {
    h = await start({ metadata });
  });
  afterEach(async () => {
    h.client.close();
    h.coordinator.close();
    await new Promise<void>((resolve) => h.server.tryShutdown(() => resolve()));
  });

  it("commits and fetches offsets with int64 strings, metadata and commit time", async () => {
    const commit = await h.call("OffsetCommit", {
      groupId: "g",
      ...simple,
      partitions: [
        {
          topic: "orders",
          partition: 0,
          offset: "9007199254740993",
          leaderEpoch: 4,
          metadata: "m",
        },
        { topic: "orders", partition: 1, offset: "-3", leaderEpoch: -1 },
        { topic: "nope", partition: 0, offset: "1", leaderEpoch: -1 },
        { topic: "orders", partition: 9, offset: "1", leaderEpoch: -1 },
      ],
    });
    expect(commit.partitions.map((p: any) => p.errorCode)).toEqual([
      "NONE",
      "INVALID_REQUEST",
      "UNKNOWN_TOPIC_OR_PARTITION",
      "UNKNOWN_TOPIC_OR_PARTITION",
    ]);
    const fetched = await h.call("OffsetFetch", {
      groupId: "g",
      partitions: [
        { topic: "orders", partition: 0 },
        { topic: "orders", partition: 1 },
      ],
    });
    expect(fetched.partitions).toEqual([
      {
        topic: "orders",
        partition: 0,
        offset: "9007199254740993",
        leaderEpoch: 4,
        metadata: "m",
        commitTimestampMs: "1000000",
        errorCode: "NONE",
        errorMessage: "",
      },
      {
        topic: "orders",
        partition: 1,
        offset: "-1",
        leaderEpoch: -1,
        metadata: "",
        commitTimestampMs: "-1",
        errorCode: "NONE",
        errorMessage: "",
      },
    ]);
    const all = await h.call("OffsetFetch", { groupId: "g" });
    expect(all.partitions.map((p: any) => [p.topic, p.partition, p.offset])).toEqual([
      ["orders", 0, "9007199254740993"],
    ]);
  });

  it("answers whole-request failures as gRPC statuses with tern trailers", async () => {
    await expect(
      h.call("OffsetCommit", { groupId: "", ...simple, partitions: [] }),
    ).rejects.toMatchObject({ errorName: "INVALID_GROUP_ID" });
    await expect(
      h.call("OffsetCommit", { groupId: "g", generationId: 3, memberId: "m", partitions: [] }),
    ).rejects.toMatchObject({ errorName: "ILLEGAL_GENERATION" });
    await expect(
      h.call("TxnOffsetCommit", {
        groupId: "g",
        transactionalId: "",
        producerId: "1",
        producerEpoch: 0,
        ...simple,
        partitions: [],
      }),
    ).rejects.toMatchObject({ errorName: "INVALID_REQUEST" });
    await expect(
      h.call("TxnOffsetCommit", {
        groupId: "g",
        transactionalId: "t",
        producerId: "-5",
        producerEpoch: 0,
        ...simple,
        partitions: [],
      }),
    ).rejects.toMatchObject({ errorName: "INVALID_REQUEST" });
    h.groupOf("g").leader = false;
    await expect(
      h.call("OffsetCommit", {
        groupId: "g",
        ...simple,
        partitions: [{ topic: "orders", partition: 0, offset: "1" }],
      }),
    ).rejects.toMatchObject({ errorName: "NOT_COORDINATOR", retriable: true });
    await expect(h.call("OffsetFetch", { groupId: "g" })).rejects.toMatchObject({
      errorName: "NOT_COORDINATOR",
    });
    h.groupOf("g").leader = true;
    h.groupOf("g").failNextWith = new TernError("NOT_LEADER_OR_FOLLOWER", "lost leadership");
    await expect(
      h.call("OffsetCommit", {
        groupId: "g",
        ...simple,
        partitions: [{ topic: "orders", partition: 0, offset: "1" }],
      }),
    ).rejects.toMatchObject({ errorName: "NOT_COORDINATOR" });
    h.groupOf("g").failNextWith = new TernError("REQUEST_TIMED_OUT", "slow");
    await expect(
      h.call("OffsetCommit", {
        groupId: "g",
        ...simple,
        partitions: [{ topic: "orders", partition: 0, offset: "1" }],
      }),
    ).rejects.toMatchObject({ errorName: "REQUEST_TIMED_OUT" });
  });

  it("does not propose when every partition is refused up front", async () => {
    const before = h.groupOf("g").proposals;
    const r = await h.call("OffsetCommit", {
      groupId: "g",
      ...simple,
      partitions: [{ topic: "nope", partition: 0, offset: "1" }],
    });
    expect(r.partitions[0].errorCode).toBe("UNKNOWN_TOPIC_OR_PARTITION");
    expect(h.groupOf("g").proposals).toBe(before);
  });

  it("keeps transactional offsets pending until the COMMIT marker, answering UNSTABLE_OFFSET_COMMIT meanwhile", async () => {
    const partition = partitionFor("g", 50);
    await h.call("OffsetCommit", {
      groupId: "g",
      ...simple,
      partitions: [{ topic: "orders", partition: 0, offset: "5", leaderEpoch: -1 }],
    });
    const txn = await h.call("TxnOffsetCommit", {
      transactionalId: "tx",
      groupId: "g",
      producerId: "4000",
      producerEpoch: 2,
      ...simple,
      partitions: [{ topic: "orders", partition: 0, offset: "17", leaderEpoch: -1 }],
    });
    expect(txn.partitions[0].errorCode).toBe("NONE");
    const stable = () =>
      h.call("OffsetFetch", {
        groupId: "g",
        partitions: [{ topic: "orders", partition: 0 }],
        requireStable: true,
      });
    expect((await stable()).partitions[0]).toMatchObject({ errorCode: "UNSTABLE_OFFSET_COMMIT" });
    expect(
      (
        await h.call("OffsetFetch", {
          groupId: "g",
          partitions: [{ topic: "orders", partition: 0 }],
        })
      ).partitions[0],
    ).toMatchObject({ offset: "5", errorCode: "NONE" });
    // A marker for another partition, or from a broker that does not lead, changes nothing here.
    expect(
      await h.coordinator.proposeMarker((partition + 1) % 50, {
        producerId: 4000n,
        producerEpoch: 3,
        committed: true,
        coordinatorEpoch: 1,
      }),
    ).toMatchObject({ error: "NONE" });
    expect((await stable()).partitions[0].errorCode).toBe("UNSTABLE_OFFSET_COMMIT");
    expect(
      await h.coordinator.proposeMarker(partition, {
        producerId: 4000n,
        producerEpoch: 3,
        committed: true,
        coordinatorEpoch: 1,
      }),
    ).toEqual({ error: "NONE", code: 0, message: "" });
    expect((await stable()).partitions[0]).toMatchObject({ offset: "17", errorCode: "NONE" });
    // The old epoch is fenced now (Transactions V2 marker bumped it to 3).
    await expect(
      h.call("TxnOffsetCommit", {
        transactionalId: "tx",
        groupId: "g",
        producerId: "4000",
        producerEpoch: 2,
        ...simple,
        partitions: [{ topic: "orders", partition: 0, offset: "99" }],
      }),
    ).rejects.toMatchObject({ errorName: "PRODUCER_FENCED", retriable: false });
    expect(
      await h.coordinator.proposeMarker(partition, {
        producerId: 4000n,
        producerEpoch: 3,
        committed: true,
        coordinatorEpoch: 0,
      }),
    ).toMatchObject({ error: "TRANSACTION_COORDINATOR_FENCED", code: 52 });
  });

  it("drops transactional offsets on ABORT (through the broker-shaped marker writer)", async () => {
    const partition = partitionFor("g2", 50);
    await h.call("TxnOffsetCommit", {
      transactionalId: "tx",
      groupId: "g2",
      producerId: "7",
      producerEpoch: 0,
      ...simple,
      partitions: [{ topic: "orders", partition: 2, offset: "17", leaderEpoch: -1 }],
    });
    const marker = {
      epochBumped: false,
      producerId: 7n,
      producerEpoch: 1,
      controlType: "ABORT" as const,
      coordinatorEpoch: 1,
      transactionalId: "tx",
    };
    expect(await h.coordinator.offsetsMarkerWriter(partition, marker)).toEqual({
      error: "NONE",
      message: "",
    });
    expect(
      await h.coordinator.offsetsMarkerWriter(partition, { ...marker, producerEpoch: 0 }),
    ).toMatchObject({ error: "INVALID_PRODUCER_EPOCH" });
    const r = await h.call("OffsetFetch", { groupId: "g2", requireStable: true });
    expect(r.partitions).toEqual([]);
  });

  it("answers NOT_LEADER_OR_FOLLOWER for markers of partitions it does not lead or host", async () => {
    h.groupOf("g").leader = false;
    expect(
      await h.coordinator.proposeMarker(partitionFor("g", 50), {
        producerId: 1n,
        producerEpoch: 0,
        committed: true,
        coordinatorEpoch: 0,
        epochBumped: false,
      }),
    ).toMatchObject({ error: "NOT_LEADER_OR_FOLLOWER", code: 6 });
    h.host.groupsById.delete(offsetsGroupId(3));
    expect(
      await h.coordinator.proposeMarker(3, {
        producerId: 1n,
        producerEpoch: 0,
        committed: true,
        coordinatorEpoch: 0,
      }),
    ).toMatchObject({ error: "NOT_LEADER_OR_FOLLOWER" });
    expect(() => h.coordinator.stateMachineFor(50)).toThrow(RangeError);
    expect(h.coordinator.stateMachineFor(4)).toBe(h.coordinator.stateMachineFor(4));
    expect(h.coordinator.stateMachineFor(4)).toBe(h.host.groupsById.get(offsetsGroupId(4))!.sm);
    // Partition 3's group was dropped: reopening it must start from a fresh machine.
    expect(h.coordinator.stateMachineFor(3)).not.toBe(h.coordinator.stateMachineFor(3));
  });
});

describe("group coordinator: the partition count comes from cluster metadata", () => {
  it("hashes a group id modulo the __consumer_offsets partitions the controller created (3 here, not 50)", async () => {
    // "g" is partition 3 of 50 but partition 1 of 3: a coordinator that hashed by 50 would look
    // for a partition that does not exist and answer NOT_COORDINATOR for ever.
    const h = await start({ metadata, offsetsPartitions: 3 });
    try {
      h.groupOf("g").leader = true;
      const r = await h.call("OffsetCommit", {
        groupId: "g",
        ...simple,
        partitions: [{ topic: "orders", partition: 0, offset: "8" }],
      });
      expect(r.partitions[0].errorCode).toBe("NONE");
      expect(h.groupOf("g")).toBe(h.host.groupsById.get(offsetsGroupId(1)));
      expect(h.groupOf("g").proposals).toBe(1);
      expect(() => h.coordinator.stateMachineFor(3)).toThrow(RangeError);
    } finally {
      h.client.close();
      h.coordinator.close();
      await new Promise<void>((resolve) => h.server.tryShutdown(() => resolve()));
    }
  });
});

describe("group coordinator: AddOffsetsToTxn verification", () => {
  it("refuses TxnOffsetCommit when the coordinator says the group was not added, and passes the right partition", async () => {
    const asked: unknown[] = [];
    const h = await start({
      metadata,
      verify: async (q) => {
        asked.push(q);
        return q.producerEpoch === 1
          ? { error: "NONE", message: "" }
          : { error: "INVALID_TXN_STATE", message: "not added" };
      },
    });
    try {
      const req = {
        transactionalId: "tx",
        groupId: "g",
        producerId: "9",
        ...simple,
        partitions: [{ topic: "orders", partition: 0, offset: "3" }],
      };
      await expect(h.call("TxnOffsetCommit", { ...req, producerEpoch: 0 })).rejects.toMatchObject({
        errorName: "INVALID_TXN_STATE",
      });
      expect(h.groupOf("g").proposals).toBe(0);
      expect(
        (await h.call("TxnOffsetCommit", { ...req, producerEpoch: 1 })).partitions[0].errorCode,
      ).toBe("NONE");
      expect(asked[0]).toEqual({
        transactionalId: "tx",
        producerId: 9n,
        producerEpoch: 0,
        topic: "__consumer_offsets",
        partition: partitionFor("g", 50),
      });
    } finally {
      h.client.close();
      h.coordinator.close();
      await new Promise<void>((resolve) => h.server.tryShutdown(() => resolve()));
    }
  });
});

describe("consumer group membership over gRPC", () => {
  let h: Harness;
  const clock = new ManualClock(1_000_000);
  beforeEach(async () => {
    h = await start({ metadata, clock, sessionTimeoutMs: 400 });
  });
  afterEach(async () => {
    h.client.close();
    h.coordinator.close();
    await new Promise<void>((resolve) => h.server.tryShutdown(() => resolve()));
  });
  const hb = (
    memberId: string,
    memberEpoch: number,
    owned: Array<{ topic: string; partitions: number[] }> = [],
  ) =>
    h.call("ConsumerGroupHeartbeat", {
      groupId: "cg",
      memberId,
      memberEpoch,
      rebalanceTimeoutMs: 10_000,
      subscribedTopicNames: ["orders"],
      topicPartitions: owned,
      clientId: "cli",
    });

  it("joins, answers steady heartbeats without a proposal, and fences commits of a member whose session expired", async () => {
    const a = await hb("member-a", 0);
    expect(a).toMatchObject({
      memberId: "member-a",
      memberEpoch: 1,
      heartbeatIntervalMs: 100,
      assignment: [{ topic: "orders", partitions: [0, 1, 2] }],
    });
    const proposals = h.groupOf("cg").proposals;
    expect(await hb("member-a", 1, a.assignment)).toMatchObject({ memberEpoch: 1 });
    expect(h.groupOf("cg").proposals).toBe(proposals);
    const commit = (memberId: string, generationId: number) =>
      h.call("OffsetCommit", {
        groupId: "cg",
        generationId,
        memberId,
        partitions: [{ topic: "orders", partition: 0, offset: "5", leaderEpoch: -1 }],
      });
    expect((await commit("member-a", 1)).partitions[0].errorCode).toBe("NONE");
    await expect(commit("", -1)).rejects.toMatchObject({ errorName: "UNKNOWN_MEMBER_ID" });
    const described = await h.call("ConsumerGroupDescribe", { groupId: "cg" });
    expect(described).toMatchObject({
      type: "consumer",
      state: "STABLE",
      groupEpoch: 1,
      members: [{ memberId: "member-a", clientId: "cli", clientHost: "127.0.0.1", memberEpoch: 1 }],
    });
    expect((await h.call("ListGroups", {})).groups).toContainEqual({
      groupId: "cg",
      type: "consumer",
      state: "STABLE",
      members: 1,
    });
    await expect(h.call("DeleteGroups", { groupId: "cg" })).rejects.toMatchObject({
      errorName: "NON_EMPTY_GROUP",
    });
    // Silence past the session timeout: the sweep (every 100 ms of the clock) fences the member.
    // At the timeout (400 ms) it is still there; the first sweep past it fences it.
    const members = async (): Promise<unknown[]> =>
      (await h.call("ConsumerGroupDescribe", { groupId: "cg" })).members;
    clock.advance(400);
    await turns();
    expect(await members()).toHaveLength(1);
    clock.advance(100);
    await turns();
    expect(await members()).toEqual([]);
    await expect(commit("member-a", 1)).rejects.toMatchObject({ errorName: "UNKNOWN_MEMBER_ID" });
    await expect(hb("member-a", 1)).rejects.toMatchObject({ errorName: "UNKNOWN_MEMBER_ID" });
    expect((await commit("", -1)).partitions[0].errorCode).toBe("NONE");
    await h.call("DeleteGroups", { groupId: "cg" });
    await expect(h.call("ConsumerGroupDescribe", { groupId: "cg" })).rejects.toMatchObject({
      errorName: "GROUP_ID_NOT_FOUND",
    });
  });
});

describe("a static member away (epoch -2) on the leader's session sweep", () => {
  // Two topics: the witness subscribes to the other one, so its leave does not move the static member's partitions.
  const twoTopics: ClusterMetadata = {
    ...metadata,
    topics: [
      ...metadata.topics,
      {
        ...metadata.topics[0]!,
        name: "audit",
        partitions: [{ topic: "audit", partition: 0, replicas: [1], leader: 1, leaderTerm: 1 }],
      },
    ],
  };
  let h: Harness;
  const clock = new ManualClock(1_000_000);
  beforeEach(async () => {
    h = await start({ metadata: twoTopics, clock, sessionTimeoutMs: 400 });
  });
  afterEach(async () => {
    h.client.close();
    h.coordinator.close();
    await new Promise<void>((resolve) => h.server.tryShutdown(() => resolve()));
  });
  const hb = (
    memberId: string,
    memberEpoch: number,
    topic: string,
    instanceId = "",
    owned: Array<{ topic: string; partitions: number[] }> = [],
  ) =>
    h.call("ConsumerGroupHeartbeat", {
      groupId: "cs",
      memberId,
      memberEpoch,
      instanceId,
      rebalanceTimeoutMs: 10_000,
      subscribedTopicNames: [topic],
      topicPartitions: owned,
      clientId: "cli",
    });
  const describeGroup = () => h.call("ConsumerGroupDescribe", { groupId: "cs" });

  it("keeps its session from the leave: it is not fenced before the session timeout and rejoins with its partitions and no rebalance", async () => {
    const s = await hb("static-1", 0, "orders", "instance-1");
    expect(s.assignment).toEqual([{ topic: "orders", partitions: [0, 1, 2] }]);
    // The witness joins after the static member (the sweep looks at the static member first).
    await hb("witness", 0, "audit");
    const steady = await hb("static-1", s.memberEpoch, "orders", "instance-1", s.assignment);
    expect(steady).toMatchObject({
      memberEpoch: 2,
      assignment: [{ topic: "orders", partitions: [0, 1, 2] }],
    });
    clock.advance(300);
    await hb("static-1", 2, "orders", "instance-1", s.assignment);
    await hb("static-1", -2, "orders", "instance-1");
    const memberIds = async (): Promise<string[]> =>
      (await describeGroup()).members.map((m: { memberId: string }) => m.memberId).sort();
    // 100 ms after the leave, the witness is at its session timeout (400 ms): not fenced yet.
    clock.advance(100);
    await turns();
    expect(await memberIds()).toEqual(["static-1", "witness"]);
    // 200 ms after the leave (500 ms after the witness's last heartbeat, 500 ms into the
    // leadership): this sweep fences the witness.
    clock.advance(100);
    await turns();
    expect(await memberIds()).toEqual(["static-1"]);
    // The same sweep looked at the static member: still there, its partitions waiting for it.
    const away = await describeGroup();
    expect(away.members).toMatchObject([
      { memberId: "static-1", instanceId: "instance-1", memberEpoch: -2 },
    ]);
    const epochBefore = away.groupEpoch;
    // The restarted instance (a new member id) takes its place: same partitions, no group epoch bump.
    const back = await hb("static-2", 0, "orders", "instance-1");
    expect(back).toMatchObject({
      memberId: "static-2",
      memberEpoch: epochBefore,
      assignment: [{ topic: "orders", partitions: [0, 1, 2] }],
    });
    expect(await describeGroup()).toMatchObject({
      groupEpoch: epochBefore,
      members: [{ memberId: "static-2", instanceId: "instance-1" }],
    });
    // Away past the session timeout, a static member is removed: kept at the timeout itself,
    // gone at the first sweep past it.
    await hb("static-2", -2, "orders", "instance-1");
    clock.advance(400);
    await turns();
    expect(await memberIds()).toEqual(["static-2"]);
    clock.advance(100);
    await turns();
    expect((await describeGroup()).members).toEqual([]);
  });
});

/** A ManualClock whose wall clock runs stepMs off its monotonic clock, as a host's clock after a step. */
class SteppingClock extends ManualClock {
  stepMs = 0;
  override nowMs(): number {
    return super.nowMs() + this.stepMs;
  }
}

describe("consumer group sessions under wall clock steps", () => {
  let h: Harness;
  const clock = new SteppingClock(1_000_000);
  beforeEach(async () => {
    clock.stepMs = 0;
    h = await start({ metadata, clock, sessionTimeoutMs: 400 });
  });
  afterEach(async () => {
    h.client.close();
    h.coordinator.close();
    await new Promise<void>((resolve) => h.server.tryShutdown(() => resolve()));
  });
  const hb = (memberId: string, memberEpoch: number) =>
    h.call("ConsumerGroupHeartbeat", {
      groupId: "cg",
      memberId,
      memberEpoch,
      rebalanceTimeoutMs: 10_000,
      subscribedTopicNames: ["orders"],
      topicPartitions: [],
      clientId: "cli",
    });
  const members = async (): Promise<unknown[]> =>
    (await h.call("ConsumerGroupDescribe", { groupId: "cg" })).members;

  it("a step forward fences no live member, a step back keeps no silent one: sessions run on the monotonic clock", async () => {
    expect(await hb("member-a", 0)).toMatchObject({ memberEpoch: 1 });
    clock.stepMs = 120_000; // the broker's wall clock jumps two minutes forward
    clock.advance(200);
    await turns();
    expect(await members()).toHaveLength(1);
    await hb("member-a", 1);
    clock.stepMs = -300_000; // ... then five minutes back; the member falls silent
    clock.advance(400);
    await turns();
    expect(await members()).toHaveLength(1);
    clock.advance(100);
    await turns();
    expect(await members()).toEqual([]);
  });
  it("classic groups too: a step forward expires no live member's session, a step back keeps no silent one", async () => {
    const join = h.coordinator.classic.join("classic-g", {
      memberId: "",
      instanceId: "",
      clientId: "cli",
      clientHost: "127.0.0.1",
      sessionTimeoutMs: 6_000,
      rebalanceTimeoutMs: 10_000,
      protocolType: "consumer",
      protocols: [{ name: "range", metadata: Buffer.alloc(0) }],
      requireKnownMemberId: false,
    });
    const joined = await drive(clock, join);
    expect(joined.error).toBe("NONE");
    const synced = await drive(
      clock,
      h.coordinator.classic.sync("classic-g", {
        memberId: joined.memberId,
        instanceId: "",
        generationId: joined.generationId,
        protocolType: "consumer",
        protocolName: "range",
        assignments: [{ memberId: joined.memberId, assignment: Buffer.from("a") }],
      }),
    );
    expect(synced.error).toBe("NONE");
    const memberCount = async (): Promise<number> =>
      (await h.coordinator.classic.describe("classic-g"))?.members.length ?? 0;
    expect(await memberCount()).toBe(1);
    clock.stepMs = 120_000;
    clock.advance(1_000);
    await turns();
    expect(await memberCount()).toBe(1);
    const beat = await h.coordinator.classic.heartbeat(
      "classic-g",
      joined.memberId,
      "",
      joined.generationId,
    );
    expect(beat.error).toBe("NONE");
    clock.stepMs = -300_000; // five minutes back; the member falls silent
    clock.advance(5_000);
    await turns();
    expect(await memberCount()).toBe(1);
    clock.advance(2_000);
    await turns();
    expect(await memberCount()).toBe(0);
  });
});
