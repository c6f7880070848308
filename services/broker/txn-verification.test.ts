// The KIP-890 verification cache (GrpcTxnVerifier, verification-cache.ts) ends with its
// transaction: a COMMIT/ABORT marker applied to a partition makes the broker ask the
// coordinator again. Real single-node raft host, the real ReplicaManager and group coordinator
// wiring, and a fake TransactionCoordinator over gRPC that answers AddPartitionsToTxn(verify_only).
import * as grpc from "@grpc/grpc-js";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../libs/common/clock.js";
import { isTernError } from "../../libs/common/errors.js";
import { partitionFor } from "../../libs/common/hash.js";
import { until } from "../../libs/common/poll.js";
import { silentLogger } from "../../libs/common/logger.js";
import { loadTernProto, serviceDefinition } from "../../libs/common/proto.js";
import { CONSUMER_OFFSETS_TOPIC, type ClusterMetadata } from "../../libs/metadata/types.js";
import { openRaftHost, type RaftHost } from "../../libs/raft-host/host.js";
import {
  createGroupCoordinator,
  offsetsGroupId,
  type GroupCoordinator,
} from "./group/group-coordinator.js";
import { createListOffsetsHandler } from "./list-offsets-handler.js";
import { createProduceHandler } from "./produce-handler.js";
import { ReplicaManager } from "./replica-manager.js";
import { RecordCache } from "../../libs/storage/record-cache.js";
import { createWriteTxnMarkersHandler } from "./txn-markers-handler.js";
import { GrpcTxnVerifier } from "./txn-verifier.js";
import { acceptsPartial } from "../../libs/server/testing/accepts-partial.js";

const logger = silentLogger();
const OFFSETS_PARTITIONS = 50;
const GROUP = "copier";
const GROUP_PARTITION = partitionFor(GROUP, OFFSETS_PARTITIONS);

/** What the fake coordinator says: the partitions ("topic/partition") of the ongoing transaction of each producer id. */
const ongoing = new Map<string, Set<string>>();
const asked: string[] = [];

let host: RaftHost;
let dir: string;
let server: grpc.Server;
let verifier: GrpcTxnVerifier;
let replicas: ReplicaManager;
let groups: GroupCoordinator;
const clock = new ManualClock(Date.now());

function metadata(): ClusterMetadata {
  const offsets = Array.from({ length: OFFSETS_PARTITIONS }, (_, p) => ({
    topic: CONSUMER_OFFSETS_TOPIC,
    partition: p,
    replicas: [9],
    leader: 9,
    leaderTerm: 1,
  }));
  offsets[GROUP_PARTITION] = {
    topic: CONSUMER_OFFSETS_TOPIC,
    partition: GROUP_PARTITION,
    replicas: [0],
    leader: 0,
    leaderTerm: 1,
  };
  return {
    version: "1",
    controllerLeader: 0,
    nodes: [{ nodeId: 0, role: "broker", address: "127.0.0.1:1", alive: true, incarnation: "1" }],
    topics: [
      // Producer state expires after 1 s of replicated time: the late duplicate finds none.
      {
        name: "v",
        internal: false,
        role: "broker",
        config: { "producer.id.expiration.ms": "1000" },
        partitions: [{ topic: "v", partition: 0, replicas: [0], leader: 0, leaderTerm: 1 }],
      },
      {
        name: CONSUMER_OFFSETS_TOPIC,
        internal: true,
        role: "broker",
        config: {},
        partitions: offsets,
      },
    ],
  };
}

