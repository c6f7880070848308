// One error vocabulary for the whole system. Each code has Kafka's name and number (ours
// start above 1000), whether a client may retry it, the gRPC status used when a whole
// request fails with it, and what a caller does next. proto/tern/v1/common.proto mirrors this
// table (a test checks).
//
// The `next` column, a set of flags (Kafka's client rules, as tern's clients apply them):
//   metadata     refresh metadata: the partition's leader may have moved (or the node is gone)
//   coordinator  find the coordinator again: it moved, or is loading or not ready yet
//   node         the node did not answer or cannot serve now: another node may (a coordinator
//                is found again; with metadata, the leader too)
//   fatal        a producer that gets it is fatally failed and must be closed (fenced, timed
//                out, or its identity is gone); a producer error that is not fatal is retriable
//                when the `retriable` column says so, abortable (abort the transaction, go on)
//                otherwise (see producerAction)
//   fenced       a newer producer epoch or coordinator epoch exists
//   rejoin       the consumer group member is not (or no longer) in the group: rejoin
//   refused      authentication or authorization refused it: no retry helps until an operator
//                changes credentials or ACLs
// Where tern's producer differs from Kafka's: Kafka also makes CLUSTER_ and
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED and a broker's INVALID_TXN_STATE fatal; here they are
// abortable (the refused ones fail the waiting records at once, see the Sender).
import { status as GrpcStatus } from "@grpc/grpc-js";

export type NextFlag =
  "metadata" | "coordinator" | "node" | "fatal" | "fenced" | "rejoin" | "refused";

export interface ErrorSpec {
  readonly code: number;
  readonly name: string;
  readonly retriable: boolean;
  readonly grpc: GrpcStatus;
  /** What a caller does next (see the flags above). */
  readonly next: ReadonlySet<NextFlag>;
  readonly message: string;
}

