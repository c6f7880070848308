// The client's error vocabulary. Every failure a caller sees is a ClientError whose `kind`
// says what to do next (Kafka's Java client split): "fatal" (close the producer: fenced,
// timed out by the coordinator), "abortable" (abort the transaction, then carry on),
// "retriable" (the same call may succeed later). `code` is the server's error name when
// there was one; `cause` keeps the original error.
import { isTernError, producerAction, TernError, type ErrorName } from "../common/errors.js";
import { fromGrpcError } from "../common/grpc-errors.js";

export type ErrorKind = "fatal" | "abortable" | "retriable";

export class ClientError extends Error {
  constructor(
    message: string,
    readonly kind: ErrorKind,
    readonly code?: ErrorName,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "ClientError";
  }
  get fatal(): boolean {
    return this.kind === "fatal";
  }
  get abortable(): boolean {
    return this.kind === "abortable";
  }
  get retriable(): boolean {
    return this.kind === "retriable";
  }
}

/** `send` could not get buffer memory or metadata within `maxBlockMs`, or a batch outlived `deliveryTimeoutMs`. */
export class TimeoutError extends ClientError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, "retriable", "REQUEST_TIMED_OUT", options);
    this.name = "TimeoutError";
  }
}

/** A newer producer with the same transactional id exists: this one is a zombie. Fatal. */
export class ProducerFencedError extends ClientError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, "fatal", "PRODUCER_FENCED", options);
    this.name = "ProducerFencedError";
  }
}

/** The coordinator aborted the transaction because it was open longer than its timeout. Fatal. */
export class TransactionTimedOutError extends ClientError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, "fatal", "TRANSACTION_TIMED_OUT", options);
    this.name = "TransactionTimedOutError";
  }
}

/** A method was called in a transaction state that does not allow it (a programming error). */
export class IllegalStateError extends ClientError {
  constructor(message: string) {
    super(message, "fatal", "INVALID_TXN_STATE");
    this.name = "IllegalStateError";
  }
}

/** A failure inside the transaction: call abortTransaction() and start again. */
export class AbortableTransactionError extends ClientError {
  constructor(message: string, code?: ErrorName, options?: { cause?: unknown }) {
    super(message, "abortable", code, options);
    this.name = "AbortableTransactionError";
  }
}

/** The producer or consumer was closed while the call was pending. */
export class ClosedError extends ClientError {
  constructor(message: string) {
    super(message, "fatal", "SHUTTING_DOWN");
    this.name = "ClosedError";
  }
}

/** Any error as a ClientError, classified by the server code (errors.ts marks what is retriable). */
export function toClientError(e: unknown, context?: string): ClientError {
  if (e instanceof ClientError) return e;
  const t: TernError = isTernError(e) ? e : fromGrpcError(e);
  const message = context
    ? `${context}: ${t.errorName}: ${t.message}`
    : `${t.errorName}: ${t.message}`;
  if (t.errorName === "PRODUCER_FENCED" || t.errorName === "INVALID_PRODUCER_EPOCH")
    return new ProducerFencedError(message, { cause: t });
  if (t.errorName === "TRANSACTION_TIMED_OUT")
    return new TransactionTimedOutError(message, { cause: t });
  return new ClientError(message, producerAction(t.errorName), t.errorName, { cause: t });
}

/** The server error name behind any error, if there is one. */
export function errorNameOf(e: unknown): ErrorName | undefined {
  if (e instanceof ClientError) return e.code;
  if (isTernError(e)) return e.errorName;
  return undefined;
}
