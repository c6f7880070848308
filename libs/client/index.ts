// The public API of the tern TypeScript client. Everything else in libs/client is internal.
export { Producer, type ProducerOptions, type ProducerRecord } from "./producer/producer.js";
export type { CompressionCodec } from "../records/compression.js";
export type { RecordMetadata } from "./producer/producer-batch.js";
export type { GroupMetadata, TopicPartitionOffset } from "./producer/transaction-manager.js";
export { LEGAL_STATES, type TxnState, type TxnMethod } from "./producer/transaction-state.js";
export { murmur2, partitionForKey, DefaultPartitioner } from "./producer/partitioner.js";
export {
  Consumer,
  type ConsumerOptions,
  type ConsumerRecord,
  type IsolationLevel,
  type TopicPartition,
  type RebalanceListener,
} from "./consumer/consumer.js";
export {
  Admin,
  type AdminOptions,
  type ClusterDescription,
  type GroupLeader,
  type HangingTransaction,
  type LogCleaningInfo,
  type ProducerStateInfo,
  type TransactionDescription,
  type TransactionListing,
  type TransactionStateName,
} from "./admin/admin.js";
export {
  AbortableTransactionError,
  ClientError,
  ClosedError,
  IllegalStateError,
  ProducerFencedError,
  TimeoutError,
  TransactionTimedOutError,
  toClientError,
  type ErrorKind,
} from "./errors.js";
export { LOCAL_BOOTSTRAP } from "./network/bootstrap.js";
// The seam every call to a node goes through (the `transport` option; default gRPC).
export type {
  ControllerCalls,
  MethodName,
  RequestOf,
  ResponseOf,
  ServiceName,
  Transport,
} from "./network/transport.js";
// Each client's TLS and password (options `tls`, `credentials`): docs/security.md.
export type { ClientSecurityOptions } from "./network/grpc-transport.js";
export type { ClientTlsFiles, PasswordCredentials } from "../grpc/client-credentials.js";
export type { ClientLogger } from "../common/client-logger.js";
export type {
  GroupDescription,
  GroupListing,
  GroupMemberDescription,
  PartitionLag,
  ResetPlanRow,
  ResetSpec,
} from "./admin/consumer-groups-admin.js";
export type {
  AclBinding,
  AclFilter,
  Operation as AclOperation,
  Permission as AclPermission,
  ResourceType as AclResourceType,
  PatternType as AclPatternType,
} from "../common/acl.js";
export type {
  ClientQuotaEntry,
  QuotaAlteration,
  QuotaEntity,
  QuotaFilterComponent,
  QuotaKey,
  QuotaOp,
} from "../common/client-quota.js";
