// The coordinator process's parts, over its node runtime (libs/server/node-runtime.ts: data
// directory, Raft host, controller client, cluster view, membership, readiness): the partition
// manager of its replicas of the 50 __transaction_state partitions, driven by the metadata
// watch; the producer-id blocks, the marker channel to the brokers and the
// TransactionCoordinator service. Ready once registered and metadata has arrived.
import { metadataSecurityView } from "../../libs/server/auth/security-view.js";
import { loadTernProto, serviceDefinition } from "../../libs/common/proto.js";
import { findPartition } from "../../libs/metadata/lookup.js";
import { NodeRuntime } from "../../libs/server/node-runtime.js";
import type { ServiceContext, ServiceParts } from "../../libs/server/service.js";
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
import type { TransactionCoordinatorHandlers } from "../../libs/common/proto-types/index.js";

const SERVICE = "tern.v1.TransactionCoordinator";

export async function compose(ctx: ServiceContext): Promise<ServiceParts> {
  const { config, logger } = ctx;
  const { clock, random, failpoints } = ctx.runtime;
  const armed = failpoints?.list() ?? [];
  if (armed.length > 0)
    logger.warn(
      { failpoints: armed },
      "failpoints armed (TERN_FAILPOINTS): this process will SIGKILL itself",
    );
  const node = await NodeRuntime.open(ctx, { role: "coordinator" });
  const { host, controller: client, view } = node;
  // The gRPC authorizer reads ACLs and users from the same view as the Kafka listener.
  ctx.setSecurityView?.(metadataSecurityView(view.current));

  const markerClient = new MarkerClient(ctx.runtime.transport, view, () =>
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
    failpoints,
  });
  const producerIds = new ProducerIdManager({
    nodeId: config.nodeId,
    allocate: (id) => client.allocateProducerIds(id),
    logger,
    clock,
  });
  // The gauges read the coordinator's state when scraped, which is after it exists.
  const observer = registerCoordinatorMetrics(
    ctx.metrics,
    () => coordinator.stateManager,
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
    metadata: view.current,
    failpoints,
  });
  const partitions = new PartitionManager({
    host,
    coordinator,
    nodeId: config.nodeId,
    logger,
    reportLeaders: (changes) => client.reportLeaders(config.nodeId, changes),
  });
  node.join({ onMetadata: (m) => partitions.update(m) });

  const definition = serviceDefinition(loadTernProto(), SERVICE);
  if (definition === undefined) throw new Error(`${SERVICE} missing from the loaded proto files`);
  const handlers = createCoordinatorHandlers({
    coordinator,
    metadata: view.current,
    self: { nodeId: config.nodeId, address: node.address },
  });
  const implementation = wrapUnaryService<TransactionCoordinatorHandlers>(definition, handlers, {
    logger,
    metrics: ctx.metrics,
  });
  // Kafka clients reach the same handlers through the Kafka protocol listener.
  const kafka = await startCoordinatorKafkaListener({
    config,
    logger,
    metadata: view.current,
    handlers,
    endTxn: createKafkaListenerEndTxn(coordinator),
    tls: ctx.tls,
    metrics: ctx.metrics,
    clock,
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
  });
  return {
    services: node.services([{ definition, implementation }]),
    drain: () => node.drain(),
    close: async () => {
      await kafka?.close();
      node.leave();
      partitions.close();
      await coordinator.close();
      markers.close();
      await node.close();
    },
  };
}