const S = GrpcStatus;
// One row per code, kept as a table.
// prettier-ignore
const table = [
  [-1, "UNKNOWN_SERVER_ERROR", false, S.INTERNAL, [], "The server experienced an unexpected error."],
  [0, "NONE", false, S.OK, [], "Success."],
  [1, "OFFSET_OUT_OF_RANGE", false, S.OUT_OF_RANGE, [], "The requested offset is not within the range of offsets kept by the server."],
  [2, "CORRUPT_MESSAGE", false, S.INVALID_ARGUMENT, [], "The record batch is malformed or failed its checksum."],
  [3, "UNKNOWN_TOPIC_OR_PARTITION", true, S.NOT_FOUND, ["metadata"], "This server does not host this topic-partition."],
  [5, "LEADER_NOT_AVAILABLE", true, S.UNAVAILABLE, ["metadata"], "There is no leader for this partition right now (an election is in progress)."],
  [6, "NOT_LEADER_OR_FOLLOWER", true, S.FAILED_PRECONDITION, ["metadata"], "This server is not the leader of that partition."],
  [7, "REQUEST_TIMED_OUT", true, S.DEADLINE_EXCEEDED, ["node"], "The request timed out."],
  [8, "BROKER_NOT_AVAILABLE", true, S.UNAVAILABLE, ["metadata", "node"], "The node is not available."],
  [10, "MESSAGE_TOO_LARGE", false, S.INVALID_ARGUMENT, [], "The request included a record or batch larger than the server accepts."],
  [12, "OFFSET_METADATA_TOO_LARGE", false, S.INVALID_ARGUMENT, [], "The metadata string of an offset commit is too large."],
  [13, "NETWORK_EXCEPTION", true, S.UNAVAILABLE, ["metadata", "node"], "The server disconnected before a response was received."],
  [14, "COORDINATOR_LOAD_IN_PROGRESS", true, S.UNAVAILABLE, ["coordinator"], "The coordinator is loading its state and cannot serve yet."],
  [15, "COORDINATOR_NOT_AVAILABLE", true, S.UNAVAILABLE, ["coordinator"], "The coordinator is not available."],
  [16, "NOT_COORDINATOR", true, S.FAILED_PRECONDITION, ["coordinator"], "This is not the correct coordinator."],
  [17, "INVALID_TOPIC_EXCEPTION", false, S.INVALID_ARGUMENT, [], "The topic name is empty, too long or has illegal characters."],
  [18, "RECORD_LIST_TOO_LARGE", false, S.INVALID_ARGUMENT, [], "The request included more records than the server accepts in one batch."],
  [19, "NOT_ENOUGH_REPLICAS", true, S.UNAVAILABLE, [], "Fewer in-sync replicas than required."],
  [21, "INVALID_REQUIRED_ACKS", false, S.INVALID_ARGUMENT, [], "acks must be -1 (all), 1 (leader) or 0."],
  [22, "ILLEGAL_GENERATION", false, S.FAILED_PRECONDITION, [], "The group generation id is not valid."],
  [23, "INCONSISTENT_GROUP_PROTOCOL", false, S.FAILED_PRECONDITION, [], "The group member's protocol type or protocols are incompatible with the group's (or the group uses the other rebalance protocol)."],
  [24, "INVALID_GROUP_ID", false, S.INVALID_ARGUMENT, [], "The group id is empty or invalid."],
  [25, "UNKNOWN_MEMBER_ID", false, S.FAILED_PRECONDITION, ["rejoin"], "The member id is not in the current generation."],
  [26, "INVALID_SESSION_TIMEOUT", false, S.INVALID_ARGUMENT, [], "The session timeout is not within the range the group coordinator allows."],
  [27, "REBALANCE_IN_PROGRESS", true, S.ABORTED, [], "The group is rebalancing: rejoin it."],
  [29, "TOPIC_AUTHORIZATION_FAILED", false, S.PERMISSION_DENIED, ["refused"], "The principal is not authorized for the topic."],
  [30, "GROUP_AUTHORIZATION_FAILED", false, S.PERMISSION_DENIED, ["refused"], "The principal is not authorized for the consumer group."],
  [31, "CLUSTER_AUTHORIZATION_FAILED", false, S.PERMISSION_DENIED, ["refused"], "The principal is not authorized for a cluster-level operation."],
  [32, "INVALID_TIMESTAMP", false, S.INVALID_ARGUMENT, [], "A record timestamp is out of the acceptable range."],
  [33, "UNSUPPORTED_SASL_MECHANISM", false, S.UNAUTHENTICATED, [], "The SASL mechanism is not enabled on this listener."],
  [34, "ILLEGAL_SASL_STATE", false, S.FAILED_PRECONDITION, [], "The request is not valid in the connection's SASL state."],
  [36, "TOPIC_ALREADY_EXISTS", false, S.ALREADY_EXISTS, [], "A topic with this name already exists."],
  [37, "INVALID_PARTITIONS", false, S.INVALID_ARGUMENT, [], "The number of partitions is invalid."],
  [38, "INVALID_REPLICATION_FACTOR", false, S.INVALID_ARGUMENT, [], "The replication factor is invalid or exceeds the live nodes."],
  [40, "INVALID_CONFIG", false, S.INVALID_ARGUMENT, [], "The configuration is invalid."],
  [41, "NOT_CONTROLLER", true, S.FAILED_PRECONDITION, [], "This is not the active controller."],
  [42, "INVALID_REQUEST", false, S.INVALID_ARGUMENT, [], "The request is malformed or violates the protocol."],
  [43, "UNSUPPORTED_FOR_MESSAGE_FORMAT", false, S.INVALID_ARGUMENT, [], "The record batch format (magic) is not supported: only record batch v2."],
  [45, "OUT_OF_ORDER_SEQUENCE_NUMBER", false, S.FAILED_PRECONDITION, [], "The broker received an out of order sequence number."],
  [46, "DUPLICATE_SEQUENCE_NUMBER", false, S.ALREADY_EXISTS, [], "The broker received a duplicate sequence number."],
  [47, "INVALID_PRODUCER_EPOCH", false, S.FAILED_PRECONDITION, ["fatal", "fenced"], "The producer epoch is older than the current one."],
  [48, "INVALID_TXN_STATE", false, S.FAILED_PRECONDITION, [], "The operation is not valid in the transaction's current state."],
  [49, "INVALID_PRODUCER_ID_MAPPING", false, S.FAILED_PRECONDITION, ["fatal"], "The producer id does not match the transactional id."],
  [50, "INVALID_TRANSACTION_TIMEOUT", false, S.INVALID_ARGUMENT, ["fatal"], "The transaction timeout exceeds the configured maximum."],
  [51, "CONCURRENT_TRANSACTIONS", true, S.ABORTED, [], "Another transition of this transactional id is in progress."],
  [52, "TRANSACTION_COORDINATOR_FENCED", false, S.FAILED_PRECONDITION, ["fatal", "fenced"], "A newer transaction coordinator has taken over (coordinator epoch is stale)."],
  [53, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", false, S.PERMISSION_DENIED, ["refused"], "The principal is not authorized for the transactional id."],
  [56, "KAFKA_STORAGE_ERROR", true, S.UNAVAILABLE, [], "Disk error when trying to access the log."],
  [58, "SASL_AUTHENTICATION_FAILED", false, S.UNAUTHENTICATED, ["refused"], "SASL authentication failed (unknown user or wrong password)."],
  [59, "UNKNOWN_PRODUCER_ID", false, S.FAILED_PRECONDITION, [], "The producer id is not known to this partition."],
  [68, "NON_EMPTY_GROUP", false, S.FAILED_PRECONDITION, [], "The group is not empty."],
  [69, "GROUP_ID_NOT_FOUND", false, S.NOT_FOUND, [], "The group id does not exist."],
  [76, "UNSUPPORTED_COMPRESSION_TYPE", false, S.INVALID_ARGUMENT, [], "The record batch's compression codec is not supported."],
  [79, "MEMBER_ID_REQUIRED", false, S.FAILED_PRECONDITION, [], "The group member must rejoin with the member id the coordinator returned (KIP-394)."],
  [81, "GROUP_MAX_SIZE_REACHED", false, S.RESOURCE_EXHAUSTED, [], "The group has reached its maximum number of members."],
  [82, "FENCED_INSTANCE_ID", false, S.FAILED_PRECONDITION, [], "A newer member has joined with this group instance id (static membership)."],
  [86, "GROUP_SUBSCRIBED_TO_TOPIC", false, S.FAILED_PRECONDITION, [], "The group's members are subscribed to this topic: its offsets cannot be deleted."],
  [87, "INVALID_RECORD", false, S.INVALID_ARGUMENT, [], "A record failed validation."],
  [88, "UNSTABLE_OFFSET_COMMIT", true, S.UNAVAILABLE, [], "A transactional offset commit for this partition is still pending."],
  [89, "THROTTLING_QUOTA_EXCEEDED", true, S.RESOURCE_EXHAUSTED, [], "A queue or quota limit was reached; retry later."],
  [90, "PRODUCER_FENCED", false, S.FAILED_PRECONDITION, ["fatal", "fenced"], "A newer producer with the same transactional id has been initialised."],
  [91, "RESOURCE_NOT_FOUND", false, S.NOT_FOUND, [], "The resource (e.g. a user's SCRAM credential) does not exist."],
  [101, "DUPLICATE_BROKER_REGISTRATION", false, S.ALREADY_EXISTS, [], "A live node is already registered with this id."],
  [105, "TRANSACTIONAL_ID_NOT_FOUND", false, S.NOT_FOUND, ["fatal"], "The transactional id is not known to the coordinator."],
  [110, "FENCED_MEMBER_EPOCH", false, S.FAILED_PRECONDITION, ["rejoin"], "The member epoch is fenced by the group coordinator: rejoin with epoch 0."],
  [111, "UNRELEASED_INSTANCE_ID", false, S.FAILED_PRECONDITION, [], "The instance id is still used by another member of the group."],
  [112, "UNSUPPORTED_ASSIGNOR", false, S.INVALID_ARGUMENT, [], "The assignor is not supported by the group coordinator."],
  [113, "STALE_MEMBER_EPOCH", false, S.FAILED_PRECONDITION, [], "The member epoch is older than the member's current epoch."],
  [130, "INVALID_REGULAR_EXPRESSION", false, S.INVALID_ARGUMENT, [], "The subscription regular expression is invalid."],
  [1001, "TRANSACTION_TIMED_OUT", false, S.FAILED_PRECONDITION, ["fatal"], "The transaction was open longer than its timeout and was aborted by the coordinator."],
  [1002, "SHUTTING_DOWN", true, S.UNAVAILABLE, ["metadata", "node"], "The node is shutting down."],
  [1003, "UNKNOWN_NODE", false, S.NOT_FOUND, [], "No node with this id is registered."],
] as const satisfies ReadonlyArray<readonly [number, string, boolean, GrpcStatus, readonly NextFlag[], string]>;

export type ErrorName = (typeof table)[number][1];

export const ERRORS: ReadonlyMap<ErrorName, ErrorSpec> = new Map(
  table.map(([code, name, retriable, grpc, next, message]) => [
    name,
    { code, name, retriable, grpc, next: new Set<NextFlag>(next), message },
  ]),
);
const byCode = new Map<number, ErrorSpec>([...ERRORS.values()].map((e) => [e.code, e]));

export function errorSpec(name: ErrorName): ErrorSpec {
  return ERRORS.get(name)!;
}

export function errorByCode(code: number): ErrorSpec {
  return byCode.get(code) ?? ERRORS.get("UNKNOWN_SERVER_ERROR")!;
}

function named(keep: (e: ErrorSpec) => boolean): ReadonlySet<ErrorName> {
  return new Set([...ERRORS.values()].filter(keep).map((e) => e.name as ErrorName));
}
const flagged = (flag: NextFlag): ReadonlySet<ErrorName> => named((e) => e.next.has(flag));

/** Codes a client may retry (the `retriable` column). */
export const RETRIABLE_CODES = named((e) => e.retriable);
/** After these, refresh metadata before the next call to a partition's leader. */
export const REFRESH_METADATA_CODES = flagged("metadata");
/** The coordinator moved or is not ready: ask FindCoordinator again. */
export const COORDINATOR_MOVED_CODES = flagged("coordinator");
/** After these, find the coordinator again: it moved, or its node did not answer. */
export const FIND_COORDINATOR_CODES = named((e) => e.next.has("coordinator") || e.next.has("node"));
/** A producer that gets one of these must be closed. */
export const PRODUCER_FATAL_CODES = flagged("fatal");
/** A newer producer epoch or coordinator epoch exists. */
export const FENCED_CODES = flagged("fenced");
/** The consumer group member must rejoin. */
export const REJOIN_CODES = flagged("rejoin");
/** Authentication or authorization refusals: no retry helps. */
export const REFUSED_CODES = flagged("refused");

export type ProducerAction = "fatal" | "abortable" | "retriable";

/** What a (transactional) producer does with an error: close, abort the transaction, or retry. */
export function producerAction(name: ErrorName): ProducerAction {
  const spec = errorSpec(name);
  if (spec.next.has("fatal")) return "fatal";
  return spec.retriable ? "retriable" : "abortable";
}

/** An operating error with a code from the table: handled, reported, never a crash. */
export class TernError extends Error {
  readonly spec: ErrorSpec;
  readonly details: Record<string, unknown>;
  constructor(
    name: ErrorName,
    message?: string,
    details: Record<string, unknown> = {},
    options?: { cause?: unknown },
  ) {
    const spec = errorSpec(name);
    super(message ?? spec.message, options);
    this.name = "TernError";
    this.spec = spec;
    this.details = details;
  }
  get code(): number {
    return this.spec.code;
  }
  get errorName(): ErrorName {
    return this.spec.name as ErrorName;
  }
  get retriable(): boolean {
    return this.spec.retriable;
  }
}

export function isTernError(e: unknown, name?: ErrorName): e is TernError {
  return e instanceof TernError && (name === undefined || e.spec.name === name);
}
