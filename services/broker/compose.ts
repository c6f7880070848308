// The broker process's parts, over its node runtime (libs/server/node-runtime.ts: data
// directory, the one Raft host for every partition replica it holds, controller client, cluster
// view, membership, readiness): the replica manager driven by the metadata watch, the partition
// service under the Broker service and the Kafka listener, and the group coordinator's
// GroupCoordinator service. Ready once registered, metadata has arrived and the replicas caught up.
import { metadataSecurityView } from "../../libs/server/auth/security-view.js";
import { serviceDefinition, loadTernProto } from "../../libs/common/proto.js";
import type { ClusterMetadata } from "../../libs/metadata/types.js";
import { resolveLimits, type RaftHostLimits } from "../../libs/raft-host/limits.js";
import { NodeRuntime } from "../../libs/server/node-runtime.js";
import type { ServiceContext, ServiceParts } from "../../libs/server/service.js";
import { wrapUnaryService } from "../../libs/server/unary-handler.js";
import { createGroupCoordinator, groupMetrics } from "../group/index.js";
import { createFetchHandler } from "./fetch-handler.js";
import { withFetchCodec } from "./fetch-codec.js";
import { createListOffsetsHandler } from "./list-offsets-handler.js";
import { createProduceHandler } from "./produce-handler.js";
import {
  createAbortPartitionTransactionHandler,
  createDescribeProducersHandler,
  createListHangingHandler,
} from "./producers-handler.js";
import { createDescribeLogCleaningHandler } from "./log-cleaning-handler.js";
import { createDeleteRecordsHandler } from "./delete-records-handler.js";
import { createReadReplicaRecordsHandler } from "./replica-records-handler.js";
import { ReplicaManager } from "./replica-manager.js";
import { assertBrokerLimits } from "./broker-limits.js";
import { TOPIC_CONFIG_DEFAULTS } from "./topic-config-defaults.js";
import { brokerMetrics, diskMetrics, partitionMetrics, storageMetrics } from "./broker-metrics.js";
import { StorageStats } from "../../libs/storage/storage-stats.js";
import { createWriteTxnMarkersHandler } from "./txn-markers-handler.js";
import { PartitionService } from "./partition-service/partition-service.js";
import { GrpcTxnVerifier, withoutVerification, type TxnVerifier } from "./txn-verifier.js";
import { CONSUMER_OFFSETS_TOPIC } from "../../libs/metadata/types.js";
import { partitionGroupId } from "../../libs/metadata/lookup.js";
import { RecordCache } from "../../libs/storage/record-cache.js";
import { DiskSpaceGuard } from "./disk-space-guard.js";
import { PartitionCleaner } from "./partition-cleaner.js";
import { cleanerMetrics } from "./cleaner-metrics.js";
import { CatchUpGate, readyCatchUpMaxMs } from "./catch-up-gate.js";
import { PeerBrokers } from "./peer-brokers.js";
import { join } from "node:path";
import { KafkaServer } from "../kafka/kafka-server.js";
import { coordinatorProducerIds } from "../kafka/coordinator-producer-ids.js";
import { parseHostPort } from "../../libs/common/config.js";
import type { BrokerHandlers } from "../../libs/common/proto-types/index.js";

/** A sparse index entry per 16 KiB of records: about 2.5 MB of index memory per GB retained. */
const PARTITION_INDEX_INTERVAL_BYTES = 16 * 1024;
/** Bytes one read-ahead loads for a lagging follower (at most a quarter of the record cache). */
const PARTITION_READ_AHEAD_BYTES = 8 * 1024 * 1024;

const BROKER_SERVICE = "tern.v1.Broker";

function coordinatorAddresses(m: ClusterMetadata | undefined): string[] {
  if (m === undefined) return [];
  return m.nodes.filter((n) => n.role === "coordinator" && n.alive).map((n) => n.address);
}

/**
 * TERN_BROKER_SNAPSHOT_ENTRIES / TERN_BROKER_COMPACTION_MARGIN_ENTRIES /
 * TERN_BROKER_JOURNALED_HEAD_BYTES: tests and chaos runs force frequent snapshots with them.
 */
type SnapshotLimits = Partial<
  Pick<
    RaftHostLimits,
    "snapshotEntriesInterval" | "compactionMarginEntries" | "journaledHeadBytesMax"
  >
>;

function snapshotLimitsFromEnv(env: NodeJS.ProcessEnv): SnapshotLimits {
  const read = (name: string, max: number): number | undefined => {
    const raw = env[name];
    if (raw === undefined) return undefined;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1 || n > max)
      throw new Error(`${name} must be an integer in 1..${max}, got "${raw}"`);
    return n;
  };
  const out: { -readonly [K in keyof SnapshotLimits]: SnapshotLimits[K] } = {};
  const interval = read("TERN_BROKER_SNAPSHOT_ENTRIES", 10_000_000);
  const margin = read("TERN_BROKER_COMPACTION_MARGIN_ENTRIES", 10_000_000);
  const headBytes = read("TERN_BROKER_JOURNALED_HEAD_BYTES", 64 * 1024 ** 3);
  if (interval !== undefined) out.snapshotEntriesInterval = interval;
  if (margin !== undefined) out.compactionMarginEntries = margin;
  if (headBytes !== undefined) out.journaledHeadBytesMax = headBytes;
  return out;
}

