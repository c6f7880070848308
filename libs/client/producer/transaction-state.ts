// The transactional producer's states and the table of which public method is legal in which
// state (KafkaJS / Java TransactionManager style). Pure: no I/O.
import { IllegalStateError } from "../errors.js";

export type TxnState =
  | "UNINITIALIZED"
  | "INITIALIZING"
  | "READY"
  | "IN_TRANSACTION"
  | "COMMITTING_TRANSACTION"
  | "ABORTING_TRANSACTION"
  | "ABORTABLE_ERROR"
  | "FATAL_ERROR";

export type TxnMethod =
  | "initTransactions"
  | "beginTransaction"
  | "send"
  | "sendOffsetsToTransaction"
  | "commitTransaction"
  | "abortTransaction";

/** Where each public method may be called. A retry after a timeout re-enters the same state. */
export const LEGAL_STATES: Readonly<Record<TxnMethod, readonly TxnState[]>> = {
  initTransactions: ["UNINITIALIZED", "INITIALIZING"],
  beginTransaction: ["READY"],
  send: ["IN_TRANSACTION"],
  sendOffsetsToTransaction: ["IN_TRANSACTION"],
  commitTransaction: ["IN_TRANSACTION", "COMMITTING_TRANSACTION"],
  abortTransaction: ["IN_TRANSACTION", "ABORTABLE_ERROR", "ABORTING_TRANSACTION"],
};

/** Internal transitions allowed (from → to). */
export const TRANSITIONS: Readonly<Record<TxnState, readonly TxnState[]>> = {
  UNINITIALIZED: ["INITIALIZING", "FATAL_ERROR"],
  INITIALIZING: ["READY", "INITIALIZING", "FATAL_ERROR"],
  READY: ["IN_TRANSACTION", "FATAL_ERROR"],
  IN_TRANSACTION: [
    "COMMITTING_TRANSACTION",
    "ABORTING_TRANSACTION",
    "ABORTABLE_ERROR",
    "FATAL_ERROR",
  ],
  COMMITTING_TRANSACTION: ["READY", "ABORTABLE_ERROR", "FATAL_ERROR", "COMMITTING_TRANSACTION"],
  ABORTING_TRANSACTION: ["READY", "FATAL_ERROR", "ABORTING_TRANSACTION"],
  ABORTABLE_ERROR: ["ABORTING_TRANSACTION", "ABORTABLE_ERROR", "FATAL_ERROR"],
  FATAL_ERROR: ["FATAL_ERROR"],
};

export function isLegal(method: TxnMethod, state: TxnState): boolean {
  return LEGAL_STATES[method].includes(state);
}

export function checkLegal(method: TxnMethod, state: TxnState): void {
  if (!isLegal(method, state)) {
    throw new IllegalStateError(
      `${method}() is not allowed in state ${state} (allowed in ${LEGAL_STATES[method].join(", ")})`,
    );
  }
}

export function canTransition(from: TxnState, to: TxnState): boolean {
  return TRANSITIONS[from].includes(to);
}
