// What Admin reports about transactions (listTransactions, describeTransactions), apart from
// admin.ts so hanging-check.ts can read them without importing the Admin that uses it.
import type { ErrorName } from "../../common/errors.js";
import type { TopicPartition } from "../consumer/consumer.js";

export type TransactionStateName =
  "EMPTY" | "ONGOING" | "PREPARE_COMMIT" | "PREPARE_ABORT" | "COMPLETE_COMMIT" | "COMPLETE_ABORT";

export interface TransactionListing {
  transactionalId: string;
  producerId: bigint;
  state: TransactionStateName;
  /** The __transaction_state partition. */
  partition: number;
  startTimeMs: number;
  coordinator: string;
}

export interface TransactionDescription {
  transactionalId: string;
  error?: string;
  /** The error's name, when there is one (TRANSACTIONAL_ID_NOT_FOUND, NOT_COORDINATOR, ...). */
  errorCode?: ErrorName;
  state: TransactionStateName;
  producerId: bigint;
  producerEpoch: number;
  transactionTimeoutMs: number;
  transactionStartTimeMs: number;
  partitions: TopicPartition[];
  pendingMarkerPartitions: TopicPartition[];
  coordinatorEpoch: number;
  coordinator: string;
}
