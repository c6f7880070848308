// Consumer offsets on a real 3-replica Raft group (libs/raft-host over gRPC on 127.0.0.1, level
// on disk), with the real group coordinator and state machines on every node, in one process.
// Transactional offsets: pending until the marker, visible exactly when a COMMIT marker lands,
// never after an ABORT, and all of it survives a leader failover and a restart from disk.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { systemClock } from "../../libs/runtime/system-clock.js";
import * as grpc from "@grpc/grpc-js";
import { afterEach, describe, expect, it } from "vitest";
import { fromGrpcError } from "../../libs/common/grpc-errors.js";
import { partitionFor } from "../../libs/common/hash.js";
import { silentLogger } from "../../libs/common/logger.js";
import { until } from "../../libs/common/poll.js";
import { loadTernProto } from "../../libs/common/proto.js";
import type { ClusterMetadata } from "../../libs/metadata/types.js";
import { openRaftHost, type RaftHost } from "../../libs/raft-host/host.js";
import {
  createGroupCoordinator,
  offsetsGroupId,
  type GroupCoordinator,
} from "../../services/group/index.js";

interface Node {
  id: number;
  dir: string;
  port: number;
  host: RaftHost;
  server: grpc.Server;
  coordinator: GroupCoordinator;
  client: any;
}

const GROUP = "orders-app";
const PARTITION = partitionFor(GROUP, 50);
const RAFT_GROUP = offsetsGroupId(PARTITION);
const simple = { generationId: -1, memberId: "" };
const cleanups: Array<() => Promise<void> | void> = [];

afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** The shared bounded poll here: every 20 ms; a probe that throws fails the test at once. */
const POLL = { intervalMs: 20, fatal: () => true };

/** A 50-partition __consumer_offsets (group ids hash by the count in metadata) and the 3-partition topic "in". */
const OFFSETS_VIEW: ClusterMetadata = {
  version: "1",
  controllerLeader: -1,
  nodes: [],
  topics: [
    ["__consumer_offsets", 50],
    ["in", 3],
  ].map(([name, n]) => ({
    name: String(name),
    internal: name === "__consumer_offsets",
    role: "broker" as const,
    config: {},
    partitions: Array.from({ length: Number(n) }, (_, p) => ({
      topic: String(name),
      partition: p,
      replicas: [1, 2, 3],
      leader: -1,
      leaderTerm: 0,
    })),
  })),
};

async function startNode(id: number, dir: string, port: number): Promise<Node> {
  const host = await openRaftHost({
    nodeId: id,
    dataDir: dir,
    logger: silentLogger(),
    tickMs: 10,
    electionTicks: 15,
    heartbeatTicks: 3,
    metrics: false,
  });
  const coordinator = createGroupCoordinator({
    host,
    logger: silentLogger(),
    nodeId: id,
    metadata: () => OFFSETS_VIEW,
    clock: systemClock,
    expireIntervalMs: 0,
    requestTimeoutMs: 5_000,
  });
  const server = new grpc.Server();
  const raft = host.grpcService();
  server.addService(raft.definition, raft.implementation);
  server.addService(coordinator.service.definition, coordinator.service.implementation);
  const bound = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (e, p) =>
      e ? reject(e) : resolve(p),
    ),
  );
  const client = new (loadTernProto().grpc.tern.v1.GroupCoordinator)(
    `127.0.0.1:${bound}`,
    grpc.credentials.createInsecure(),
  );
  return { id, dir, port: bound, host, server, coordinator, client };
}

async function stopNode(n: Node): Promise<void> {
  n.client.close();
  n.coordinator.close();
  n.server.forceShutdown();
  await n.host.close();
}

async function openGroups(nodes: Node[]): Promise<void> {
  for (const n of nodes) {
    for (const m of nodes) if (m.id !== n.id) n.host.setPeerAddress(m.id, `127.0.0.1:${m.port}`);
    await n.host.openGroup({
      groupId: RAFT_GROUP,
      initialVoters: [1, 2, 3],
      stateMachine: n.coordinator.stateMachineFor(PARTITION),
    });
  }
}

