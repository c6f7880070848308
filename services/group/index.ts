// The public surface of the group coordinator component (consumer groups, classic groups and
// committed offsets on the __consumer_offsets partitions): the factory and the domain types its
// callers see, its gRPC service binding, its metrics, and the ports the hosting process (the
// broker) fills in. services/broker and services/kafka import this file only; the rest of
// services/group is internal (scripts/lint-import-cycles.mjs enforces both directions).
export {
  createGroupCoordinator,
  offsetsGroupId,
  type GroupCoordinator,
  type GroupCoordinatorOptions,
  type GroupServiceBinding,
  type MarkerOutcome,
  type MarkerToApply,
} from "./group-coordinator.js";
export type {
  ClusterMetadataView,
  EndOffsetsLister,
  OffsetsMarkerRequest,
  OffsetsMarkerWriter,
  OffsetsPartitionHost,
  TransactionEndListener,
  TxnPartitionVerifier,
} from "./ports.js";
export { groupMetrics, type GroupMetrics, type GroupMetricsSource } from "./group-metrics.js";
export type { OffsetsStateMachine } from "./offsets-state-machine.js";
export type { GroupView, MemberView } from "./consumer-groups.js";
export type { ClassicCoordinator } from "./classic-coordinator.js";
export type {
  ClassicGroupView,
  ClassicMemberView,
  ClassicProtocol,
  JoinOutcome,
  JoinRequest,
  LeaveOutcome,
  SyncOutcome,
  SyncRequest,
} from "./classic-group.js";
export type {
  CurrentMember,
  WireHeartbeatRequest,
  WireHeartbeatResponse,
} from "./group-membership.js";
export type {
  WireFetchedOffset,
  WireOffsetCommitRequest,
  WireOffsetFetchRequest,
  WirePartitionResult,
  WireTxnOffsetCommitRequest,
} from "./offsets-wire.js";
