// The replicated state of one topic partition: a pure, deterministic StateMachine over the
// partition's Raft log. Offsets are assigned at apply (dense; a control marker takes one),
// sequence and epoch checks happen at apply, so every replica reaches the same state. The
// retained records live in memory and in the Raft log (retainFromIndex keeps the host from
// compacting their entries); snapshots hold metadata only, and restore() re-attaches the
// records from the entries the host hands back.
import type { AppliedEntry, StateMachine } from "../../libs/raft-host/state-machine.js";
import type { ErrorName } from "../../libs/common/errors.js";
import { isTernError } from "../../libs/common/errors.js";
import { decodeEntry, recordSizeBytes, stampRecords, type BatchEntry, type EntryHeader, type MarkerEntry, type RecordData } from "./partition-entry.js";
import { PartitionLog, type StoredBatch } from "./partition-log.js";
import { checkBatch, checkMarker, recordBatch, recordMarker, type ProducerEntry } from "./producer-state.js";
import { TransactionIndex } from "./transaction-index.js";
import { decodeSnapshot, encodeSnapshot } from "./partition-snapshot.js";
import { copyBytes } from "./byte-codec.js";
import { takeOwnedEntry } from "./owned-entries.js";
import { BROKER_LIMITS } from "./broker-limits.js";

export type Isolation = "READ_UNCOMMITTED" | "READ_COMMITTED";

/** How often (in replicated time) apply() scans for idle producers to expire. */
const PRODUCER_EXPIRY_CHECK_INTERVAL_MS = 10_000;
/** Bound on the batches one read examines (filtered ones included). */
export const READ_BATCHES_EXAMINED_MAX = 20_000;

export interface AppendResult {
  /** null on success (also for a duplicate, which carries the original offsets). */
  readonly error: ErrorName | null;
  readonly message: string;
  readonly baseOffset: bigint;
  readonly lastOffset: bigint;
  readonly appendTimeMs: number;
  readonly logStartOffset: bigint;
  readonly duplicate: boolean;
}

export interface ReadBatch {
  readonly baseOffset: bigint;
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly baseSequence: number;
  readonly isTransactional: boolean;
  readonly records: readonly RecordData[];
}

export interface ReadResult {
  readonly error: "OFFSET_OUT_OF_RANGE" | null;
  readonly batches: ReadBatch[];
  readonly bytes: number;
  readonly nextFetchOffset: bigint;
  readonly highWatermark: bigint;
  readonly lastStableOffset: bigint;
  readonly logStartOffset: bigint;
}

export interface ProducerView {
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly lastSequence: number;
  readonly lastTimestampMs: number;
  readonly coordinatorEpoch: number;
  readonly currentTxnStartOffset: bigint;
  readonly currentTxnStartTimeMs: number;
}

export class PartitionStateMachine implements StateMachine<AppendResult> {
  private log = new PartitionLog();
  private producers = new Map<bigint, ProducerEntry>();
  private aborted = new TransactionIndex();
  /** Producers with an open transaction here: keeps the LSO cheap with many idle producers. */
  private openTransactions = new Set<bigint>();
  /** Replicated time: the max append time applied so far. */
  private clockMs = 0;
  private lastExpiryCheckMs = 0;
  /** The last index given to apply() or restore(). */
  private appliedIndex = 0;
  private readonly appendListeners = new Set<() => void>();
  private readonly transactionEndListeners = new Set<(producerId: bigint | undefined) => void>();

  constructor(readonly topic: string, readonly partition: number) {}

  // ---- StateMachine -------------------------------------------------------------------

  apply(entry: AppliedEntry): AppendResult {
    this.appliedIndex = entry.index;
    if (entry.data.length === 0) return this.noResult(null, "");
    let decoded;
    // The batch keeps the entry's bytes (records decode from them on demand): the very buffer
    // when this broker proposed it or when the log holds it as a buffer of its own (so the log and
    // the batch share it), else one copy, so a view never pins a larger buffer.
    const raw = takeOwnedEntry(entry.data) || isWholeBuffer(entry.data) ? entry.data : copyBytes(entry.data);
    try {
      decoded = decodeEntry(raw, true);
    } catch (e) {
      if (isTernError(e)) return this.noResult("CORRUPT_MESSAGE", e.message);
      throw e;
    }
    this.advanceClock(decoded.header);
    let result: AppendResult;
    if (decoded.kind === "batch") result = this.applyBatch(decoded, raw, entry.index);
    else if (decoded.kind === "marker") result = this.applyMarker(decoded, entry.index);
    else result = this.noResult(null, "");
    this.enforceRetention(decoded.header);
    if (result.error === null && !result.duplicate && result.baseOffset >= 0n) this.notifyAppend();
    return result;
  }

