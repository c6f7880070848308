// What the Kafka listener needs from its process: the broker's partition service (the one the
// gRPC Broker handlers run over, called in its domain terms, so nothing is implemented twice),
// the cluster metadata, and every broker's Kafka endpoint. On a transaction coordinator: the
// TransactionCoordinator service's handlers instead (the partition calls answer
// NOT_LEADER_OR_FOLLOWER there).
import type { Logger } from "pino";
import type { ClusterMetadata } from "../../libs/metadata/types.js";
import type { GroupCoordinator } from "../group/index.js";
import type { QuotaAdmin, TopicAdmin } from "./admin-ports.js";
import type { TransactionAdminCalls } from "./transaction-admin-apis.js";
import type { RequestAccess } from "./kafka-access.js";
import type { AclBinding, AclFilter } from "../../libs/common/acl.js";
import type { TernError } from "../../libs/common/errors.js";
import type { KafkaFeatureLevels } from "../../libs/common/kafka-features.js";
import type { PartitionService } from "../broker/partition-service/partition-service.js";
import type {
  AddOffsetsToTxnRequest__Output,
  AddOffsetsToTxnResponse__Output,
  AddPartitionsToTxnRequest__Output,
  AddPartitionsToTxnResponse__Output,
  EndTxnRequest__Output,
  EndTxnResponse__Output,
  FindCoordinatorRequest__Output,
  FindCoordinatorResponse__Output,
  InitProducerIdRequest__Output,
  InitProducerIdResponse__Output,
  TxnOffsetCommitRequest__Output,
  TxnOffsetCommitResponse__Output,
} from "../../libs/common/proto-types/index.js";

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
  /** The partition service's calls (services/broker/partition-service/), in its domain types. */
  produce: PartitionService["produce"];
  fetch: PartitionService["fetch"];
  listOffsets: PartitionService["listOffsets"];
  /** Brokers: log start moves (absent on a coordinator: NOT_LEADER_OR_FOLLOWER). */
  deleteRecords?: PartitionService["deleteRecords"];
  /** CreateTopics / DeleteTopics / DescribeConfigs go to the controller. */
  readonly topicAdmin: TopicAdmin;
  /** A fresh producer id for an idempotent producer, from a transaction coordinator. */
  initProducerId(): Promise<{ producerId: bigint; producerEpoch: number }>;
  /** The Kafka features' finalized levels (--kafka-features); absent: the defaults. */
  readonly featureLevels?: KafkaFeatureLevels;
  /** Kafka's auto.create.topics.enable (--kafka-auto-create-topics): Metadata creates missing topics. */
  readonly autoCreateTopics?: boolean;
  /** Which process this listener is in (the controller id of its Metadata answers follows); default broker. */
  readonly role?: "broker" | "coordinator";
  /** Coordinators: the tern.v1.TransactionCoordinator handlers (coordinator-handlers.ts). */
  readonly transactions?: TransactionCoordinatorCalls;
  /** ListTransactions / DescribeTransactions (coordinators), DescribeProducers (brokers). */
  readonly transactionAdmin?: TransactionAdminCalls;
  /** Brokers: the tern.v1.GroupCoordinator's TxnOffsetCommit (proto/tern/v1/group.proto). */
  txnOffsetCommit?(
    request: TxnOffsetCommitRequest__Output,
  ): Promise<TxnOffsetCommitResponse__Output>;
  /** CreateAcls / DescribeAcls / DeleteAcls go to the controller. */
  readonly aclAdmin?: AclAdmin;
  /** DescribeClientQuotas / AlterClientQuotas go to the controller. */
  readonly quotaAdmin?: QuotaAdmin;
  /**
   * What this request's principal may do (kafka-access.ts); set per request when the listener
   * runs an authorizer, undefined (everything allowed) otherwise.
   */
  readonly access?: RequestAccess;
}

/** Each call names the Kafka client's principal: the controller checks the ACLs as that client, not as this process. */
export interface AclAdmin {
  createAcls(
    bindings: readonly AclBinding[],
    principal: string,
  ): Promise<Array<TernError | undefined>>;
  describeAcls(filter: AclFilter, principal: string): Promise<AclBinding[]>;
  deleteAcls(
    filters: readonly AclFilter[],
    principal: string,
  ): Promise<Array<{ error?: TernError; deleted: AclBinding[] }>>;
}

/** In the proto-loader shape of proto/tern/v1/coordinator.proto; failures are thrown TernErrors. */
export interface TransactionCoordinatorCalls {
  findCoordinator(
    request: FindCoordinatorRequest__Output,
  ): Promise<FindCoordinatorResponse__Output>;
  initProducerId(request: InitProducerIdRequest__Output): Promise<InitProducerIdResponse__Output>;
  addPartitionsToTxn(
    request: AddPartitionsToTxnRequest__Output,
  ): Promise<AddPartitionsToTxnResponse__Output>;
  addOffsetsToTxn(
    request: AddOffsetsToTxnRequest__Output,
  ): Promise<AddOffsetsToTxnResponse__Output>;
  endTxn(request: EndTxnRequest__Output): Promise<EndTxnResponse__Output>;
}
