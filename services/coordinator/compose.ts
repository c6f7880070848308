// The coordinator process's parts: one raft host for its replicas of the 50
// __transaction_state partitions, the partition manager driven by the controller's metadata
// watch, node membership, the producer-id blocks, the marker channel to the brokers and the
// TransactionCoordinator service. Ready once registered and metadata has arrived.
import { metadataSecurityView } from "../../libs/server/auth/security-view.js";
import { armedFailpoints } from "../../libs/common/failpoints.js";
import { loadTernProto, serviceDefinition } from "../../libs/common/proto.js";
import { claimDataDir } from "../../libs/metadata/blank-disk.js";
import { ControllerClient } from "../../libs/metadata/controller-client.js";
import { ClusterView } from "../../libs/metadata/cluster-view.js";
import { findPartition } from "../../libs/metadata/lookup.js";
import { internalPartitionOf } from "../../libs/metadata/internal-partitions.js";
import { startNodeMembership } from "../../libs/metadata/node-membership.js";
import type { ClusterMetadata } from "../../libs/metadata/types.js";
import { openRaftHost, ticksFromMs } from "../../libs/raft-host/host.js";
import type {
  GrpcServiceBinding,
  ServiceContext,
  ServiceParts,
} from "../../libs/server/service.js";
import { wrapUnaryService } from "../../libs/server/unary-handler.js";
import { createCoordinatorHandlers, createKafkaListenerEndTxn } from "./coordinator-handlers.js";
import { startCoordinatorKafkaListener } from "./kafka-listener.js";
import { TOPIC_CONFIG_DEFAULTS } from "../broker/topic-config-defaults.js";
import { PartitionManager } from "./partition-manager.js";
import { ProducerIdManager } from "./producer-id-manager.js";
import { TransactionCoordinator } from "./transaction-coordinator.js";
import { registerCoordinatorMetrics } from "./coordinator-metrics.js";
import { TransactionMarkerChannelManager } from "./transaction-marker-channel-manager.js";
import { MarkerClient } from "./marker-client.js";
import { processCredentials } from "../../libs/server/tls/credentials.js";
import type { TransactionCoordinatorHandlers } from "../../libs/common/proto-types/index.js";

const SERVICE = "tern.v1.TransactionCoordinator";
const MEMBERSHIP_HEARTBEAT_MS_MIN = 500;

export async function compose(ctx: ServiceContext): Promise<ServiceParts> {
  const { config, logger } = ctx;
  const { clock, random } = ctx.runtime;
  const armed = armedFailpoints();
  if (armed.length > 0)
    logger.warn(
      { failpoints: armed },
      "failpoints armed (TERN_FAILPOINTS): this process will SIGKILL itself",
    );
  // A blank data directory must not rejoin transaction-log groups it is listed in (lost disk).
  await claimDataDir(ctx, "coordinator");
  const host = await openRaftHost({
    nodeId: config.nodeId,
    dataDir: config.dataDir,
    logger: logger.child({ component: "raft-host" }),
    ...ticksFromMs(config),
    metrics: ctx.metrics,
  });
  const raftService = host.grpcService();
  ctx.addService?.(raftService);
  const client = new ControllerClient({
    channelCredentials: processCredentials(),
    controllers: config.controllers,
    logger: logger.child({ component: "controller-client" }),
    watchingNode: { nodeId: config.nodeId, role: "coordinator" },
  });
  const view = new ClusterView();
  const metadata = (): ClusterMetadata | undefined => view.current();
  // The gRPC authorizer reads ACLs and users from the same view as the Kafka listener.
  ctx.setSecurityView?.(metadataSecurityView(metadata));

  const markerClient = new MarkerClient(ctx.proto ?? loadTernProto().grpc, view, () =>
    client.metadata({ linearizable: true }),
  );
  const markers = new TransactionMarkerChannelManager({
    transport: markerClient.transport,
    leaderOf: markerClient.leaderOf,
    confirmGone: markerClient.confirmGone,
    logger: logger.child({ component: "txn-markers" }),
    random,
    scheduler: clock,
    metrics: ctx.metrics,
  });
  const producerIds = new ProducerIdManager({
    nodeId: config.nodeId,
    allocate: (id) => client.allocateProducerIds(id),
    logger,
    clock,
  });
  let coordinatorRef: TransactionCoordinator | undefined;
  const observer = registerCoordinatorMetrics(
    ctx.metrics,
    () => coordinatorRef?.stateManager,
    () => clock.nowMs(),
  );
  const coordinator = new TransactionCoordinator({
    observer,
    logger: logger.child({ component: "txn-coordinator" }),
    clock,
    leaderChanges: host,
    producerIds,
    markers,
    partitionExists: (tp) => {
      const m = view.current();
      return m === undefined ? undefined : findPartition(m, tp.topic, tp.partition) !== undefined;
    },
    internalPartitionOf: (topic, key) => internalPartitionOf(view.current(), topic, key),
  });
  coordinatorRef = coordinator;
  const partitions = new PartitionManager({
    host,
    coordinator,
    nodeId: config.nodeId,
    logger,
    reportLeaders: (changes) => client.reportLeaders(config.nodeId, changes),
  });

  let registered = false;
  const refreshReady = (): void => {
    const m = view.current();
    ctx.setReady(
      registered &&
        m !== undefined &&
        m.nodes.some((n) => n.role === "coordinator" && n.nodeId === config.nodeId),
    );
  };
  const unwatch = client.watchMetadata((m) => {
    view.update(m);
    void partitions.update(m).then(refreshReady);
  });
  const address = `${config.advertise.host}:${config.advertise.port}`;
  const membership = startNodeMembership({
    client,
    nodeId: config.nodeId,
    role: "coordinator",
    address,
    rack: config.rack,
    logger,
    dataDir: config.dataDir,
    kafkaAddress: config.kafkaAdvertise
      ? `${config.kafkaAdvertise.host}:${config.kafkaAdvertise.port}`
      : undefined,
    heartbeatIntervalMs: Math.max(MEMBERSHIP_HEARTBEAT_MS_MIN, config.heartbeatIntervalMs * 4),
    onRegistered: (r) => {
      registered = r;
      refreshReady();
    },
  });

  const definition = serviceDefinition(loadTernProto(), SERVICE);
  if (definition === undefined) throw new Error(`${SERVICE} missing from the loaded proto files`);
  const handlers = createCoordinatorHandlers({
    coordinator,
    metadata,
    self: { nodeId: config.nodeId, address },
  });
  const implementation = wrapUnaryService<TransactionCoordinatorHandlers>(definition, handlers, {
    logger,
    metrics: ctx.metrics,
  });
  // Kafka clients reach the same handlers through the Kafka protocol listener.
  const kafka = await startCoordinatorKafkaListener({
    config,
    logger,
    metadata,
    handlers,
    endTxn: createKafkaListenerEndTxn(coordinator),
    tls: ctx.tls,
    metrics: ctx.metrics,
    clock,
    topicAdmin: {
      createTopics: (topics, options) => client.createTopics(topics, options),
      deleteTopics: (names) => client.deleteTopics(names),
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
  });
  const services: GrpcServiceBinding[] = [{ definition, implementation }];
  if (!ctx.addService) services.unshift(raftService);
  return {
    services,
    drain: async () => {
      ctx.setReady(false);
      await host.transferAllLeaderships(Math.min(5_000, Math.floor(config.shutdownTimeoutMs / 2)));
    },
    close: async () => {
      await kafka?.close();
      membership.stop();
      unwatch();
      partitions.close();
      await coordinator.close();
      markers.close();
      markerClient.close();
      client.close();
      await host.close();
    },
  };
}