async function startFakeCoordinator(): Promise<number> {
  const proto = loadTernProto();
  const definition = serviceDefinition(proto, "tern.v1.TransactionCoordinator")!;
  server = new grpc.Server();
  let port = 0;
  server.addService(definition, {
    FindCoordinator: (_call: any, cb: grpc.sendUnaryData<unknown>) =>
      cb(null, {
        errorCode: "NONE",
        coordinator: { nodeId: 0, address: `127.0.0.1:${port}` },
        partition: 0,
      }),
    AddPartitionsToTxn: (call: any, cb: grpc.sendUnaryData<unknown>) => {
      const r = call.request;
      const added = ongoing.get(String(r.producerId)) ?? new Set<string>();
      asked.push(
        `${r.producerId}:${r.producerEpoch}:${r.partitions.map((p: any) => `${p.topic}/${p.partition}`).join(",")}`,
      );
      cb(null, {
        results: r.partitions.map((p: any) => ({
          topic: p.topic,
          partition: p.partition,
          errorCode: added.has(`${p.topic}/${p.partition}`) ? "NONE" : "INVALID_TXN_STATE",
        })),
      });
    },
  });
  port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (e, p) =>
      e ? reject(e) : resolve(p),
    ),
  );
  return port;
}

beforeAll(async () => {
  const port = await startFakeCoordinator();
  verifier = new GrpcTxnVerifier({
    proto: loadTernProto().grpc,
    coordinators: () => [`127.0.0.1:${port}`],
    logger,
  });
  dir = mkdtempSync(join(tmpdir(), "tern-txn-verification-"));
  host = await openRaftHost({
    nodeId: 0,
    dataDir: dir,
    logger,
    tickMs: 10,
    electionTicks: 10,
    heartbeatTicks: 2,
    metrics: false,
  });
  groups = createGroupCoordinator({
    host,
    logger,
    nodeId: 0,
    clock,
    metadata,
    expireIntervalMs: 0,
    verifyTxnPartition: async (q) => {
      const v = await verifier.verify(
        q.transactionalId,
        q.producerId,
        q.producerEpoch,
        q.topic,
        q.partition,
      );
      return { error: v.error, message: v.message };
    },
    // As services/broker/compose.ts wires them.
    onTransactionEnd: (partition, producerId) =>
      verifier.forget(CONSUMER_OFFSETS_TOPIC, partition, producerId),
  });
  replicas = new ReplicaManager({
    host,
    nodeId: 0,
    logger,
    clock,
    housekeepingIntervalMs: 60_000,
    tickEntryIntervalMs: 3_600_000,
    offsetsStateMachine: (p) => groups.stateMachineFor(p),
    reportLeaders: async () => undefined,
    onTransactionEnd: (topic, partition, producerId) =>
      verifier.forget(topic, partition, producerId),
    storage: {
      dir: join(dir, "partitions"),
      cache: new RecordCache(8 * 1024 * 1024),
      indexIntervalBytes: 4096,
      readAheadBytes: 1024 * 1024,
    },
  });
  await replicas.update(metadata());
  await until(
    "leadership of v/0 and the group's offsets partition",
    20_000,
    () =>
      (replicas.local("v", 0)?.group.isLeader() === true &&
        host.group(offsetsGroupId(GROUP_PARTITION))?.isLeader() === true) ||
      undefined,
    { intervalMs: 20 },
  );
}, 30_000);