export async function compose(ctx: ServiceContext): Promise<ServiceParts> {
  const { config, logger } = ctx;
  const { clock, random, failpoints } = ctx.runtime;
  const raftLimits = snapshotLimitsFromEnv(process.env);
  // Refuse to start (LimitError, reported as a startup error) before anything is opened.
  assertBrokerLimits(resolveLimits(raftLimits));
  const node = await NodeRuntime.open(ctx, { role: "broker", raftLimits });
  const { host, controller: client, view } = node;
  const metadata = view.current;
  // The gRPC authorizer reads ACLs and users from the same view as the Kafka listener.
  ctx.setSecurityView?.(metadataSecurityView(metadata));
  const grpcVerifier = new GrpcTxnVerifier({
    transport: ctx.runtime.transport,
    coordinators: () => coordinatorAddresses(metadata()),
    logger,
    scheduler: clock,
  });
  // Kafka's transaction.partition.verification.enable: on unless TERN_TXN_PARTITION_VERIFICATION=false.
  const verificationEnabled = process.env.TERN_TXN_PARTITION_VERIFICATION !== "false";
  if (!verificationEnabled)
    logger.warn(
      "transaction partition verification is disabled (TERN_TXN_PARTITION_VERIFICATION=false)",
    );
  const verifier: TxnVerifier = verificationEnabled
    ? grpcVerifier
    : withoutVerification(grpcVerifier);
  const peers = new PeerBrokers(ctx.runtime.transport);
  // The gauges read the group coordinator when scraped, which is after it exists.
  const groupGauges =
    ctx.metrics &&
    groupMetrics(ctx.metrics, {
      ledMachines: () => groups.ledMachines(),
      metadata,
      logger,
      clock,
      listEndOffsets: (address, tps, timeoutMs) => peers.listEndOffsets(address, tps, timeoutMs),
    });
  const groups = createGroupCoordinator({
    onRebalance: () => groupGauges?.rebalances.inc(),
    host,
    logger,
    metadata,
    nodeId: config.nodeId,
    clock,
    groupSessionTimeoutMs: config.groupSessionTimeoutMs,
    groupHeartbeatIntervalMs: config.groupHeartbeatIntervalMs,
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
    // A verification holds only while its transaction is open: markers end it.
    onTransactionEnd: (partition, producerId) =>
      verifier.forget(CONSUMER_OFFSETS_TOPIC, partition, producerId),
    failpoints,
  });
  const recordCache = new RecordCache(config.recordCacheBytes);
  const storageStats = new StorageStats();
  if (ctx.metrics) storageMetrics(ctx.metrics, storageStats, recordCache);
  const replicas = new ReplicaManager({
    host,
    nodeId: config.nodeId,
    logger,
    clock,
    offsetsStateMachine: (p) => groups.stateMachineFor(p),
    reportLeaders: (changes) => client.reportLeaders(config.nodeId, changes),
    verifications: verifier,
    storage: {
      dir: join(config.dataDir, "partitions"),
      cache: recordCache,
      stats: storageStats,
      indexIntervalBytes: PARTITION_INDEX_INTERVAL_BYTES,
      readAheadBytes: PARTITION_READ_AHEAD_BYTES,
      failpoints,
    },
    segmentRepair: {
      read: (address, request) => peers.readReplicaRecords(address, request),
      clock,
      random,
    },
  });

  const disk = new DiskSpaceGuard(
    config.dataDir,
    config.diskReserveBytes,
    logger.child({ component: "disk-space" }),
    clock,
  );
  disk.start();
  const cleaner = new PartitionCleaner({
    partitions: () => replicas.locals(),
    logger: logger.child({ component: "log-cleaner" }),
    clock,
    mapBytes: config.logCleanerDedupeBufferBytes,
    ioBytesPerSecond: config.logCleanerIoBytesPerSecond,
    backoffMs: config.logCleanerBackoffMs,
    indexIntervalBytes: PARTITION_INDEX_INTERVAL_BYTES,
  });
  cleaner.start();
  if (ctx.metrics) cleanerMetrics(ctx.metrics, cleaner);
  if (ctx.metrics) {
    diskMetrics(ctx.metrics, disk);
    partitionMetrics(ctx.metrics, () => replicas.locals());
  }
  const gate = new CatchUpGate({
    assigned: () => assignedGroups(metadata(), config.nodeId),
    isOpen: (groupId) => host.group(groupId) !== undefined,
    partitions: () => replicas.locals(),
    groups: () => host.groups(),
    address: (nodeId) => {
      const e = replicas.endpoint(nodeId);
      return e.nodeId < 0 ? undefined : e.address;
    },
    listLatest: (address, partitions) => peers.listLatest(address, partitions),
    waitMaxMs: readyCatchUpMaxMs(),
    logger: logger.child({ component: "catch-up-gate" }),
    clock,
  });
  // At startup, ready also waits for the replicas to catch up (catch-up-gate.ts).
  node.join({ onMetadata: (m) => replicas.update(m), gate });

  const metrics = brokerMetrics(ctx.metrics);
  // One partition service under both front doors: the gRPC handlers and the Kafka listener.
  const partitions = new PartitionService({
    metrics,
    directory: replicas,
    verifier,
    clock,
    logger,
    disk,
    offsetsMarkerWriter: groups.offsetsMarkerWriter,
    failpoints,
  });
  const proto = loadTernProto();
  const generated = serviceDefinition(proto, BROKER_SERVICE);
  if (generated === undefined)
    throw new Error(`${BROKER_SERVICE} missing from the loaded proto files`);
  const definition = withFetchCodec(generated, proto.packageDefinition);
  const describeProducers = createDescribeProducersHandler({ directory: replicas });
  const abortPartitionTransaction = createAbortPartitionTransactionHandler(partitions);
  const implementation = wrapUnaryService<BrokerHandlers>(
    definition,
    {
      Produce: createProduceHandler(partitions),
      Fetch: createFetchHandler(partitions),
      ListOffsets: createListOffsetsHandler(partitions),
      WriteTxnMarkers: createWriteTxnMarkersHandler(partitions),
      DescribeProducers: describeProducers,
      ListHangingTransactions: createListHangingHandler({ directory: replicas, clock }),
      AbortPartitionTransaction: abortPartitionTransaction,
      DeleteRecords: createDeleteRecordsHandler(partitions),
      ReadReplicaRecords: createReadReplicaRecordsHandler({ directory: replicas }),
      DescribeLogCleaning: createDescribeLogCleaningHandler({ directory: replicas }),
    },
    { logger, metrics: ctx.metrics },
  );

  // Kafka clients reach the same partition service through the Kafka protocol listener (services/kafka/).
  const producerIds =
    config.kafkaListen === undefined
      ? undefined
      : coordinatorProducerIds(() => coordinatorAddresses(metadata()), ctx.runtime.transport);
  const kafka =
    config.kafkaListen === undefined
      ? undefined
      : new KafkaServer(
          {
            nodeId: config.nodeId,
            clusterId: config.clusterId,
            featureLevels: config.kafkaFeatureLevels,
            autoCreateTopics: config.kafkaAutoCreateTopics,
            logger: logger.child({ component: "kafka" }),
            groups,
            metadata,
            kafkaEndpoint: (id) => {
              const a = metadata()?.nodes.find(
                (n) => n.role === "broker" && n.nodeId === id,
              )?.kafkaAddress;
              return a === undefined ? undefined : parseHostPort(a, "kafka address");
            },
            produce: partitions.produce,
            fetch: partitions.fetch,
            listOffsets: partitions.listOffsets,
            deleteRecords: partitions.deleteRecords,
            initProducerId: () => producerIds!.next(),
            txnOffsetCommit: (r) => groups.txnOffsetCommit(r as never),
            transactionAdmin: {
              describeProducers: (r) => describeProducers(r),
              abortPartitionTransaction: (r) => abortPartitionTransaction(r),
            },
            topicAdmin: {
              createTopics: (topics, options) => client.createTopics(topics, options),
              deleteTopics: (names) => client.deleteTopics(names),
              createPartitions: (changes, options) => client.createPartitions(changes, options),
              configDefaults: () => TOPIC_CONFIG_DEFAULTS,
            },
            aclAdmin: {
              createAcls: (b, principal) => client.createAcls(b, principal),
              describeAcls: (f, principal) => client.describeAcls(f, principal),
              deleteAcls: (f, principal) => client.deleteAcls(f, principal),
            },
            quotaAdmin: {
              alterClientQuotas: (a, validateOnly) => client.alterClientQuotas(a, validateOnly),
              describeClientQuotas: (c, strict) => client.describeClientQuotas(c, strict),
            },
          },
          {
            tls: ctx.tls,
            sasl: config.kafkaSasl,
            saslFailureDelayMs: config.kafkaSaslFailureDelayMs,
            authorizer: config.kafkaAuthorizer,
            quotaWindow: config.quotaWindow,
            connections: config.kafkaConnections,
            metrics: ctx.metrics,
            clock,
          },
        );
  if (kafka !== undefined && config.kafkaListen !== undefined) {
    const bound = await kafka.listen(config.kafkaListen.host, config.kafkaListen.port);
    logger.info({ kafkaListen: `${bound.host}:${bound.port}` }, "kafka protocol listener started");
  }
  return {
    services: node.services([{ definition, implementation }, groups.service]),
    drain: () => node.drain(),
    close: async () => {
      await kafka?.close();
      gate.close();
      disk.stop();
      await cleaner.close();
      node.leave();
      replicas.close();
      groups.close();
      await node.close();
    },
  };
}

/** The broker-role groups metadata places on this node. */
function* assignedGroups(m: ClusterMetadata | undefined, nodeId: number): Iterable<string> {
  for (const t of m?.topics ?? []) {
    if (t.role !== "broker") continue;
    for (const p of t.partitions)
      if (p.replicas.includes(nodeId)) yield partitionGroupId(t.name, p.partition);
  }
}
