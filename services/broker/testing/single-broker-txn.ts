// A one-node broker for transaction tests: a real raft host, the real ReplicaManager, group
// coordinator, produce/marker/list-offsets handlers and GrpcTxnVerifier, wired as
// services/broker/compose.ts wires them, and a scripted TransactionCoordinator over gRPC that
// answers AddPartitionsToTxn(verify_only) from `ongoing` (and can be held, to let a marker
// overtake its answer).
import * as grpc from "@grpc/grpc-js";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ManualClock } from "../../../libs/runtime/testing/manual-clock.js";
import { systemClock } from "../../../libs/runtime/system-clock.js";
import { partitionFor } from "../../../libs/common/hash.js";
import { silentLogger } from "../../../libs/common/logger.js";
import { until } from "../../../libs/common/poll.js";
import { loadTernProto, serviceDefinition } from "../../../libs/common/proto.js";
import { CONSUMER_OFFSETS_TOPIC, type ClusterMetadata } from "../../../libs/metadata/types.js";
import { openRaftHost, type RaftHost } from "../../../libs/raft-host/host.js";
import { acceptsPartial } from "../../../libs/server/testing/accepts-partial.js";
import { RecordCache } from "../../../libs/storage/record-cache.js";
import {
  createGroupCoordinator,
  offsetsGroupId,
  type GroupCoordinator,
} from "../../group/index.js";
import { createListOffsetsHandler } from "../list-offsets-handler.js";
import { createProduceHandler } from "../produce-handler.js";
import { PartitionService } from "../partition-service/partition-service.js";
import { ReplicaManager } from "../replica-manager.js";
import { createWriteTxnMarkersHandler } from "../txn-markers-handler.js";
import { GrpcTxnVerifier } from "../txn-verifier.js";
import { GrpcServiceTransport } from "../../../libs/grpc/grpc-service-transport.js";
import type { Failpoints } from "../../../libs/common/failpoints.js";

const OFFSETS_PARTITIONS = 50;

export interface SingleBrokerTxn {
  readonly clock: ManualClock;
  readonly replicas: ReplicaManager;
  readonly groups: GroupCoordinator;
  readonly verifier: GrpcTxnVerifier;
  /** The group whose offsets partition this node leads, and that partition. */
  readonly group: string;
  readonly groupPartition: number;
  /** producer id (decimal) → "topic/partition"s of its ongoing transaction, as the coordinator answers. */
  readonly ongoing: Map<string, Set<string>>;
  /** "pid:epoch:topic/partition,…" of every verification the coordinator was asked. */
  readonly asked: string[];
  readonly produce: (request: unknown) => Promise<any>;
  readonly markers: (request: unknown) => Promise<any>;
  readonly listOffsets: (request: unknown) => Promise<any>;
  /** READ_UNCOMMITTED and READ_COMMITTED end offsets of a partition (the HW and the LSO). */
  endOffsets(topic: string, partition: number): Promise<{ hw: string; lso: string }>;
  /**
   * Holds the coordinator's verification answers until the returned release() is called; the
   * promise `asked` settles when a held question has arrived.
   */
  holdVerifications(): { asked: Promise<void>; release: () => void };
  close(): Promise<void>;
}