afterAll(async () => {
  replicas?.close();
  groups?.close();
  verifier?.close();
  server?.forceShutdown();
  await host?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("add-partition verifications end with their transaction", () => {
  it("asks the coordinator again for a late duplicate first batch after the marker and the producer's expiry", async () => {
    const produce = acceptsPartial(
      createProduceHandler({ directory: replicas, verifier, clock, logger }),
    );
    const markers = acceptsPartial(
      createWriteTxnMarkersHandler({
        directory: replicas,
        clock,
        logger,
        offsetsMarkerWriter: groups.offsetsMarkerWriter,
      }),
    );
    const listOffsets = acceptsPartial(createListOffsetsHandler({ directory: replicas }));
    const first = {
      producerId: "21",
      producerEpoch: 0,
      baseSequence: 0,
      isTransactional: true,
      records: [{ value: Buffer.from("t"), timestampMs: String(clock.nowMs()) }],
    };
    ongoing.set("21", new Set(["v/0"]));
    const ok = (await produce({
      transactionalId: "tx",
      partitions: [{ topic: "v", partition: 0, batch: first }],
    })) as any;
    expect(ok.partitions[0].errorCode).toBe("NONE");
    expect(asked).toEqual(["21:0:v/0"]);
    const m = (await markers({
      markers: [
        {
          producerId: "21",
          producerEpoch: 0,
          controlType: "COMMIT",
          coordinatorEpoch: 1,
          transactionalId: "tx",
          partitions: [{ topic: "v", partition: 0 }],
        },
      ],
    })) as any;
    expect(m.results[0].partitions[0].errorCode).toBe("NONE");
    ongoing.delete("21");
    // Two hours later another producer's append moves the replicated clock: producer 21 expires.
    clock.advance(2 * 3600 * 1000);
    const other = (await produce({
      partitions: [
        {
          topic: "v",
          partition: 0,
          batch: { producerId: "-1", records: [{ value: Buffer.from("x") }] },
        },
      ],
    })) as any;
    expect(other.partitions[0].errorCode).toBe("NONE");
    expect(replicas.local("v", 0)!.stateMachine.producer(21n)).toBeUndefined();

    // The very late duplicate of the first batch: the transaction is over, so the coordinator refuses.
    const late = (await produce({
      transactionalId: "tx",
      partitions: [{ topic: "v", partition: 0, batch: first }],
    })) as any;
    expect(late.partitions[0].errorCode).toBe("INVALID_TXN_STATE");
    // Asked at the remembered address, then again once found afresh (a remembered address may
    // be a deposed coordinator's): the same coordinator refuses both times.
    expect(asked).toEqual(["21:0:v/0", "21:0:v/0", "21:0:v/0"]);
    const [hw, lso] = await Promise.all(
      ["READ_UNCOMMITTED", "READ_COMMITTED"].map(
        async (isolationLevel) =>
          (
            (await listOffsets({
              isolationLevel,
              partitions: [{ topic: "v", partition: 0, timestampMs: "-1" }],
            })) as any
          ).partitions[0].offset,
      ),
    );
    expect(lso).toBe(hw); // no hanging transaction pins the LSO
  });

  it("asks the coordinator again for a late TxnOffsetCommit after the offsets partition applied the marker", async () => {
    const commit = {
      transactionalId: "tx2",
      groupId: GROUP,
      producerId: "31",
      producerEpoch: 0,
      generationId: -1,
      memberId: "",
      partitions: [{ topic: "v", partition: 0, offset: "5", leaderEpoch: -1 }],
    };
    const where = `${CONSUMER_OFFSETS_TOPIC}/${GROUP_PARTITION}`;
    ongoing.set("31", new Set([where]));
    const before = asked.length;
    const ok = await groups.txnOffsetCommit(commit as any);
    expect(ok.partitions[0]!.errorCode).toBe("NONE");
    const marker = {
      producerId: 31n,
      producerEpoch: 0,
      controlType: "COMMIT" as const,
      coordinatorEpoch: 1,
      transactionalId: "tx2",
    };
    expect(await groups.offsetsMarkerWriter(GROUP_PARTITION, marker)).toEqual({
      error: "NONE",
      message: "",
    });
    ongoing.delete("31");

    const late = await groups.txnOffsetCommit(commit as any).then(
      () => "NONE",
      (e: unknown) => (isTernError(e) ? e.errorName : String(e)),
    );
    expect(late).toBe("INVALID_TXN_STATE");
    // The late one is asked twice: at the remembered address, then once found afresh.
    expect(asked.slice(before)).toEqual([`31:0:${where}`, `31:0:${where}`, `31:0:${where}`]);
    // Nothing pending: a require_stable fetch is answered (not UNSTABLE_OFFSET_COMMIT for ever).
    const fetched = await groups.offsetFetch({ groupId: GROUP, requireStable: true } as any);
    expect(fetched.partitions.map((p: any) => [p.offset, p.errorCode])).toEqual([["5", "NONE"]]);
  });
});