  snapshot(): Uint8Array {
    return encodeSnapshot({
      clockMs: this.clockMs,
      lastExpiryCheckMs: this.lastExpiryCheckMs,
      logStartOffset: this.log.logStartOffset(),
      logEndOffset: this.log.logEndOffset(),
      producers: [...this.producers],
      aborted: [...this.aborted.all()],
      batches: [...this.log.iterate()],
    });
  }

  restore(data: Uint8Array, index: number, retained: readonly AppliedEntry[]): void {
    // The retained batches become views into the entries' bytes (kept by the Raft log too).
    const s = decodeSnapshot(data, index, retained);
    this.appliedIndex = index;
    this.clockMs = s.clockMs;
    this.lastExpiryCheckMs = s.lastExpiryCheckMs;
    this.log = PartitionLog.from(s.logStartOffset, s.logEndOffset, s.batches);
    this.producers = new Map(s.producers);
    this.openTransactions = new Set(s.producers.filter(([, p]) => p.openTransaction !== null).map(([id]) => id));
    this.aborted = new TransactionIndex();
    for (const a of s.aborted) this.aborted.add(a);
    this.notifyAppend();
    // Markers inside the snapshot were never applied one by one here.
    for (const listener of this.transactionEndListeners) listener(undefined);
  }

  /** The entry of the oldest retained batch: the host keeps the log from there. */
  retainFromIndex(): number {
    return this.log.first()?.index ?? this.appliedIndex + 1;
  }

  // ---- Queries (leader side) ----------------------------------------------------------

  highWatermark(): bigint { return this.log.logEndOffset(); }
  logStartOffset(): bigint { return this.log.logStartOffset(); }
  retainedBytes(): number { return this.log.sizeBytes(); }
  replicatedTimeMs(): number { return this.clockMs; }

  /** First offset of the earliest open transaction, or the high watermark. */
  lastStableOffset(): bigint {
    let lso = this.log.logEndOffset();
    for (const id of this.openTransactions) {
      const first = this.producers.get(id)!.openTransaction!.firstOffset;
      if (first < lso) lso = first;
    }
    return lso;
  }

  producer(producerId: bigint): Readonly<ProducerEntry> | undefined {
    return this.producers.get(producerId);
  }

  describeProducers(): ProducerView[] {
    const out: ProducerView[] = [];
    for (const [producerId, p] of this.producers) {
      const last = p.batches[p.batches.length - 1];
      out.push({
        producerId,
        producerEpoch: p.producerEpoch,
        lastSequence: last?.lastSequence ?? -1,
        lastTimestampMs: p.lastTimestampMs,
        coordinatorEpoch: p.coordinatorEpoch,
        currentTxnStartOffset: p.openTransaction?.firstOffset ?? -1n,
        currentTxnStartTimeMs: p.openTransaction?.startTimeMs ?? -1,
      });
    }
    return out;
  }

  abortedTransactions(): ReturnType<TransactionIndex["all"]> { return this.aborted.all(); }

  /** Called after every apply that appended something (and after restore): wakes long-polls. */
  onAppend(listener: () => void): () => void {
    this.appendListeners.add(listener);
    return () => this.appendListeners.delete(listener);
  }

  /**
   * Called for every accepted COMMIT/ABORT marker with its producer id, also when nothing was
   * open here (a verified partition that got no data), and with undefined after restore.
   */
  onTransactionEnd(listener: (producerId: bigint | undefined) => void): () => void {
    this.transactionEndListeners.add(listener);
    return () => this.transactionEndListeners.delete(listener);
  }

