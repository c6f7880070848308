// The state of one transactional id, as written to the transaction log, and the pure rules of
// its transitions (Kafka's TransactionMetadata). Every function here is deterministic: time is
// an argument. The coordinator builds the next record with these functions, proposes it, and
// it takes effect only when the state machine applies it.
import { assert } from "../../libs/common/assert.js";
import type { ErrorName } from "../../libs/common/errors.js";

export type TxnState =
  "Empty" | "Ongoing" | "PrepareCommit" | "PrepareAbort" | "CompleteCommit" | "CompleteAbort";

/** Why a transaction ended: a retry of EndTxn is recognised only for "client". */
export type EndReason = "client" | "fence" | "timeout" | "admin";

export interface TopicPartitionRef {
  readonly topic: string;
  readonly partition: number;
}

/** One log record: the full latest state of one transactional id. */
export interface TxnRecord {
  readonly transactionalId: string;
  /** The producer id and epoch the client must use for its next request. */
  readonly producerId: bigint;
  readonly producerEpoch: number;
  /** The identity used just before the last bump (-1n / -1 if none): recognises retries. */
  readonly lastProducerId: bigint;
  readonly lastProducerEpoch: number;
  readonly timeoutMs: number;
  readonly state: TxnState;
  /** Sorted by topic then partition, no duplicates. */
  readonly partitions: readonly TopicPartitionRef[];
  /** Wall-clock ms when the current transaction started (0 when none is open). */
  readonly txnStartTimeMs: number;
  /** Wall-clock ms of this record, stamped by the leader: time travels in the record. */
  readonly updateTimeMs: number;
  /** Set in Prepare-/Complete-state states: why the last transaction ended. */
  readonly endReason: EndReason | null;
}

/** Kafka's Short.MaxValue: an epoch never exceeds it; a client never holds it. */
export const PRODUCER_EPOCH_MAX = 32767;
export const NO_PRODUCER_ID = -1n;
export const NO_PRODUCER_EPOCH = -1;
/** Bound on the partitions of one transaction. */
export const TXN_PARTITIONS_MAX = 10_000;

/** Which states a record may follow (undefined = the id does not exist yet). */
export const VALID_PREVIOUS_STATES: Readonly<Record<TxnState, readonly (TxnState | undefined)[]>> =
  {
    Empty: [undefined, "Empty", "CompleteCommit", "CompleteAbort"],
    // From Prepare*: the Complete* folded into the next transaction's first add, written once
    // every marker was acknowledged (transaction-coordinator.ts, complete).
    Ongoing: [
      "Empty",
      "Ongoing",
      "CompleteCommit",
      "CompleteAbort",
      "PrepareCommit",
      "PrepareAbort",
    ],
    // From Empty/Complete*: an EndTxn of a transaction with no partitions (V2 bumps the epoch anyway).
    PrepareCommit: ["Ongoing", "Empty", "CompleteCommit", "CompleteAbort"],
    PrepareAbort: ["Ongoing", "Empty", "CompleteCommit", "CompleteAbort"],
    CompleteCommit: ["PrepareCommit"],
    CompleteAbort: ["PrepareAbort"],
  };

export function isValidTransition(from: TxnState | undefined, to: TxnState): boolean {
  return VALID_PREVIOUS_STATES[to].includes(from);
}

export function isPrepare(state: TxnState): state is "PrepareCommit" | "PrepareAbort" {
  return state === "PrepareCommit" || state === "PrepareAbort";
}

export function isComplete(state: TxnState): state is "CompleteCommit" | "CompleteAbort" {
  return state === "CompleteCommit" || state === "CompleteAbort";
}

export function partitionKey(tp: TopicPartitionRef): string {
  return `${tp.topic}/${tp.partition}`;
}

export function comparePartitions(a: TopicPartitionRef, b: TopicPartitionRef): number {
  if (a.topic !== b.topic) return a.topic < b.topic ? -1 : 1;
  return a.partition - b.partition;
}

/** Sorted union without duplicates. */
export function mergePartitions(
  a: readonly TopicPartitionRef[],
  b: readonly TopicPartitionRef[],
): TopicPartitionRef[] {
  const byKey = new Map<string, TopicPartitionRef>();
  for (const tp of [...a, ...b])
    byKey.set(partitionKey(tp), { topic: tp.topic, partition: tp.partition });
  return [...byKey.values()].sort(comparePartitions);
}

