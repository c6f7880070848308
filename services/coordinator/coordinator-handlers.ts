// tern.v1.TransactionCoordinator on the wire: proto-loader objects (camelCase, int64 as
// decimal strings, enums as names) to and from the TransactionCoordinator's domain calls.
// Whole-request failures are thrown TernErrors (wrapUnaryService turns them into statuses).
import { TernError } from "../../libs/common/errors.js";
import { partitionFor } from "../../libs/common/hash.js";
import { findPartition, internalPartitionCount, nodeAddress } from "../../libs/metadata/lookup.js";
import {
  CONSUMER_OFFSETS_TOPIC,
  TRANSACTION_STATE_TOPIC,
  type ClusterMetadata,
} from "../../libs/metadata/types.js";
import type { TransactionCoordinator } from "./transaction-coordinator.js";
import type { TopicPartitionRef, TxnState } from "./transaction-metadata.js";
import type {
  AbortTransactionRequest__Output,
  AbortTransactionResponse__Output,
  AddOffsetsToTxnRequest__Output,
  AddOffsetsToTxnResponse__Output,
  AddPartitionsToTxnRequest__Output,
  AddPartitionsToTxnResponse__Output,
  DescribeTransactionsRequest__Output,
  DescribeTransactionsResponse__Output,
  EndTxnRequest__Output,
  EndTxnResponse__Output,
  FindCoordinatorRequest__Output,
  FindCoordinatorResponse__Output,
  InitProducerIdRequest__Output,
  InitProducerIdResponse__Output,
  ListTransactionsRequest__Output,
  ListTransactionsResponse__Output,
  TopicPartition__Output,
  TransactionState__Output,
} from "../../libs/common/proto-types/index.js";

const STATE_TO_WIRE: Record<TxnState, TransactionState__Output> = {
  Empty: "EMPTY",
  Ongoing: "ONGOING",
  PrepareCommit: "PREPARE_COMMIT",
  PrepareAbort: "PREPARE_ABORT",
  CompleteCommit: "COMPLETE_COMMIT",
  CompleteAbort: "COMPLETE_ABORT",
};
const STATE_FROM_WIRE = new Map<string, TxnState>(
  Object.entries(STATE_TO_WIRE).map(([k, v]) => [v, k as TxnState]),
);
/** Bound on the ids of one DescribeTransactions. */
const DESCRIBE_IDS_MAX = 1_000;

export interface HandlerDeps {
  readonly coordinator: TransactionCoordinator;
  readonly metadata: () => ClusterMetadata | undefined;
  /** This node's id and advertised address (answers FindCoordinator for partitions it leads). */
  readonly self: { readonly nodeId: number; readonly address: string };
}

/**
 * The TransactionCoordinator service's handlers: the gRPC server wraps them, the Kafka listener
 * calls them in process. Each answer sets every field (as a decoded message would have them).
 */
export interface CoordinatorHandlers {
  FindCoordinator(req: FindCoordinatorRequest__Output): Promise<FindCoordinatorResponse__Output>;
  InitProducerId(req: InitProducerIdRequest__Output): Promise<InitProducerIdResponse__Output>;
  AddPartitionsToTxn(
    req: AddPartitionsToTxnRequest__Output,
  ): Promise<AddPartitionsToTxnResponse__Output>;
  AddOffsetsToTxn(req: AddOffsetsToTxnRequest__Output): Promise<AddOffsetsToTxnResponse__Output>;
  EndTxn(req: EndTxnRequest__Output): Promise<EndTxnResponse__Output>;
  ListTransactions(req: ListTransactionsRequest__Output): Promise<ListTransactionsResponse__Output>;
  DescribeTransactions(
    req: DescribeTransactionsRequest__Output,
  ): Promise<DescribeTransactionsResponse__Output>;
  AbortTransaction(req: AbortTransactionRequest__Output): Promise<AbortTransactionResponse__Output>;
}