async function cluster(): Promise<Node[]> {
  const nodes: Node[] = [];
  for (const id of [1, 2, 3]) {
    const dir = mkdtempSync(join(tmpdir(), `group-offsets-${id}-`));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    nodes.push(await startNode(id, dir, 0));
  }
  cleanups.push(async () => {
    for (const n of nodes) await stopNode(n).catch(() => {});
  });
  await openGroups(nodes);
  return nodes;
}

function call(n: Node, method: string, request: unknown): Promise<any> {
  return new Promise((resolve, reject) =>
    n.client[method](request, { deadline: Date.now() + 10_000 }, (e: unknown, r: unknown) =>
      e ? reject(fromGrpcError(e)) : resolve(r),
    ),
  );
}

async function leader(nodes: Node[]): Promise<Node> {
  return until(
    "a leader of the offsets partition",
    15_000,
    () => nodes.find((n) => n.host.group(RAFT_GROUP)?.isLeader()),
    POLL,
  );
}

async function fetchOne(
  n: Node,
  topic: string,
  partition: number,
  requireStable: boolean,
): Promise<{ offset: string; errorCode: string }> {
  const r = await call(n, "OffsetFetch", {
    groupId: GROUP,
    partitions: [{ topic, partition }],
    requireStable,
  });
  return r.partitions[0];
}