  /**
   * Records from fetchOffset. READ_UNCOMMITTED stops at the high watermark, READ_COMMITTED at
   * the LSO and drops aborted batches; control markers never appear. The first batch is
   * returned even if larger than maxBytes when firstBatchAlways is set (progress guarantee).
   */
  read(fetchOffset: bigint, maxBytes: number, isolation: Isolation, firstBatchAlways: boolean): ReadResult {
    const highWatermark = this.log.logEndOffset();
    const lastStableOffset = this.lastStableOffset();
    const logStartOffset = this.log.logStartOffset();
    const base = { highWatermark, lastStableOffset, logStartOffset };
    if (fetchOffset < logStartOffset || fetchOffset > highWatermark) {
      return { ...base, error: "OFFSET_OUT_OF_RANGE", batches: [], bytes: 0, nextFetchOffset: fetchOffset };
    }
    const limit = isolation === "READ_COMMITTED" ? lastStableOffset : highWatermark;
    const batches: ReadBatch[] = [];
    let bytes = 0;
    let next = fetchOffset;
    let position = this.log.positionOf(fetchOffset);
    for (let examined = 0; examined < READ_BATCHES_EXAMINED_MAX; examined++, position++) {
      const b = this.log.at(position);
      if (b === undefined || b.lastOffset >= limit) break;
      if (b.control !== null || (isolation === "READ_COMMITTED" && b.isTransactional && this.aborted.isAborted(b.producerId, b.baseOffset))) {
        next = b.lastOffset + 1n;
        continue;
      }
      const trimmed = readBatch(b, fetchOffset);
      const stored = b.baseOffset >= fetchOffset ? b.sizeBytes : trimmed.records.reduce((n, r) => n + recordSizeBytes(r), 0);
      // Counted as on the wire (maxBytes bounds the Fetch answer): batch fields and record framing too.
      const size = stored + BROKER_LIMITS.fetchBatchWireBytes + Number(b.lastOffset - trimmed.baseOffset + 1n) * BROKER_LIMITS.fetchRecordWireBytes;
      if (bytes + size > maxBytes && !(firstBatchAlways && batches.length === 0)) break;
      batches.push(trimmed);
      bytes += size;
      next = b.lastOffset + 1n;
    }
    return { ...base, error: null, batches, bytes, nextFetchOffset: next };
  }

  /** The first offset whose record timestamp is at or after timestampMs, or null. */
  offsetForTimestamp(timestampMs: number): { offset: bigint; timestampMs: number } | null {
    for (const b of this.log.iterate()) {
      if (b.control !== null || b.maxTimestampMs < timestampMs) continue;
      const records = storedRecords(b);
      for (let i = 0; i < records.length; i++) {
        const t = records[i]!.timestampMs;
        if (t >= timestampMs) return { offset: b.baseOffset + BigInt(i), timestampMs: t };
      }
    }
    return null;
  }

  // ---- Apply internals ----------------------------------------------------------------

  private noResult(error: ErrorName | null, message: string): AppendResult {
    return { error, message, baseOffset: -1n, lastOffset: -1n, appendTimeMs: this.clockMs, logStartOffset: this.log.logStartOffset(), duplicate: false };
  }

  private advanceClock(header: EntryHeader): void {
    if (header.appendTimeMs > this.clockMs) this.clockMs = header.appendTimeMs;
    if (this.clockMs - this.lastExpiryCheckMs < PRODUCER_EXPIRY_CHECK_INTERVAL_MS) return;
    this.lastExpiryCheckMs = this.clockMs;
    if (header.producerExpiryMs < 0) return;
    for (const [id, p] of this.producers) {
      if (p.openTransaction === null && this.clockMs - p.lastTimestampMs > header.producerExpiryMs) this.producers.delete(id);
    }
  }

  private applyBatch(e: BatchEntry, raw: Uint8Array, index: number): AppendResult {
    if (e.records.length === 0) return this.noResult("INVALID_RECORD", "empty batch");
    const idempotent = e.producerId >= 0n;
    if (!idempotent && e.isTransactional) return this.noResult("INVALID_RECORD", "a transactional batch needs a producer id");
    const identity = { producerId: e.producerId, producerEpoch: e.producerEpoch, baseSequence: e.baseSequence, recordCount: e.records.length, isTransactional: e.isTransactional };
    const existing = idempotent ? this.producers.get(e.producerId) : undefined;
    if (idempotent) {
      const check = checkBatch(existing, identity);
      if (check.kind === "error") return this.noResult(check.error, check.message);
      if (check.kind === "duplicate") {
        const d = check.batch;
        return { error: null, message: "duplicate of an earlier batch", baseOffset: d.baseOffset, lastOffset: d.lastOffset, appendTimeMs: d.appendTimeMs, logStartOffset: this.log.logStartOffset(), duplicate: true };
      }
    }
    const baseOffset = this.log.logEndOffset();
    const appendTimeMs = this.clockMs;
    let sizeBytes = 0;
    let maxTimestampMs = -1;
    for (const r of e.records) {
      sizeBytes += recordSizeBytes(r);
      // As stampRecords() stamps them when read: no timestamp means the append time.
      const timestampMs = r.timestampMs > 0 ? r.timestampMs : appendTimeMs;
      if (timestampMs > maxTimestampMs) maxTimestampMs = timestampMs;
    }
    const stored: StoredBatch = {
      index,
      baseOffset,
      lastOffset: baseOffset + BigInt(e.records.length - 1),
      producerId: e.producerId,
      producerEpoch: e.producerEpoch,
      baseSequence: e.baseSequence,
      isTransactional: e.isTransactional,
      control: null,
      appendTimeMs,
      maxTimestampMs,
      sizeBytes,
      raw,
    };
    this.log.append(stored);
    if (idempotent) {
      this.producers.set(e.producerId, recordBatch(existing, identity, baseOffset, appendTimeMs));
      if (e.isTransactional) this.openTransactions.add(e.producerId);
    }
    return { error: null, message: "", baseOffset, lastOffset: stored.lastOffset, appendTimeMs, logStartOffset: this.log.logStartOffset(), duplicate: false };
  }

