// Per-producer state of one partition (Kafka's ProducerStateManager): epoch, the last 5
// batches for duplicate detection, the open transaction and the last coordinator epoch.
// Pure: every decision is a function of the replicated entries applied so far.
import type { ErrorName } from "../../libs/common/errors.js";

export const BATCHES_REMEMBERED_MAX = 5;
const SEQUENCE_MAX = 0x7fffffff;

export interface BatchMetadata {
  readonly firstSequence: number;
  readonly lastSequence: number;
  readonly baseOffset: bigint;
  readonly lastOffset: bigint;
  readonly appendTimeMs: number;
}

export interface OpenTransaction {
  readonly firstOffset: bigint;
  readonly startTimeMs: number;
}

export interface ProducerEntry {
  producerEpoch: number;
  /** Oldest first; at most BATCHES_REMEMBERED_MAX. Cleared when the epoch changes. */
  batches: BatchMetadata[];
  lastTimestampMs: number;
  /** -1 until a marker has been seen. */
  coordinatorEpoch: number;
  openTransaction: OpenTransaction | null;
  /**
   * Markers accepted for this producer here, modulo 2^31: the clock of the transaction guard
   * (checkTxnGuard). Not reset by an epoch change: only an equal count proves "no marker since".
   */
  markersApplied: number;
  /**
   * The epoch of the data of the transaction the last accepted marker ended: its epoch, less one
   * when bumped. -1 before any. Never decreases (older epochs are refused).
   */
  lastEndedEpoch: number;
}

export type BatchCheck =
  | { readonly kind: "append" }
  | { readonly kind: "duplicate"; readonly batch: BatchMetadata }
  | { readonly kind: "error"; readonly error: ErrorName; readonly message: string };

export function lastSequenceOf(firstSequence: number, recordCount: number): number {
  return (firstSequence + recordCount - 1) % (SEQUENCE_MAX + 1);
}

function nextSequence(sequence: number): number {
  return sequence === SEQUENCE_MAX ? 0 : sequence + 1;
}

/** Distance from expected to actual going forward, modulo 2^31 (wrap-around). */
function sequenceDistance(expected: number, actual: number): number {
  return (actual - expected + SEQUENCE_MAX + 1) % (SEQUENCE_MAX + 1);
}

export interface BatchIdentity {
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly baseSequence: number;
  readonly recordCount: number;
  readonly isTransactional: boolean;
  /** The leader's guard for a transactional batch; undefined in entries written before guards. */
  readonly txnGuard?: number | undefined;
}

const MARKER_COUNT_MODULUS = 0x80000000;

/** The guard a leader takes for a transactional batch before it decides to admit it. */
export function txnGuardOf(entry: ProducerEntry | undefined): number {
  return entry?.markersApplied ?? 0;
}

/** Decides what to do with an idempotent batch. Does not mutate. */
export function checkBatch(entry: ProducerEntry | undefined, batch: BatchIdentity): BatchCheck {
  const check = checkSequence(entry, batch);
  if (check.kind !== "append") return check;
  return checkTxnGuard(entry, batch) ?? check;
}

/**
 * KIP-890 part 1's verification guard, replicated. The leader admits a transactional batch
 * because the producer's transaction is open here or because the coordinator said so; both are
 * true only until the transaction's marker. The leader records the producer's marker count
 * when it decides (before it asks the coordinator), and the batch is refused at apply if a
 * marker came in between that ended a transaction of the batch's epoch or a later one: a late
 * batch of an ended transaction must not open a new one that no coordinator knows (the LSO
 * would hang), nor join the next one. A marker that ended an older epoch's transaction cannot
 * have ended the batch's: in transactions V2 the coordinator answers the next transaction's
 * first add only once the previous one's markers are written, so that marker often applies
 * while the question is out, and it ends epoch E while the batch is of E+1. Data epochs of
 * successive markers never decrease, so the last one speaks for all since the guard.
 */
function checkTxnGuard(entry: ProducerEntry | undefined, batch: BatchIdentity): BatchCheck | null {
  if (!batch.isTransactional || batch.txnGuard === undefined) return null;
  const now = txnGuardOf(entry);
  if (batch.txnGuard === now) return null;
  const ended = entry?.lastEndedEpoch ?? -1;
  if (ended < batch.producerEpoch) return null;
  return {
    kind: "error",
    error: "INVALID_TXN_STATE",
    message: `producer ${batch.producerId}: a marker ending epoch ${ended}'s transaction was written here after this batch of epoch ${batch.producerEpoch} was admitted (guard ${batch.txnGuard}, now ${now}); the batch's transaction has ended`,
  };
}

