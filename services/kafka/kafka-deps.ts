// What the Kafka listener needs from its process: the same Broker service handlers the gRPC
// server runs (called in-process, so nothing is implemented twice), the cluster metadata, and
// every broker's Kafka endpoint. On a transaction coordinator: the TransactionCoordinator
// service's handlers instead (the Broker ones are never called there: not in its table).
import type { Logger } from "pino";
import type { ClusterMetadata } from "../../libs/metadata/types.js";
import type { GroupCoordinator } from "../broker/group/group-coordinator.js";
import type { TopicAdmin } from "./topic-admin-api.js";
import type { TransactionAdminCalls } from "./transaction-admin-apis.js";
import type { RequestAccess } from "./kafka-access.js";
import type { AclBinding, AclFilter } from "../../libs/common/acl.js";
import type { TernError } from "../../libs/common/errors.js";

export interface KafkaEndpoint {
  readonly host: string;
  readonly port: number;
}

export interface KafkaDeps {
  readonly nodeId: number;
  readonly clusterId: string;
  readonly logger: Logger;
  /** The broker's group coordinator (classic groups and offsets); absent where none runs. */
  readonly groups?: GroupCoordinator;
  metadata(): ClusterMetadata | undefined;
  /** The Kafka listener of a broker (from its registration); undefined when it has none. */
  kafkaEndpoint(nodeId: number): KafkaEndpoint | undefined;
  /** The Broker service's handlers, in the proto-loader shape of proto/tern/v1/broker.proto. */
  produce(request: unknown): Promise<any>;
  fetch(request: unknown): Promise<any>;
  listOffsets(request: unknown): Promise<any>;
  /** Brokers: the Broker service's DeleteRecords (absent on a coordinator: NOT_LEADER_OR_FOLLOWER). */
  deleteRecords?(request: unknown): Promise<any>;
  /** CreateTopics / DeleteTopics / DescribeConfigs go to the controller. */
  readonly topicAdmin: TopicAdmin;
  /** A fresh producer id for an idempotent producer, from a transaction coordinator. */
  initProducerId(): Promise<{ producerId: bigint; producerEpoch: number }>;
  /** Which process this listener is in (the controller id of its Metadata answers follows); default broker. */
  readonly role?: "broker" | "coordinator";
  /** Coordinators: the tern.v1.TransactionCoordinator handlers (coordinator-handlers.ts). */
  readonly transactions?: TransactionCoordinatorCalls;
  /** ListTransactions / DescribeTransactions (coordinators), DescribeProducers (brokers). */
  readonly transactionAdmin?: TransactionAdminCalls;
  /** Brokers: the tern.v1.GroupCoordinator's TxnOffsetCommit (proto/tern/v1/group.proto). */
  txnOffsetCommit?(request: unknown): Promise<any>;
  /** CreateAcls / DescribeAcls / DeleteAcls go to the controller. */
  readonly aclAdmin?: AclAdmin;
  /**
   * What this request's principal may do (kafka-access.ts); set per request when the listener
   * runs an authorizer, undefined (everything allowed) otherwise.
   */
  readonly access?: RequestAccess;
}

export interface AclAdmin {
  createAcls(bindings: readonly AclBinding[]): Promise<Array<TernError | undefined>>;
  describeAcls(filter: AclFilter): Promise<AclBinding[]>;
  deleteAcls(filters: readonly AclFilter[]): Promise<Array<{ error?: TernError; deleted: AclBinding[] }>>;
}

/** In the proto-loader shape of proto/tern/v1/coordinator.proto; failures are thrown TernErrors. */
export interface TransactionCoordinatorCalls {
  findCoordinator(request: unknown): Promise<any>;
  initProducerId(request: unknown): Promise<any>;
  addPartitionsToTxn(request: unknown): Promise<any>;
  addOffsetsToTxn(request: unknown): Promise<any>;
  endTxn(request: unknown): Promise<any>;
}