  private applyMarker(e: MarkerEntry, index: number): AppendResult {
    const existing = this.producers.get(e.producerId);
    const refused = checkMarker(existing, e);
    if (refused !== null) return this.noResult(refused.error, refused.message);
    const open = existing?.openTransaction ?? null;
    this.producers.set(e.producerId, recordMarker(existing, e, this.clockMs));
    this.openTransactions.delete(e.producerId);
    for (const listener of this.transactionEndListeners) listener(e.producerId);
    if (open === null) {
      // Nothing open here: a retried marker, or a partition that got no data. Harmless no-op.
      return { ...this.noResult(null, "no open transaction"), duplicate: true };
    }
    const offset = this.log.logEndOffset();
    this.log.append({
      index,
      baseOffset: offset,
      lastOffset: offset,
      producerId: e.producerId,
      producerEpoch: e.producerEpoch,
      baseSequence: -1,
      isTransactional: true,
      control: e.controlType,
      appendTimeMs: this.clockMs,
      maxTimestampMs: this.clockMs,
      sizeBytes: 0,
      raw: EMPTY,
    });
    if (e.controlType === "ABORT") this.aborted.add({ producerId: e.producerId, firstOffset: open.firstOffset, lastOffset: offset });
    return { error: null, message: "", baseOffset: offset, lastOffset: offset, appendTimeMs: this.clockMs, logStartOffset: this.log.logStartOffset(), duplicate: false };
  }

  private enforceRetention(header: EntryHeader): void {
    const now = this.clockMs;
    const dropped = this.log.dropWhile((b, retainedBytes) => {
      const tooOld = header.retentionMs >= 0 && now - b.appendTimeMs > header.retentionMs;
      // By size, the newest batch always stays so that it can be read.
      const tooBig = header.retentionBytes >= 0 && retainedBytes > header.retentionBytes && b.lastOffset + 1n < this.log.logEndOffset();
      return tooOld || tooBig;
    });
    if (dropped > 0) this.aborted.trimBefore(this.log.logStartOffset());
  }

  private notifyAppend(): void {
    for (const listener of this.appendListeners) listener();
  }
}

const EMPTY = new Uint8Array(0);

function isWholeBuffer(data: Uint8Array): boolean {
  return data.byteOffset === 0 && data.byteLength === data.buffer.byteLength;
}

/** A data batch's records, decoded from its entry bytes (views into them), stamped as at apply. */
function storedRecords(b: StoredBatch): readonly RecordData[] {
  if (b.control !== null) return [];
  const entry = decodeEntry(b.raw, true);
  if (entry.kind !== "batch") throw new Error(`batch at ${b.baseOffset} holds a ${entry.kind} entry`);
  return stampRecords(entry.records, b.appendTimeMs);
}

/** The batch as read from fromOffset on (the records before it dropped). */
function readBatch(b: StoredBatch, fromOffset: bigint): ReadBatch {
  const records = storedRecords(b);
  const skip = b.baseOffset >= fromOffset ? 0 : Number(fromOffset - b.baseOffset);
  return {
    baseOffset: b.baseOffset + BigInt(skip),
    producerId: b.producerId,
    producerEpoch: b.producerEpoch,
    baseSequence: b.baseSequence < 0 ? b.baseSequence : b.baseSequence + skip,
    isTransactional: b.isTransactional,
    records: skip === 0 ? records : records.slice(skip),
  };
}