function checkSequence(entry: ProducerEntry | undefined, batch: BatchIdentity): BatchCheck {
  const lastSequence = lastSequenceOf(batch.baseSequence, batch.recordCount);
  // With no sequence known for this (producer, epoch) the batch must start the sequence space
  // at 0. Accepting any first sequence would let a later pipelined batch (sent behind one that
  // was delayed or failed) land first; the earlier one would then look "already written"
  // (DUPLICATE_SEQUENCE_NUMBER, which clients treat as success) and be lost silently.
  if (entry === undefined)
    return batch.baseSequence === 0
      ? { kind: "append" }
      : firstSequenceError(batch, "is not known to this partition (new, or its state expired)");
  if (batch.producerEpoch < entry.producerEpoch) {
    return {
      kind: "error",
      error: "INVALID_PRODUCER_EPOCH",
      message: `producer ${batch.producerId} epoch ${batch.producerEpoch} is older than the current epoch ${entry.producerEpoch}`,
    };
  }
  if (batch.producerEpoch > entry.producerEpoch) {
    if (entry.openTransaction !== null) {
      return {
        kind: "error",
        error: "INVALID_TXN_STATE",
        message: `producer ${batch.producerId} still has an open transaction of epoch ${entry.producerEpoch} starting at offset ${entry.openTransaction.firstOffset}`,
      };
    }
    if (batch.baseSequence !== 0) {
      return {
        kind: "error",
        error: "OUT_OF_ORDER_SEQUENCE_NUMBER",
        message: `producer ${batch.producerId} new epoch ${batch.producerEpoch} must start at sequence 0, got ${batch.baseSequence}`,
      };
    }
    return { kind: "append" };
  }
  const duplicate = entry.batches.find(
    (b) => b.firstSequence === batch.baseSequence && b.lastSequence === lastSequence,
  );
  if (duplicate !== undefined) return { kind: "duplicate", batch: duplicate };
  const latest = entry.batches[entry.batches.length - 1];
  if (latest === undefined && batch.baseSequence !== 0)
    return firstSequenceError(batch, `has no batch yet in epoch ${batch.producerEpoch}`);
  if (latest !== undefined) {
    const expected = nextSequence(latest.lastSequence);
    const distance = sequenceDistance(expected, batch.baseSequence);
    if (distance !== 0) {
      // Behind the expected sequence: already written, but older than the remembered batches.
      if (distance > SEQUENCE_MAX / 2) {
        return {
          kind: "error",
          error: "DUPLICATE_SEQUENCE_NUMBER",
          message: `producer ${batch.producerId} sequence ${batch.baseSequence} was already written (expected ${expected})`,
        };
      }
      return {
        kind: "error",
        error: "OUT_OF_ORDER_SEQUENCE_NUMBER",
        message: `producer ${batch.producerId} epoch ${batch.producerEpoch}: expected sequence ${expected}, got ${batch.baseSequence}`,
      };
    }
  }
  if (!batch.isTransactional && entry.openTransaction !== null) {
    return {
      kind: "error",
      error: "INVALID_TXN_STATE",
      message: `producer ${batch.producerId} has an open transaction; a non-transactional batch is refused`,
    };
  }
  return { kind: "append" };
}

function firstSequenceError(batch: BatchIdentity, why: string): BatchCheck {
  return {
    kind: "error",
    error: "OUT_OF_ORDER_SEQUENCE_NUMBER",
    message: `producer ${batch.producerId} ${why}: its first batch must have sequence 0, got ${batch.baseSequence}`,
  };
}

