// The transaction coordinator's Kafka protocol listener (services/kafka/): Kafka clients'
// transactional producers reach this process where FindCoordinator pointed them, and the
// listener hands their requests, in-process, to the same TransactionCoordinator handlers the
// gRPC server runs, except EndTxn: its own (createKafkaListenerEndTxn) may keep the epoch
// (transactions V1), which the gRPC one refuses. It serves ApiVersions, Metadata (the brokers' and coordinators' Kafka
// endpoints), FindCoordinator, InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn and EndTxn,
// and the topic admin APIs (to the controller, as brokers do).
// Its ApiVersions table is the brokers' (kafkajs applies its seed broker's answer to every
// node), so the brokers' APIs get their own error answers here: NOT_LEADER_OR_FOLLOWER for each
// partition of a Produce, Fetch or ListOffsets, NOT_COORDINATOR for the group APIs.
import type { SchedulingClock } from "../../libs/runtime/scheduler.js";
import type { Logger } from "pino";
import type { ServiceConfig } from "../../libs/common/config.js";
import type { ClusterMetadata } from "../../libs/metadata/types.js";
import type { CoordinatorHandlers } from "./coordinator-handlers.js";
import { KafkaServer } from "../kafka/kafka-server.js";
import { nodeKafkaEndpoint } from "../kafka/kafka-node-ids.js";
import type { AclAdmin, TransactionCoordinatorCalls } from "../kafka/kafka-deps.js";
import type { TopicAdmin } from "../kafka/topic-admin-api.js";
import type { QuotaAdmin } from "../kafka/quota-apis.js";
import type { Registry } from "prom-client";
import type { TlsContext } from "../../libs/server/tls/credentials.js";

export async function startCoordinatorKafkaListener(options: {
  readonly config: ServiceConfig;
  readonly logger: Logger;
  readonly metadata: () => ClusterMetadata | undefined;
  /** createCoordinatorHandlers' record: the gRPC service's handlers. */
  readonly handlers: CoordinatorHandlers;
  /** createKafkaListenerEndTxn's: EndTxn that honours keep_epoch, which the gRPC one refuses. */
  readonly endTxn: TransactionCoordinatorCalls["endTxn"];
  /** CreateTopics / DeleteTopics / DescribeConfigs: to the controller, as on brokers. */
  readonly topicAdmin: TopicAdmin;
  readonly aclAdmin: AclAdmin;
  readonly quotaAdmin: QuotaAdmin;
  /** TLS on the Kafka listener when the process runs with TLS. */
  readonly tls?: TlsContext | undefined;
  /** The process's metrics registry (the listener's throttling and connection counters). */
  readonly metrics?: Registry | undefined;
  /** The listener's timers (the process runtime's). */
  readonly clock: SchedulingClock;
}): Promise<KafkaServer | undefined> {
  const { config, logger, metadata, handlers, endTxn, topicAdmin, aclAdmin, quotaAdmin } = options;
  if (config.kafkaListen === undefined) return undefined;
  // Kafka clients send these to partition leaders, which are brokers: never here but by mistake.
  const notHere = {
    error: "NOT_LEADER_OR_FOLLOWER",
    message: "a transaction coordinator leads no broker partitions",
  } as const;
  const initProducerId = handlers.InitProducerId;
  const server = new KafkaServer(
    {
      nodeId: config.nodeId,
      clusterId: config.clusterId,
      featureLevels: config.kafkaFeatureLevels,
      autoCreateTopics: config.kafkaAutoCreateTopics,
      role: "coordinator",
      logger: logger.child({ component: "kafka" }),
      metadata,
      kafkaEndpoint: (id) => nodeKafkaEndpoint(metadata(), "broker", id),
      topicAdmin,
      aclAdmin,
      quotaAdmin,
      produce: async (c) =>
        c.partitions.map((p) => ({
          topic: p.topic,
          partition: p.partition,
          ...notHere,
          baseOffset: -1n,
          appendTimeMs: -1,
          logStartOffset: -1n,
        })),
      fetch: async (q) =>
        q.partitions.map((p) => ({
          topic: p.topic,
          partition: p.partition,
          fetchOffset: p.fetchOffset,
          ...notHere,
        })),
      listOffsets: async (q) =>
        q.partitions.map((p) => ({
          topic: p.topic,
          partition: p.partition,
          ...notHere,
          offset: -1n,
          timestampMs: -1,
        })),
      initProducerId: async () => {
        const r = await initProducerId({
          transactionalId: "",
          transactionTimeoutMs: 0,
          producerId: "-1",
          producerEpoch: -1,
        });
        return { producerId: BigInt(r.producerId), producerEpoch: Number(r.producerEpoch) };
      },
      transactions: {
        findCoordinator: handlers.FindCoordinator,
        initProducerId,
        addPartitionsToTxn: handlers.AddPartitionsToTxn,
        addOffsetsToTxn: handlers.AddOffsetsToTxn,
        endTxn,
      },
      transactionAdmin: {
        listTransactions: handlers.ListTransactions,
        describeTransactions: handlers.DescribeTransactions,
      },
    },
    {
      tls: options.tls,
      sasl: config.kafkaSasl,
      saslFailureDelayMs: config.kafkaSaslFailureDelayMs,
      authorizer: config.kafkaAuthorizer,
      quotaWindow: config.quotaWindow,
      connections: config.kafkaConnections,
      metrics: options.metrics,
      clock: options.clock,
    },
  );
  const bound = await server.listen(config.kafkaListen.host, config.kafkaListen.port);
  logger.info({ kafkaListen: `${bound.host}:${bound.port}` }, "kafka protocol listener started");
  return server;
}