/** The identity markers of a Prepare-/Complete-state record carry: the transaction's pid with its epoch bumped (V2), or unchanged (a V1 end, keptEpoch). */
export function markerProducer(record: TxnRecord): { producerId: bigint; producerEpoch: number } {
  assert(
    isPrepare(record.state) || isComplete(record.state),
    () => `markerProducer in state ${record.state}`,
  );
  assert(record.lastProducerId >= 0n, "a completing transaction has a last producer id");
  if (keptEpoch(record))
    return { producerId: record.producerId, producerEpoch: record.producerEpoch };
  return { producerId: record.lastProducerId, producerEpoch: record.lastProducerEpoch + 1 };
}

/**
 * Whether a Prepare-/Complete-state record ended its transaction the V1 way (Kafka clients
 * whose EndTxn predates transactions V2, prepareEnd's keepEpoch): the identity did not change.
 * A V2 end always bumps, so the record itself says which it was (no field in the log).
 */
export function keptEpoch(record: TxnRecord): boolean {
  return (
    (isPrepare(record.state) || isComplete(record.state)) &&
    record.lastProducerId === record.producerId &&
    record.lastProducerEpoch === record.producerEpoch
  );
}

/**
 * Checks the producer id and epoch of a request against the record. Old epochs are
 * PRODUCER_FENCED, except the epoch a timeout aborted, which is TRANSACTION_TIMED_OUT.
 */
export function checkProducer(
  record: TxnRecord,
  producerId: bigint,
  producerEpoch: number,
): ErrorName | undefined {
  const timedOutIdentity =
    record.endReason === "timeout" &&
    producerId === record.lastProducerId &&
    producerEpoch === record.lastProducerEpoch;
  if (timedOutIdentity && (isPrepare(record.state) || isComplete(record.state)))
    return "TRANSACTION_TIMED_OUT";
  if (producerId !== record.producerId) {
    // The id rotated on epoch exhaustion: the previous identity is an older instance.
    if (producerId === record.lastProducerId) return "PRODUCER_FENCED";
    return "INVALID_PRODUCER_ID_MAPPING";
  }
  if (producerEpoch < record.producerEpoch) return "PRODUCER_FENCED";
  if (producerEpoch > record.producerEpoch) return "INVALID_PRODUCER_EPOCH";
  return undefined;
}

/** A new transactional id: fresh producer id, epoch 0. */
export function initialRecord(
  transactionalId: string,
  producerId: bigint,
  timeoutMs: number,
  nowMs: number,
): TxnRecord {
  return {
    transactionalId,
    producerId,
    producerEpoch: 0,
    lastProducerId: NO_PRODUCER_ID,
    lastProducerEpoch: NO_PRODUCER_EPOCH,
    timeoutMs,
    state: "Empty",
    partitions: [],
    txnStartTimeMs: 0,
    updateTimeMs: nowMs,
    endReason: null,
  };
}

/** Whether bumping `epoch` needs a new producer id (the bumped epoch must stay below the max). */
export function needsRotation(epoch: number): boolean {
  return epoch + 1 >= PRODUCER_EPOCH_MAX;
}

/**
 * InitProducerId on an existing id with no open transaction: bump the epoch (fencing older
 * instances) or rotate to `nextProducerId` when the epoch is exhausted. The identity before the
 * bump is kept as the "last" one only when the request presented it (`fromCurrentIdentity`: a
 * KIP-360 re-init of the instance that holds it), so that the instance's retry of this very
 * init is recognised. A request that presented no identity is a new instance: Kafka records
 * last epoch -1 then, since the previous identity belongs to an instance this bump fences, and
 * an older instance re-initialising with it must be PRODUCER_FENCED, never handed the new one.
 */
export function bumpForInit(
  record: TxnRecord,
  timeoutMs: number,
  nowMs: number,
  nextProducerId: bigint | undefined,
  fromCurrentIdentity: boolean,
): TxnRecord {
  assert(
    record.state === "Empty" || isComplete(record.state),
    () => `bumpForInit in state ${record.state}`,
  );
  const rotate = needsRotation(record.producerEpoch);
  assert(!rotate || nextProducerId !== undefined, "rotation needs a new producer id");
  return {
    ...record,
    producerId: rotate ? nextProducerId! : record.producerId,
    producerEpoch: rotate ? 0 : record.producerEpoch + 1,
    // The id is kept even for a new instance: after a rotation it still marks the old id as fenced.
    lastProducerId: record.producerId,
    lastProducerEpoch: fromCurrentIdentity ? record.producerEpoch : NO_PRODUCER_EPOCH,
    timeoutMs,
    state: "Empty",
    partitions: [],
    txnStartTimeMs: 0,
    updateTimeMs: nowMs,
    endReason: null,
  };
}