export function createCoordinatorHandlers(deps: HandlerDeps): CoordinatorHandlers {
  const { coordinator } = deps;
  return {
    FindCoordinator: async (req) =>
      findCoordinator(deps, String(req.key ?? ""), String(req.keyType ?? "TRANSACTION")),
    InitProducerId: async (req) =>
      wireIdentity(
        await coordinator.initProducerId({
          transactionalId: String(req.transactionalId ?? ""),
          transactionTimeoutMs: Number(req.transactionTimeoutMs ?? 0),
          producerId: bigintOf(req.producerId, "producer_id"),
          producerEpoch: Number(req.producerEpoch ?? -1),
        }),
      ),
    AddPartitionsToTxn: async (req) => {
      const results = await coordinator.addPartitionsToTxn({
        ...txnBase(req),
        partitions: partitionsOf(req.partitions),
        verifyOnly: req.verifyOnly === true,
      });
      return {
        results: results.map((r) => ({
          topicPartition: r.tp,
          errorCode: r.error,
          errorMessage: r.message,
        })),
      };
    },
    AddOffsetsToTxn: async (req) => ({
      offsetsPartition: await coordinator.addOffsetsToTxn({
        ...txnBase(req),
        groupId: String(req.groupId ?? ""),
      }),
    }),
    EndTxn: async (req) => {
      // A V1 end (the epoch kept) is only for the Kafka listener's clients (createKafkaListenerEndTxn):
      // with it, a late batch of a V2 producer would carry the next transaction's epoch and the
      // partition leader's add on its behalf would accept it (docs/broker.md).
      if (req.keepEpoch === true)
        throw new TernError(
          "INVALID_REQUEST",
          "keep_epoch is set only by the coordinator's Kafka listener; a gRPC EndTxn always bumps the epoch",
        );
      return wireIdentity(
        await coordinator.endTxn({ ...txnBase(req), committed: req.committed === true }),
      );
    },
    ListTransactions: async (req) => {
      const states = ((req.stateFilters ?? []) as string[]).map((s) => {
        const state = STATE_FROM_WIRE.get(String(s));
        if (state === undefined)
          throw new TernError("INVALID_REQUEST", `unknown transaction state ${String(s)}`);
        return state;
      });
      const listed = coordinator.listTransactions({
        states,
        producerIds: ((req.producerIdFilters ?? []) as string[]).map((p) =>
          bigintOf(p, "producer_id_filters"),
        ),
        minDurationMs: Number(req.durationFilterMs ?? 0),
      });
      return {
        transactions: listed.transactions.map((t) => ({
          transactionalId: t.transactionalId,
          producerId: t.producerId.toString(),
          state: STATE_TO_WIRE[t.state],
          partition: t.partition,
          startTimeMs: String(t.startTimeMs),
        })),
        unavailablePartitions: listed.unavailablePartitions,
      };
    },
    DescribeTransactions: async (req) => {
      const ids = ((req.transactionalIds ?? []) as string[]).map(String);
      if (ids.length > DESCRIBE_IDS_MAX)
        throw new TernError("INVALID_REQUEST", `at most ${DESCRIBE_IDS_MAX} ids per call`);
      return {
        transactions: coordinator.describeTransactions(ids).map((d) => ({
          transactionalId: d.transactionalId,
          errorCode: d.error,
          errorMessage: d.error === "NONE" ? "" : d.error,
          state: d.record ? STATE_TO_WIRE[d.record.state] : "TRANSACTION_STATE_UNSPECIFIED",
          producerId: (d.record?.producerId ?? -1n).toString(),
          producerEpoch: d.record?.producerEpoch ?? -1,
          transactionTimeoutMs: d.record?.timeoutMs ?? 0,
          transactionStartTimeMs: String(d.record?.txnStartTimeMs ?? 0),
          partitions: [...(d.record?.partitions ?? [])],
          pendingMarkerPartitions: d.pendingMarkerPartitions,
          coordinatorEpoch: d.coordinatorEpoch,
        })),
      };
    },
    AbortTransaction: async (req) => ({
      state: STATE_TO_WIRE[await coordinator.abortTransaction(String(req.transactionalId ?? ""))],
    }),
  };
}