/** Records an appended batch (after checkBatch said "append"). */
export function recordBatch(
  entry: ProducerEntry | undefined,
  batch: BatchIdentity,
  baseOffset: bigint,
  appendTimeMs: number,
): ProducerEntry {
  const next: ProducerEntry = entry ?? {
    producerEpoch: batch.producerEpoch,
    batches: [],
    lastTimestampMs: appendTimeMs,
    coordinatorEpoch: -1,
    openTransaction: null,
    markersApplied: 0,
    lastEndedEpoch: -1,
  };
  if (batch.producerEpoch !== next.producerEpoch) {
    next.producerEpoch = batch.producerEpoch;
    next.batches = [];
  }
  next.batches.push({
    firstSequence: batch.baseSequence,
    lastSequence: lastSequenceOf(batch.baseSequence, batch.recordCount),
    baseOffset,
    lastOffset: baseOffset + BigInt(batch.recordCount - 1),
    appendTimeMs,
  });
  if (next.batches.length > BATCHES_REMEMBERED_MAX) next.batches.shift();
  next.lastTimestampMs = appendTimeMs;
  if (batch.isTransactional && next.openTransaction === null) {
    next.openTransaction = { firstOffset: baseOffset, startTimeMs: appendTimeMs };
  }
  return next;
}

export interface MarkerIdentity {
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly coordinatorEpoch: number;
  /** The marker's epoch is one above its transaction's data (partition-entry.ts MarkerEntry). */
  readonly epochBumped: boolean;
}

export type MarkerCheck =
  | { readonly kind: "apply" }
  /** A late copy of a bumped marker whose transaction already ended here: acknowledged, no effect. */
  | { readonly kind: "duplicate" }
  | { readonly kind: "error"; readonly error: ErrorName; readonly message: string };

/** Decides what to do with a marker. Does not mutate. */
export function checkMarker(entry: ProducerEntry | undefined, marker: MarkerIdentity): MarkerCheck {
  if (entry === undefined) return { kind: "apply" };
  if (marker.producerEpoch < entry.producerEpoch) {
    return {
      kind: "error",
      error: "INVALID_PRODUCER_EPOCH",
      message: `marker for producer ${marker.producerId} has epoch ${marker.producerEpoch}, older than ${entry.producerEpoch}`,
    };
  }
  if (marker.coordinatorEpoch < entry.coordinatorEpoch) {
    return {
      kind: "error",
      error: "TRANSACTION_COORDINATOR_FENCED",
      message: `marker for producer ${marker.producerId} has coordinator epoch ${marker.coordinatorEpoch}, older than ${entry.coordinatorEpoch}`,
    };
  }
  // A bumped marker is one epoch above its transaction's data, so the epoch it carries is
  // already the producer's next one (transactions V2: the next transaction's data uses it).
  // With the same epoch here it is a late copy of an earlier marker: it must not close the
  // transaction that epoch opened since (Kafka refuses it the same way), and with nothing open
  // it changes nothing.
  if (marker.epochBumped && marker.producerEpoch === entry.producerEpoch) {
    if (entry.openTransaction === null) return { kind: "duplicate" };
    return {
      kind: "error",
      error: "INVALID_PRODUCER_EPOCH",
      message: `marker for producer ${marker.producerId} with bumped epoch ${marker.producerEpoch} would close the transaction that epoch opened at offset ${entry.openTransaction.firstOffset}: a late copy of an earlier marker`,
    };
  }
  return { kind: "apply" };
}

/** Applies an accepted marker: closes the open transaction (if any) and adopts the epochs. */
export function recordMarker(
  entry: ProducerEntry | undefined,
  marker: MarkerIdentity,
  appendTimeMs: number,
): ProducerEntry {
  const next: ProducerEntry = entry ?? {
    producerEpoch: marker.producerEpoch,
    batches: [],
    lastTimestampMs: appendTimeMs,
    coordinatorEpoch: marker.coordinatorEpoch,
    openTransaction: null,
    markersApplied: 0,
    lastEndedEpoch: -1,
  };
  if (marker.producerEpoch !== next.producerEpoch) {
    // A bumped epoch (transactions V2, or a fencing abort) starts a new sequence space.
    next.producerEpoch = marker.producerEpoch;
    next.batches = [];
  }
  next.coordinatorEpoch = Math.max(next.coordinatorEpoch, marker.coordinatorEpoch);
  next.openTransaction = null;
  next.markersApplied = (next.markersApplied + 1) % MARKER_COUNT_MODULUS;
  next.lastEndedEpoch = Math.max(
    next.lastEndedEpoch,
    marker.producerEpoch - (marker.epochBumped ? 1 : 0),
  );
  next.lastTimestampMs = appendTimeMs;
  return next;
}
