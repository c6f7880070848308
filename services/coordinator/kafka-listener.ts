// The transaction coordinator's Kafka protocol listener (services/kafka/): Kafka clients'
// transactional producers reach this process where FindCoordinator pointed them, and the
// listener hands their requests, in-process, to the same TransactionCoordinator handlers the
// gRPC server runs. It serves ApiVersions, Metadata (the brokers' and coordinators' Kafka
// endpoints), FindCoordinator, InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn and EndTxn,
// and the topic admin APIs (to the controller, as brokers do).
// Its ApiVersions table is the brokers' (kafkajs applies its seed broker's answer to every
// node), so the brokers' APIs get their own error answers here: NOT_LEADER_OR_FOLLOWER for each
// partition of a Produce, Fetch or ListOffsets, NOT_COORDINATOR for the group APIs.
import type { Logger } from "pino";
import type { ServiceConfig } from "../../libs/common/config.js";
import type { ClusterMetadata } from "../../libs/metadata/types.js";
import type { AsyncUnaryHandler } from "../../libs/server/unary-handler.js";
import { KafkaServer } from "../kafka/kafka-server.js";
import { nodeKafkaEndpoint } from "../kafka/kafka-node-ids.js";
import type { AclAdmin } from "../kafka/kafka-deps.js";
import type { TopicAdmin } from "../kafka/topic-admin-api.js";
import type { TlsContext } from "../../libs/server/tls/credentials.js";

export async function startCoordinatorKafkaListener(options: {
  readonly config: ServiceConfig;
  readonly logger: Logger;
  readonly metadata: () => ClusterMetadata | undefined;
  /** createCoordinatorHandlers' record: the gRPC service's handlers. */
  readonly handlers: Record<string, AsyncUnaryHandler>;
  /** CreateTopics / DeleteTopics / DescribeConfigs: to the controller, as on brokers. */
  readonly topicAdmin: TopicAdmin;
  readonly aclAdmin: AclAdmin;
  /** TLS on the Kafka listener when the process runs with TLS. */
  readonly tls?: TlsContext | undefined;
}): Promise<KafkaServer | undefined> {
  const { config, logger, metadata, handlers, topicAdmin, aclAdmin } = options;
  if (config.kafkaListen === undefined) return undefined;
  // The handlers read only the request (no gRPC call context): an in-process call passes none.
  const call = (method: string) => {
    const h = handlers[method];
    if (h === undefined) throw new Error(`TransactionCoordinator handler ${method} is missing`);
    return (request: unknown): Promise<any> => h(request, undefined as never);
  };
  // Kafka clients send these to partition leaders, which are brokers: never here but by mistake.
  const notHere = async (request: unknown): Promise<{ partitions: unknown[] }> => ({
    partitions: (((request as { partitions?: unknown[] }).partitions ?? []) as Array<{ topic?: string; partition?: number }>).map((p) => ({
      topic: p.topic, partition: p.partition, errorCode: "NOT_LEADER_OR_FOLLOWER", errorMessage: "a transaction coordinator leads no broker partitions", baseOffset: "-1", logStartOffset: "-1",
    })),
  });
  const initProducerId = call("InitProducerId");
  const server = new KafkaServer({
    nodeId: config.nodeId,
    clusterId: config.clusterId,
    role: "coordinator",
    logger: logger.child({ component: "kafka" }),
    metadata,
    kafkaEndpoint: (id) => nodeKafkaEndpoint(metadata(), "broker", id),
    topicAdmin,
    aclAdmin,
    produce: notHere,
    fetch: notHere,
    listOffsets: notHere,
    initProducerId: async () => {
      const r = await initProducerId({ transactionalId: "", transactionTimeoutMs: 0, producerId: "-1", producerEpoch: -1 });
      return { producerId: BigInt(r.producerId), producerEpoch: Number(r.producerEpoch) };
    },
    transactions: {
      findCoordinator: call("FindCoordinator"),
      initProducerId,
      addPartitionsToTxn: call("AddPartitionsToTxn"),
      addOffsetsToTxn: call("AddOffsetsToTxn"),
      endTxn: call("EndTxn"),
    },
    transactionAdmin: { listTransactions: call("ListTransactions"), describeTransactions: call("DescribeTransactions") },
  }, { tls: options.tls, sasl: config.kafkaSasl, authorizer: config.kafkaAuthorizer });
  const bound = await server.listen(config.kafkaListen.host, config.kafkaListen.port);
  logger.info({ kafkaListen: `${bound.host}:${bound.port}` }, "kafka protocol listener started");
  return server;
}