/** AddPartitionsToTxn / AddOffsetsToTxn: open the transaction or widen it. */
export function addPartitions(
  record: TxnRecord,
  partitions: readonly TopicPartitionRef[],
  nowMs: number,
): TxnRecord {
  assert(
    record.state === "Ongoing" || record.state === "Empty" || isComplete(record.state),
    () => `addPartitions in state ${record.state}`,
  );
  const opening = record.state !== "Ongoing";
  return {
    ...record,
    state: "Ongoing",
    partitions: mergePartitions(opening ? [] : record.partitions, partitions),
    txnStartTimeMs: opening ? nowMs : record.txnStartTimeMs,
    updateTimeMs: nowMs,
    endReason: opening ? null : record.endReason,
  };
}

/**
 * The decision point: PrepareCommit / PrepareAbort. V2: the epoch is bumped here; markers carry
 * the bumped epoch of the transaction's producer id, so nothing of the old epoch is accepted
 * afterwards. A client-driven end may rotate the id (nextProducerId) when the epoch is
 * exhausted; a fence or timeout keeps the id and only bumps (no client receives that epoch).
 * keepEpoch (V1, only for a client's end): Kafka clients whose EndTxn predates V2 (librdkafka,
 * kafkajs) go on with the same id and epoch, so nothing is bumped and markers carry that epoch
 * (the partitions keep the producer's sequence space, as in Kafka); last = current marks it.
 */
export function prepareEnd(
  record: TxnRecord,
  commit: boolean,
  reason: EndReason,
  nowMs: number,
  nextProducerId: bigint | undefined,
  keepEpoch = false,
): TxnRecord {
  assert(!(keepEpoch && reason !== "client"), "only a client's end keeps the epoch");
  if (keepEpoch) {
    assert(
      record.state === "Ongoing" || record.state === "Empty" || isComplete(record.state),
      () => `prepareEnd in state ${record.state}`,
    );
    return {
      ...record,
      lastProducerId: record.producerId,
      lastProducerEpoch: record.producerEpoch,
      state: commit ? "PrepareCommit" : "PrepareAbort",
      partitions: record.state === "Ongoing" ? record.partitions : [],
      updateTimeMs: nowMs,
      endReason: reason,
    };
  }
  assert(
    record.state === "Ongoing" || record.state === "Empty" || isComplete(record.state),
    () => `prepareEnd in state ${record.state}`,
  );
  assert(!(commit && reason !== "client"), "only a client commits");
  assert(
    record.producerEpoch < PRODUCER_EPOCH_MAX,
    "the current epoch leaves room for the marker epoch",
  );
  const rotate = reason === "client" && needsRotation(record.producerEpoch);
  assert(!rotate || nextProducerId !== undefined, "rotation needs a new producer id");
  return {
    ...record,
    producerId: rotate ? nextProducerId! : record.producerId,
    producerEpoch: rotate ? 0 : record.producerEpoch + 1,
    lastProducerId: record.producerId,
    lastProducerEpoch: record.producerEpoch,
    state: commit ? "PrepareCommit" : "PrepareAbort",
    partitions: record.state === "Ongoing" ? record.partitions : [],
    updateTimeMs: nowMs,
    endReason: reason,
  };
}

/** Every marker acknowledged: CompleteCommit / CompleteAbort. */
export function completeEnd(record: TxnRecord, nowMs: number): TxnRecord {
  assert(isPrepare(record.state), () => `completeEnd in state ${record.state}`);
  return {
    ...record,
    state: record.state === "PrepareCommit" ? "CompleteCommit" : "CompleteAbort",
    partitions: [],
    txnStartTimeMs: 0,
    updateTimeMs: nowMs,
  };
}

/** Whether an open transaction has outlived its timeout at nowMs. */
export function isTimedOut(record: TxnRecord, nowMs: number): boolean {
  return record.state === "Ongoing" && record.txnStartTimeMs + record.timeoutMs <= nowMs;
}

/** Whether an idle id may be forgotten at nowMs. */
export function isExpired(record: TxnRecord, nowMs: number, expirationMs: number): boolean {
  return (
    (record.state === "Empty" || isComplete(record.state)) &&
    record.updateTimeMs + expirationMs <= nowMs
  );
}