/** topics: name → config of a one-partition topic led by this node; failpoints: none armed by default. */
export async function startSingleBrokerTxn(options: {
  group: string;
  topics: Record<string, Record<string, string>>;
  failpoints?: Failpoints;
}): Promise<SingleBrokerTxn> {
  const logger = silentLogger();
  const clock = new ManualClock(Date.now());
  const groupPartition = partitionFor(options.group, OFFSETS_PARTITIONS);
  const ongoing = new Map<string, Set<string>>();
  const asked: string[] = [];
  let hold: { arrived: () => void; released: Promise<void> } | undefined;

  const metadata = (): ClusterMetadata => ({
    version: "1",
    controllerLeader: 0,
    nodes: [{ nodeId: 0, role: "broker", address: "127.0.0.1:1", alive: true, incarnation: "1" }],
    topics: [
      ...Object.entries(options.topics).map(([name, config]) => ({
        name,
        internal: false,
        role: "broker" as const,
        config,
        partitions: [{ topic: name, partition: 0, replicas: [0], leader: 0, leaderTerm: 1 }],
      })),
      {
        name: CONSUMER_OFFSETS_TOPIC,
        internal: true,
        role: "broker" as const,
        config: {},
        // Only the group's partition is here; the others live on an absent node.
        partitions: Array.from({ length: OFFSETS_PARTITIONS }, (_, p) => ({
          topic: CONSUMER_OFFSETS_TOPIC,
          partition: p,
          replicas: [p === groupPartition ? 0 : 9],
          leader: p === groupPartition ? 0 : 9,
          leaderTerm: 1,
        })),
      },
    ],
  });

  const proto = loadTernProto();
  const server = new grpc.Server();
  let port = 0;
  server.addService(serviceDefinition(proto, "tern.v1.TransactionCoordinator")!, {
    FindCoordinator: (_call: unknown, cb: grpc.sendUnaryData<unknown>) =>
      cb(null, {
        errorCode: "NONE",
        coordinator: { nodeId: 0, address: `127.0.0.1:${port}` },
        partition: 0,
      }),
    AddPartitionsToTxn: (call: any, cb: grpc.sendUnaryData<unknown>) => {
      const r = call.request;
      asked.push(
        `${r.producerId}:${r.producerEpoch}:${r.partitions.map((p: any) => `${p.topic}/${p.partition}`).join(",")}`,
      );
      // The answer reflects the coordinator's state when the question arrived.
      const added = new Set(ongoing.get(String(r.producerId)) ?? []);
      const answer = () =>
        cb(null, {
          results: r.partitions.map((p: any) => ({
            topic: p.topic,
            partition: p.partition,
            errorCode: added.has(`${p.topic}/${p.partition}`) ? "NONE" : "INVALID_TXN_STATE",
          })),
        });
      if (hold === undefined) return answer();
      hold.arrived();
      void hold.released.then(answer);
    },
  });
  port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (e, p) =>
      e ? reject(e) : resolve(p),
    ),
  );
  const transport = new GrpcServiceTransport();
  const verifier = new GrpcTxnVerifier({
    transport,
    coordinators: () => [`127.0.0.1:${port}`],
    logger,
    scheduler: systemClock,
  });
  const dir = mkdtempSync(join(tmpdir(), "tern-single-broker-txn-"));
  let host: RaftHost | undefined;
  let groups: GroupCoordinator | undefined;
  let replicas: ReplicaManager | undefined;
  const close = async (): Promise<void> => {
    replicas?.close();
    groups?.close();
    transport.close();
    server.forceShutdown();
    await host?.close();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const raftHost = await openRaftHost({
      nodeId: 0,
      dataDir: dir,
      logger,
      tickMs: 10,
      electionTicks: 10,
      heartbeatTicks: 2,
      metrics: false,
    });
    host = raftHost;
    const groupCoordinator = createGroupCoordinator({
      host: raftHost,
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
          q.mode,
        );
        return { error: v.error, message: v.message };
      },
      onTransactionEnd: (partition, producerId) =>
        verifier.forget(CONSUMER_OFFSETS_TOPIC, partition, producerId),
    });
    groups = groupCoordinator;
    const replicaManager = new ReplicaManager({
      host: raftHost,
      nodeId: 0,
      logger,
      clock,
      housekeepingIntervalMs: 60_000,
      tickEntryIntervalMs: 3_600_000,
      offsetsStateMachine: (p) => groupCoordinator.stateMachineFor(p),
      reportLeaders: async () => undefined,
      verifications: verifier,
      storage: {
        dir: join(dir, "partitions"),
        cache: new RecordCache(8 * 1024 * 1024),
        indexIntervalBytes: 4096,
        readAheadBytes: 1024 * 1024,
      },
    });
    replicas = replicaManager;
    await replicaManager.update(metadata());
    await until(
      "leadership of every topic and of the group's offsets partition",
      20_000,
      () =>
        (Object.keys(options.topics).every(
          (t) => replicaManager.local(t, 0)?.group.isLeader() === true,
        ) &&
          raftHost.group(offsetsGroupId(groupPartition))?.isLeader() === true) ||
        undefined,
      { intervalMs: 20 },
    );
    const service = new PartitionService({
      directory: replicaManager,
      verifier,
      clock,
      logger,
      offsetsMarkerWriter: groupCoordinator.offsetsMarkerWriter,
      failpoints: options.failpoints,
    });
    const listOffsets = acceptsPartial(createListOffsetsHandler(service));
    return {
      clock,
      replicas: replicaManager,
      groups: groupCoordinator,
      verifier,
      group: options.group,
      groupPartition,
      ongoing,
      asked,
      produce: acceptsPartial(createProduceHandler(service)),
      markers: acceptsPartial(createWriteTxnMarkersHandler(service)),
      listOffsets,
      async endOffsets(topic, partition) {
        const [hw, lso] = await Promise.all(
          ["READ_UNCOMMITTED", "READ_COMMITTED"].map(
            async (isolationLevel) =>
              (
                (await listOffsets({
                  isolationLevel,
                  partitions: [{ topic, partition, timestampMs: "-1" }],
                })) as any
              ).partitions[0].offset as string,
          ),
        );
        return { hw: hw!, lso: lso! };
      },
      holdVerifications() {
        let arrived!: () => void;
        let release!: () => void;
        const askedPromise = new Promise<void>((r) => (arrived = r));
        const released = new Promise<void>((r) => (release = r));
        hold = { arrived, released };
        return {
          asked: askedPromise,
          release: () => {
            hold = undefined;
            release();
          },
        };
      },
      close,
    };
  } catch (e) {
    await close();
    throw e;
  }
}