describe("consumer offsets on a 3-replica Raft group", () => {
  it("serves only on the leader; commits replicate to every replica", async () => {
    const nodes = await cluster();
    const lead = await leader(nodes);
    const follower = nodes.find((n) => n !== lead)!;
    await expect(
      call(follower, "OffsetCommit", {
        groupId: GROUP,
        ...simple,
        partitions: [{ topic: "in", partition: 0, offset: "1" }],
      }),
    ).rejects.toMatchObject({ errorName: "NOT_COORDINATOR" });
    const r = await call(lead, "OffsetCommit", {
      groupId: GROUP,
      ...simple,
      partitions: [{ topic: "in", partition: 0, offset: "42", leaderEpoch: -1 }],
    });
    expect(r.partitions[0].errorCode).toBe("NONE");
    expect(await fetchOne(lead, "in", 0, true)).toMatchObject({ offset: "42", errorCode: "NONE" });
    for (const n of nodes) {
      await until(
        `replica ${n.id} applies the commit`,
        15_000,
        () =>
          n.coordinator
            .stateMachineFor(PARTITION)
            .fetchOffsets(GROUP, [{ topic: "in", partition: 0 }], false)[0]!.offset === 42n
            ? true
            : undefined,
        POLL,
      );
    }
  });

  it("keeps a transactional commit pending across a leader failover, then shows it exactly when the COMMIT marker lands", async () => {
    const nodes = await cluster();
    let lead = await leader(nodes);
    await call(lead, "OffsetCommit", {
      groupId: GROUP,
      ...simple,
      partitions: [{ topic: "in", partition: 0, offset: "10", leaderEpoch: -1 }],
    });
    const txn = await call(lead, "TxnOffsetCommit", {
      transactionalId: "copier",
      groupId: GROUP,
      producerId: "5000",
      producerEpoch: 0,
      ...simple,
      partitions: [{ topic: "in", partition: 0, offset: "20", leaderEpoch: -1 }],
    });
    expect(txn.partitions[0].errorCode).toBe("NONE");
    expect(await fetchOne(lead, "in", 0, true)).toMatchObject({
      errorCode: "UNSTABLE_OFFSET_COMMIT",
    });
    expect(await fetchOne(lead, "in", 0, false)).toMatchObject({ offset: "10", errorCode: "NONE" });

    // The leader dies between the transactional commit and the marker.
    const old = lead;
    await stopNode(old);
    const rest = nodes.filter((n) => n !== old);
    lead = await leader(rest);
    expect(
      await until(
        "the new leader answers",
        15_000,
        async () => fetchOne(lead, "in", 0, true).catch(() => undefined),
        POLL,
      ),
    ).toMatchObject({ errorCode: "UNSTABLE_OFFSET_COMMIT" });
    expect(await fetchOne(lead, "in", 0, false)).toMatchObject({ offset: "10" });

    // The coordinator's COMMIT marker (new coordinator epoch 2, bumped producer epoch 1).
    const marker = {
      epochBumped: false,
      producerId: 5000n,
      producerEpoch: 1,
      controlType: "COMMIT" as const,
      coordinatorEpoch: 2,
      transactionalId: "copier",
    };
    expect(await lead.coordinator.offsetsMarkerWriter(PARTITION, marker)).toEqual({
      error: "NONE",
      message: "",
    });
    expect(await fetchOne(lead, "in", 0, true)).toMatchObject({ offset: "20", errorCode: "NONE" });
    // A retried marker is harmless; a zombie coordinator's marker is fenced.
    expect(await lead.coordinator.offsetsMarkerWriter(PARTITION, marker)).toEqual({
      error: "NONE",
      message: "",
    });
    expect(
      (await lead.coordinator.offsetsMarkerWriter(PARTITION, { ...marker, coordinatorEpoch: 1 }))
        .error,
    ).toBe("TRANSACTION_COORDINATOR_FENCED");
    // The zombie producer epoch is fenced.
    await expect(
      call(lead, "TxnOffsetCommit", {
        transactionalId: "copier",
        groupId: GROUP,
        producerId: "5000",
        producerEpoch: 0,
        ...simple,
        partitions: [{ topic: "in", partition: 0, offset: "99" }],
      }),
    ).rejects.toMatchObject({ errorName: "PRODUCER_FENCED" });

    // The old leader restarts from its disk and catches up to the same state.
    const restarted = await startNode(old.id, old.dir, 0);
    cleanups.push(() => stopNode(restarted).catch(() => {}));
    for (const n of rest) n.host.setPeerAddress(old.id, `127.0.0.1:${restarted.port}`);
    for (const n of rest) restarted.host.setPeerAddress(n.id, `127.0.0.1:${n.port}`);
    await restarted.host.openGroup({
      groupId: RAFT_GROUP,
      initialVoters: [1, 2, 3],
      stateMachine: restarted.coordinator.stateMachineFor(PARTITION),
    });
    const sm = restarted.coordinator.stateMachineFor(PARTITION);
    await until(
      "the restarted replica catches up",
      15_000,
      () => {
        const [o] = sm.fetchOffsets(GROUP, [{ topic: "in", partition: 0 }], true);
        return o!.offset === 20n && o!.error === "NONE" ? true : undefined;
      },
      POLL,
    );
    expect(sm.producerEpochs(5000n)).toEqual({ producerEpoch: 1, coordinatorEpoch: 2 });
  });

  it("never shows offsets of an aborted transaction", async () => {
    const nodes = await cluster();
    const lead = await leader(nodes);
    await call(lead, "OffsetCommit", {
      groupId: GROUP,
      ...simple,
      partitions: [{ topic: "in", partition: 1, offset: "7", leaderEpoch: -1 }],
    });
    await call(lead, "TxnOffsetCommit", {
      transactionalId: "copier",
      groupId: GROUP,
      producerId: "6000",
      producerEpoch: 3,
      ...simple,
      partitions: [
        { topic: "in", partition: 1, offset: "70", leaderEpoch: -1 },
        { topic: "in", partition: 2, offset: "80", leaderEpoch: -1 },
      ],
    });
    const seen: string[] = [];
    for (let i = 0; i < 5; i++) seen.push((await fetchOne(lead, "in", 1, false)).offset);
    expect(
      await lead.coordinator.offsetsMarkerWriter(PARTITION, {
        producerId: 6000n,
        producerEpoch: 4,
        controlType: "ABORT",
        coordinatorEpoch: 1,
        epochBumped: false,
        transactionalId: "copier",
      }),
    ).toEqual({ error: "NONE", message: "" });
    for (let i = 0; i < 5; i++) seen.push((await fetchOne(lead, "in", 1, true)).offset);
    expect(new Set(seen)).toEqual(new Set(["7"]));
    expect(await fetchOne(lead, "in", 2, true)).toMatchObject({ offset: "-1", errorCode: "NONE" });
    for (const n of nodes) {
      await until(
        `replica ${n.id} applies the abort`,
        15_000,
        () =>
          n.coordinator.stateMachineFor(PARTITION).pendingTransactions().length === 0
            ? true
            : undefined,
        POLL,
      );
      expect(
        n.coordinator
          .stateMachineFor(PARTITION)
          .fetchOffsets(GROUP, [{ topic: "in", partition: 1 }], true)[0],
      ).toMatchObject({ offset: 7n, error: "NONE" });
    }
  });
});