/**
 * EndTxn for the coordinator's Kafka listener (in process), the one caller that may set
 * keep_epoch: Kafka clients whose EndTxn predates v5 (transactions V1) go on with the identity
 * they hold (services/kafka/end-txn-api.ts).
 */
export function createKafkaListenerEndTxn(
  coordinator: TransactionCoordinator,
): (req: EndTxnRequest__Output) => Promise<EndTxnResponse__Output> {
  return async (req) =>
    wireIdentity(
      await coordinator.endTxn({
        ...txnBase(req),
        committed: req.committed === true,
        keepEpoch: req.keepEpoch === true,
      }),
    );
}

async function findCoordinator(
  deps: HandlerDeps,
  key: string,
  keyType: string,
): Promise<FindCoordinatorResponse__Output> {
  if (key === "") throw new TernError("INVALID_REQUEST", "FindCoordinator needs a key");
  const isGroup = keyType === "GROUP";
  if (!isGroup && keyType !== "TRANSACTION")
    throw new TernError("INVALID_REQUEST", `unknown key type ${keyType}`);
  const topic = isGroup ? CONSUMER_OFFSETS_TOPIC : TRANSACTION_STATE_TOPIC;
  // The count of the topic the controller created, never a constant (the controller's setting decides it).
  const count = internalPartitionCount(deps.metadata(), topic);
  if (count === undefined) {
    return {
      coordinator: null,
      partition: -1,
      errorCode: "COORDINATOR_NOT_AVAILABLE",
      errorMessage: `${topic} is not in this coordinator's cluster metadata yet`,
    };
  }
  const partition = partitionFor(key, count);
  // A replica between leaders names the next one, rather than none or the one just lost.
  if (!isGroup) await deps.coordinator.settled(partition);
  const m = deps.metadata();
  // We know our own leaderships before the controller does.
  if (!isGroup && deps.coordinator.isLoaded(partition)) {
    return {
      coordinator: { nodeId: deps.self.nodeId, address: deps.self.address },
      partition,
      errorCode: "NONE",
      errorMessage: "",
    };
  }
  const p = m === undefined ? undefined : findPartition(m, topic, partition);
  // A replica of the partition learns a new leader from Raft before the controller does.
  const local = isGroup ? undefined : deps.coordinator.localLeader(partition);
  const leader = local !== undefined && local >= 0 ? local : (p?.leader ?? -1);
  const address =
    m !== undefined && leader >= 0
      ? nodeAddress(m, isGroup ? "broker" : "coordinator", leader)
      : undefined;
  if (address === undefined) {
    return {
      coordinator: null,
      partition,
      errorCode: "COORDINATOR_NOT_AVAILABLE",
      errorMessage: `${topic}/${partition} has no known leader`,
    };
  }
  return {
    coordinator: { nodeId: leader, address },
    partition,
    errorCode: "NONE",
    errorMessage: "",
  };
}

function txnBase(req: { transactionalId: string; producerId: string; producerEpoch: number }): {
  transactionalId: string;
  producerId: bigint;
  producerEpoch: number;
} {
  const transactionalId = String(req.transactionalId ?? "");
  if (transactionalId === "")
    throw new TernError("INVALID_REQUEST", "transactional_id is required");
  return {
    transactionalId,
    producerId: bigintOf(req.producerId, "producer_id"),
    producerEpoch: Number(req.producerEpoch ?? 0),
  };
}

function partitionsOf(list: unknown): TopicPartitionRef[] {
  if (!Array.isArray(list)) return [];
  return list.map((tp: Partial<TopicPartition__Output> | null | undefined) => ({
    topic: String(tp?.topic ?? ""),
    partition: Number(tp?.partition ?? -1),
  }));
}

function bigintOf(value: unknown, what: string): bigint {
  const s = String(value ?? "-1");
  if (!/^-?\d{1,20}$/.test(s))
    throw new TernError("INVALID_REQUEST", `${what} is not a 64-bit integer: ${s}`);
  return BigInt(s);
}

function wireIdentity(identity: { producerId: bigint; producerEpoch: number }): {
  producerId: string;
  producerEpoch: number;
} {
  return { producerId: identity.producerId.toString(), producerEpoch: identity.producerEpoch };
}
