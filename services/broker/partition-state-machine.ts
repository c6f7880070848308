// The replicated state of one topic partition: a pure, deterministic StateMachine over the
// partition's Raft log. Offsets are assigned at apply (dense; a control marker takes one),
// sequence and epoch checks happen at apply, so every replica reaches the same state. Every
// applied entry is written to the partition's segment files (libs/storage) with the offsets it
// took; records are read back from there (or from the process's record cache). Memory holds
// producer state, the aborted-transaction index and the segments' sparse indexes, not records.
// Snapshots hold that metadata only: a snapshot is taken after the segments are synced.
import type { DamageReport } from "../../libs/storage/segmented-log.js";
import type { SegmentReplacement } from "../../libs/storage/segment-replacement.js";
import type {
  AppliedEntry,
  SnapshotPoint,
  StateMachine,
} from "../../libs/raft-host/state-machine.js";
import { AppliedLogBehindError, type AppliedLog } from "../../libs/raft-host/applied-log.js";
import { decodeConfChange } from "../../libs/raft/codec.js";
import { nextConfState } from "../../libs/raft/conf-state.js";
import { EntryType, type ConfState } from "../../libs/raft/types.js";
import { CODEC_NONE, RECORD_HEADER_BYTES, type LogRecord } from "../../libs/storage/log-record.js";
import type { RecordCache } from "../../libs/storage/record-cache.js";
import type { StorageStats } from "../../libs/storage/storage-stats.js";
import { SegmentedAppliedLog } from "../../libs/storage/segmented-applied-log.js";
import type { Checkpoint } from "../../libs/storage/checkpoint.js";
import { SegmentedLog } from "../../libs/storage/segmented-log.js";
import type { CleanProgress } from "../../libs/storage/clean-progress.js";
import {
  dirtyView,
  type CleanOutcome,
  type DirtyView,
  type LogCleaner,
} from "../../libs/storage/log-cleaner.js";
import { partitionCompactionCodec } from "./compaction-codec.js";
import type { ErrorName } from "../../libs/common/errors.js";
import { isTernError, TernError } from "../../libs/common/errors.js";
import {
  decodeEntry,
  recordSizeBytes,
  stampRecords,
  type BatchEntry,
  type DeleteRecordsEntry,
  type EntryHeader,
  type KafkaBatchEntry,
  type MarkerEntry,
  type RecordData,
} from "./partition-entry.js";
import type { CompressionCodec } from "../../libs/records/compression.js";
import { storedBatchRecords } from "./stored-kafka-batch.js";
import {
  checkBatch,
  checkMarker,
  recordBatch,
  recordMarker,
  type BatchIdentity,
  type ProducerEntry,
} from "./producer-state.js";
import { TransactionIndex } from "./transaction-index.js";
import type { Failpoints } from "../../libs/common/failpoints.js";
import { decodeSnapshot, encodeSnapshot } from "./partition-snapshot.js";
import { BROKER_LIMITS } from "./broker-limits.js";

export type Isolation = "READ_UNCOMMITTED" | "READ_COMMITTED";

/** How often (in replicated time) apply() scans for idle producers to expire. */
const PRODUCER_EXPIRY_CHECK_INTERVAL_MS = 10_000;
/** Bound on the batches one read examines (filtered ones included). */
export const READ_BATCHES_EXAMINED_MAX = 20_000;

export interface AppendResult {
  /** NONE on success (also for a duplicate, which carries the original offsets). */
  readonly error: ErrorName;
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
  /** Empty when `asSent` or `control` is set (the records are in its bytes). */
  readonly records: readonly RecordData[];
  /**
   * Only for a read with storedBatches: the v2 batch as stored, whole (baseOffset above is its
   * first offset, also when the fetch offset lies inside it: clients skip records below their
   * fetch offset). The bytes are the stored ones: copy before patching. Absent for a batch an
   * older build stored decoded (partition-entry.ts kind "batch"): its records are set instead.
   */
  readonly asSent?: {
    readonly batch: Uint8Array;
    readonly codec: CompressionCodec;
    readonly recordCount: number;
    /** The offsets it covers (lastOffsetDelta + 1): more than recordCount once cleaned. */
    readonly offsetCount: number;
    /** Cleaned (docs/storage.md, "Compaction"): its records' offsets have gaps; sent as stored. */
    readonly cleaned: boolean;
  };
  /** Only for a read with controlBatches: a transaction marker (one offset), sent as Kafka's control batch. */
  readonly control?: {
    readonly commit: boolean;
    readonly coordinatorEpoch: number;
    readonly timestampMs: number;
  };
}

/** How a read returns batches. */
export interface ReadOptions {
  /** true: as stored (the v2 bytes; the Kafka listener, gRPC by default); false (default): decoded into records. */
  readonly storedBatches?: boolean;
  /** READ_UNCOMMITTED with storedBatches: transaction markers too, as control batches (gRPC). */
  readonly controlBatches?: boolean;
}

/** What a control batch takes on the wire (its header, one record of a 4-byte key and a 6-byte value). */
export const CONTROL_BATCH_BYTES = 80;

export interface ReadResult {
  readonly error: "OFFSET_OUT_OF_RANGE" | "NONE";
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

/** Where and how a partition replica keeps its segments. */
export interface PartitionStorageOptions {
  readonly dir: string;
  readonly cache: RecordCache;
  readonly stats?: StorageStats;
  readonly segmentBytes: number;
  readonly segmentMs: number;
  readonly indexIntervalBytes: number;
  readonly readAheadBytes: number;
  /** The membership of a brand-new replica (its first segment's checkpoint). */
  readonly initialVoters: readonly number[];
  /** Producers whose state the partition keeps (BROKER_LIMITS.producersPerPartitionMax; tests lower it). */
  readonly producersMax?: number;
  /** The process's failpoints, for planted faults (its segments' too); none armed when absent. */
  readonly failpoints?: Failpoints | undefined;
}

/** A brand-new replica's first checkpoint. */
function initialCheckpoint(voters: readonly number[]): Checkpoint {
  return { index: 0, term: 0, nextOffset: 0n, voters, learners: [], state: new Uint8Array(0) };
}

/** Bytes a fetch reads from the files beyond maxBytes (batch framing is counted separately). */
const READ_SLACK_BYTES = 64 * 1024;
/** Rounds of file reads one fetch may make while skipping aborted or control batches. */
const READ_ROUNDS_MAX = 64;

export class PartitionStateMachine implements StateMachine<AppendResult> {
  private producers = new Map<bigint, ProducerEntry>();
  private readonly producersMax: number;
  /** Replicated time before which no producer can be idle enough to give up its place (a scan found none). */
  private noEvictableBeforeMs = 0;
  private aborted: TransactionIndex;
  /** Producers with an open transaction here: keeps the LSO cheap with many idle producers. */
  private openTransactions = new Set<bigint>();
  /** Replicated time: the max append time applied so far. */
  private clockMs = 0;
  /**
   * Where DeleteRecords moved the log start (0 until one did). The log start is the larger of
   * this and the oldest segment's first offset: records below it may still sit in a kept
   * segment, but are never read (docs/storage.md, "Deleting records").
   */
  private deletedBefore = 0n;
  private lastExpiryCheckMs = 0;
  /** The term of the last entry given to apply() or restore(). */
  private appliedTerm = 0;
  /** Largest record timestamp of the batch apply() just accepted (-1 for anything else): its record's. */
  private maxTimestampOfLast = -1;
  /** Set once the host has opened the group (openAt): a later restore() is an installed snapshot. */
  private opened = false;
  /** What a restore at open expects the segments to hold. */
  private restoredAt: { index: number; term: number; nextOffset: bigint } | undefined;
  private confState: ConfState;
  private segmentBytes: number;
  private segmentMs: number;
  private readonly log: SegmentedLog;
  private readonly failpoints: Failpoints | undefined;
  readonly appliedLog: AppliedLog;
  private readonly appendListeners = new Set<() => void>();
  private readonly transactionEndListeners = new Set<(producerId: bigint | undefined) => void>();

  constructor(
    readonly topic: string,
    readonly partition: number,
    storage: PartitionStorageOptions,
  ) {
    this.confState = { voters: [...storage.initialVoters], learners: [], outgoingVoters: [] };
    this.segmentBytes = storage.segmentBytes;
    this.segmentMs = storage.segmentMs;
    this.producersMax = storage.producersMax ?? BROKER_LIMITS.producersPerPartitionMax;
    this.failpoints = storage.failpoints;
    this.aborted = new TransactionIndex(this.failpoints);
    this.log = SegmentedLog.open(storage.dir, storage, initialCheckpoint(this.confState.voters));
    this.appliedLog = new SegmentedAppliedLog(this.log, (applied) => this.openAt(applied));
    this.log.setTailCaching(false); // until this replica leads (onRoleChange)
  }

  /**
   * Creates a new replica's files from the thread pool when its directory does not exist yet
   * (SegmentedLog.prepare): the constructor then opens them.
   */
  static prepare(dir: string, initialVoters: readonly number[]): Promise<boolean> {
    return SegmentedLog.prepare(dir, initialCheckpoint([...initialVoters]));
  }

  /** What opening the segments found (repairs of torn tails, rebuilt indexes). */
  openReport(): SegmentedLog["report"] {
    return this.log.report;
  }

  /** Hears of each damaged segment once (a read that failed its checksum, or scrub()). */
  onStorageDamage(listener: (d: DamageReport) => void): () => void {
    return this.log.onDamage(listener);
  }

  /** Checks every record of the sealed segments in the background (segmented-log.ts scrub). */
  scrub(): Promise<DamageReport[]> {
    return this.log.scrub();
  }

  /** Starts rewriting a damaged sealed segment from another replica's records (segmented-log.ts). */
  beginSegmentReplacement(baseIndex: number): SegmentReplacement | undefined {
    return this.log.beginReplacement(baseIndex);
  }

  /**
   * Applied records from Raft index `from` to `to` (inclusive), about maxBytes of them, as the
   * segments hold them, for another replica repairing a damaged segment. Damage here fails the
   * read (CORRUPT_MESSAGE) and is reported as any read's. Empty when `from` is not applied yet.
   */
  async appliedRecords(
    from: number,
    to: number,
    maxBytes: number,
  ): Promise<{ records: LogRecord[]; firstIndex: number; lastIndex: number }> {
    const firstIndex = this.log.firstIndex();
    const lastIndex = this.log.lastIndex();
    if (from < firstIndex)
      throw new TernError(
        "OFFSET_OUT_OF_RANGE",
        `${this.topic}/${this.partition}: index ${from} is below this replica's log (it starts at ${firstIndex})`,
      );
    const records =
      from > lastIndex
        ? []
        : await this.log.readByIndex(from, maxBytes, Math.min(to, lastIndex) + 1);
    return { records, firstIndex, lastIndex };
  }

  /**
   * One clean of this replica's own segments (docs/storage.md, "Compaction"): never at or above
   * the LSO (taken now; it only moves forward), by the replicated clock.
   */
  clean(
    cleaner: LogCleaner,
    progress: CleanProgress,
    c: { readonly minCompactionLagMs: number; readonly deleteRetentionMs: number },
  ): Promise<CleanOutcome> {
    const codec = partitionCompactionCodec((pid, offset) => this.aborted.covers(pid, offset));
    return cleaner.clean(this.log, codec, progress, {
      nowMs: this.clockMs,
      minCompactionLagMs: c.minCompactionLagMs,
      deleteRetentionMs: c.deleteRetentionMs,
      stableOffset: this.lastStableOffset(),
      segmentBytes: this.segmentBytes,
    });
  }

  /** The dirty part of what a clean may touch now (the cleaner chooses by it). */
  dirtyView(progress: CleanProgress, minCompactionLagMs: number): DirtyView {
    return dirtyView(this.log, progress, {
      nowMs: this.clockMs,
      minCompactionLagMs,
      stableOffset: this.lastStableOffset(),
    });
  }

  /** Where this replica's clean section ends: its log's stored clean point (0: nothing cleaned). */
  firstDirtyOffset(): bigint {
    return this.log.firstDirtyOffset();
  }

  /**
   * What `tern topics describe` shows of this replica's cleaning: the dirty part of what a clean
   * may touch now, from the stored clean point, and the last offset a clean covered (-1: none).
   */
  cleaningState(minCompactionLagMs: number): { view: DirtyView; lastCleanedOffset: bigint } {
    const firstDirtyOffset = this.log.firstDirtyOffset();
    return {
      view: dirtyView(
        this.log,
        { firstDirtyOffset },
        {
          nowMs: this.clockMs,
          minCompactionLagMs,
          stableOffset: this.lastStableOffset(),
        },
      ),
      lastCleanedOffset: firstDirtyOffset - 1n,
    };
  }

  /** The replicated clock: the time of the last timed entry applied (0 before any). */
  replicatedClockMs(): number {
    return this.clockMs;
  }

  /** A follower caches no recent records (the leader serves reads and followers). */
  onRoleChange(isLeader: boolean): void {
    this.log.setTailCaching(isLeader);
  }

  /** Topic configs segment.bytes / segment.ms (local: segment boundaries need not match across replicas). */
  setSegmentConfig(segmentBytes: number, segmentMs: number): void {
    this.segmentBytes = segmentBytes;
    this.segmentMs = segmentMs;
  }

  // ---- StateMachine -------------------------------------------------------------------

  apply(entry: AppliedEntry): AppendResult {
    // A new segment's checkpoint is the state before its first entry: roll before applying it
    // (a checkpoint taken after would carry this entry's producer sequence, and a follower
    // installing it would then refuse the entry as a duplicate and shift every later offset).
    if (
      this.log.shouldRoll(
        RECORD_HEADER_BYTES + entry.data.byteLength,
        this.clockMs,
        this.segmentBytes,
        this.segmentMs,
      )
    ) {
      this.log.roll({
        index: this.log.lastIndex(),
        term: this.log.lastTerm(),
        nextOffset: this.log.nextOffset(),
        voters: this.confState.voters,
        learners: this.confState.learners,
        state: this.snapshotState(),
      });
    }
    this.appliedTerm = entry.term;
    this.maxTimestampOfLast = -1;
    let result: AppendResult;
    let header: EntryHeader | undefined;
    if (entry.type === EntryType.ConfChange) {
      this.confState = nextConfState(this.confState, decodeConfChange(entry.data));
      result = this.noResult("NONE", "");
    } else if (entry.data.length === 0) {
      result = this.noResult("NONE", "");
    } else {
      let decoded;
      try {
        decoded = decodeEntry(entry.data, true);
      } catch (e) {
        if (!isTernError(e)) throw e;
        decoded = undefined;
        result = this.noResult("CORRUPT_MESSAGE", e.message);
      }
      if (decoded !== undefined) {
        header = decoded.header;
        this.advanceClock(decoded.header);
        if (decoded.kind === "batch")
          result = this.applyBatch(
            decoded,
            batchIdentity(decoded),
            maxTimestampOf(decoded.records, this.clockMs),
          );
        else if (decoded.kind === "kafka-batch")
          result = this.applyBatch(decoded, batchIdentity(decoded), decoded.maxTimestampMs);
        else if (decoded.kind === "marker") result = this.applyMarker(decoded);
        else if (decoded.kind === "delete-records") result = this.applyDeleteRecords(decoded);
        else result = this.noResult("NONE", "");
      }
    }
    this.record(entry, result!);
    if (header !== undefined) this.enforceRetention(header);
    if (result!.error === "NONE" && !result!.duplicate && result!.baseOffset >= 0n)
      this.notifyAppend();
    return result!;
  }

  /** Writes the applied entry to the segments, with the offsets it took (apply() rolled first if due). */
  private record(entry: AppliedEntry, result: AppendResult): void {
    const took = result.error === "NONE" && !result.duplicate && result.baseOffset >= 0n;
    const r: LogRecord = {
      index: entry.index,
      term: entry.term,
      entryType: entry.type ?? EntryType.Normal,
      baseOffset: took ? result.baseOffset : -1n,
      offsetCount: took ? Number(result.lastOffset - result.baseOffset + 1n) : 0,
      maxTimestampMs: took ? this.maxTimestampOfLast : -1,
      appendTimeMs: this.clockMs,
      codec: CODEC_NONE,
      data: entry.data,
    };
    this.log.append(r);
  }

  snapshot(): Uint8Array {
    // (The host syncs the segments through appliedLog.sync() before it compacts on this.)
    return this.snapshotState();
  }

  private snapshotState(): Uint8Array {
    return encodeSnapshot({
      clockMs: this.clockMs,
      lastExpiryCheckMs: this.lastExpiryCheckMs,
      logStartOffset: this.logStartOffset(),
      logEndOffset: this.log.nextOffset(),
      producers: [...this.producers],
      aborted: [...this.aborted.all()],
      deletedBefore: this.deletedBefore,
    });
  }

  restore(data: Uint8Array, index: number, at?: SnapshotPoint): void {
    const s = decodeSnapshot(data);
    this.appliedTerm = at?.term ?? this.log.term(index) ?? 0;
    if (at !== undefined) this.confState = at.confState;
    this.clockMs = s.clockMs;
    this.lastExpiryCheckMs = s.lastExpiryCheckMs;
    this.deletedBefore = s.deletedBefore;
    this.producers = new Map(s.producers);
    this.openTransactions = new Set(
      s.producers.filter(([, p]) => p.openTransaction !== null).map(([id]) => id),
    );
    this.aborted = new TransactionIndex(this.failpoints);
    for (const a of s.aborted) this.aborted.add(a);
    if (!this.opened) {
      // A restart: the segments must hold this point; openAt() checks them and cuts what follows.
      this.restoredAt = { index, term: this.appliedTerm, nextOffset: s.logEndOffset };
    } else if (this.keepThrough(index, this.appliedTerm, s.logEndOffset)) {
      // Installed from the leader, of entries our segments already hold: kept up to it.
    } else {
      // Installed from the leader: the log starts after it (the leader streams what follows).
      this.log.resetTo({
        index,
        term: this.appliedTerm,
        nextOffset: s.logEndOffset,
        voters: this.confState.voters,
        learners: this.confState.learners,
        state: data,
      });
    }
    this.aborted.trimBefore(this.logStartOffset());
    this.notifyAppend();
    // Markers inside the snapshot were never applied one by one here.
    for (const listener of this.transactionEndListeners) listener(undefined);
  }

  /** The host's open hook: entries after `applied` are dropped (the host applies them again). */
  private openAt(applied: number): void {
    this.opened = true;
    if (applied === 0) {
      // A new replica, or one whose log starts over: nothing applied, nothing kept.
      this.producers = new Map();
      this.aborted = new TransactionIndex(this.failpoints);
      this.openTransactions = new Set();
      this.clockMs = 0;
      this.lastExpiryCheckMs = 0;
      this.appliedTerm = 0;
      this.deletedBefore = 0n;
      this.log.truncateAfter(0);
      if (this.log.firstIndex() !== 1)
        this.log.resetTo({
          index: 0,
          term: 0,
          nextOffset: 0n,
          voters: this.confState.voters,
          learners: [],
          state: new Uint8Array(0),
        });
      return;
    }
    const at = this.restoredAt;
    if (
      at === undefined ||
      at.index !== applied ||
      !this.keepThrough(applied, at.term, at.nextOffset)
    ) {
      throw new AppliedLogBehindError(
        `${this.topic}/${this.partition}`,
        this.log.lastIndex(),
        applied,
      );
    }
    this.aborted.trimBefore(this.logStartOffset());
  }

  /**
   * Cuts the segments after entry `index` when they hold it, of `term`; true when they then end
   * at nextOffset (what follows is applied again). False: they do not hold that point.
   */
  private keepThrough(index: number, term: number, nextOffset: bigint): boolean {
    if (
      this.log.lastIndex() < index ||
      this.log.firstIndex() > index + 1 ||
      this.log.term(index) !== term
    )
      return false;
    this.log.truncateAfter(index);
    return this.log.nextOffset() === nextOffset;
  }

  // ---- Queries (leader side) ----------------------------------------------------------

  highWatermark(): bigint {
    return this.log.nextOffset();
  }
  /** The first offset a consumer may read: past retention's deletions and DeleteRecords'. */
  logStartOffset(): bigint {
    const segmentsStart = this.log.logStartOffset();
    return this.deletedBefore > segmentsStart ? this.deletedBefore : segmentsStart;
  }
  segmentCount(): number {
    return this.log.segmentCount();
  }
  /** The replicated clock: the latest append time applied (the cleaner's lags are measured on it). */
  replicatedTimeMs(): number {
    return this.clockMs;
  }

  /**
   * First offset of the earliest open transaction, or the high watermark; never below where
   * DeleteRecords moved the log start (Kafka's rule: a consumer resetting to it must be able to
   * fetch there). Retention alone leaves it at the transaction's first offset.
   */
  lastStableOffset(): bigint {
    let lso = this.log.nextOffset();
    for (const id of this.openTransactions) {
      const first = this.producers.get(id)!.openTransaction!.firstOffset;
      if (first < lso) lso = first;
    }
    return lso < this.deletedBefore ? this.deletedBefore : lso;
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

  abortedTransactions(): ReturnType<TransactionIndex["all"]> {
    return this.aborted.all();
  }

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
   * Batches from fetchOffset. READ_UNCOMMITTED stops at the high watermark, READ_COMMITTED at
   * the LSO and drops aborted batches whole; markers appear (as control batches) only for
   * READ_UNCOMMITTED with options.controlBatches. The first batch is
   * returned even if larger than maxBytes when firstBatchAlways is set (progress guarantee).
   * Recent records come from the record cache, older ones from the segment files.
   */
  async read(
    fetchOffset: bigint,
    maxBytes: number,
    isolation: Isolation,
    firstBatchAlways: boolean,
    options: ReadOptions = {},
  ): Promise<ReadResult> {
    const highWatermark = this.log.nextOffset();
    const lastStableOffset = this.lastStableOffset();
    const logStartOffset = this.logStartOffset();
    const base = { highWatermark, lastStableOffset, logStartOffset };
    if (fetchOffset < logStartOffset || fetchOffset > highWatermark) {
      return {
        ...base,
        error: "OFFSET_OUT_OF_RANGE",
        batches: [],
        bytes: 0,
        nextFetchOffset: fetchOffset,
      };
    }
    const limit = isolation === "READ_COMMITTED" ? lastStableOffset : highWatermark;
    const batches: ReadBatch[] = [];
    let bytes = 0;
    let next = fetchOffset;
    let examined = 0;
    for (
      let round = 0;
      round < READ_ROUNDS_MAX && next < limit && examined < READ_BATCHES_EXAMINED_MAX;
      round++
    ) {
      let records: LogRecord[];
      try {
        records = await this.log.readByOffset(
          next,
          Math.max(0, maxBytes - bytes) + READ_SLACK_BYTES,
        );
      } catch (e) {
        // A segment removed by retention under this read: the offset is gone now.
        if (next < this.logStartOffset())
          return {
            ...base,
            logStartOffset: this.logStartOffset(),
            error: "OFFSET_OUT_OF_RANGE",
            batches: [],
            bytes: 0,
            nextFetchOffset: fetchOffset,
          };
        throw e;
      }
      if (records.length === 0) break;
      for (const r of records) {
        examined++;
        const lastOffset = r.baseOffset + BigInt(r.offsetCount) - 1n;
        if (lastOffset >= limit)
          return { ...base, error: "NONE", batches, bytes, nextFetchOffset: next };
        const stored = decodeStored(r);
        if (
          stored?.kind === "marker" &&
          options.controlBatches === true &&
          options.storedBatches === true &&
          isolation === "READ_UNCOMMITTED"
        ) {
          if (bytes + CONTROL_BATCH_BYTES > maxBytes && !(firstBatchAlways && batches.length === 0))
            return { ...base, error: "NONE", batches, bytes, nextFetchOffset: next };
          batches.push(controlBatch(stored, r));
          bytes += CONTROL_BATCH_BYTES;
          next = lastOffset + 1n;
          if (bytes >= maxBytes)
            return { ...base, error: "NONE", batches, bytes, nextFetchOffset: next };
          continue;
        }
        if (
          stored === null ||
          stored.kind === "marker" ||
          // A batch the cleaner emptied: its offsets are a gap (clients move past them).
          (stored.kind === "kafka-batch" && stored.recordCount === 0) ||
          (isolation === "READ_COMMITTED" &&
            stored.isTransactional &&
            this.aborted.isAborted(stored.producerId, r.baseOffset))
        ) {
          next = lastOffset + 1n;
          continue;
        }
        let trimmed: ReadBatch[];
        let size: number;
        if (stored.kind === "kafka-batch" && options.storedBatches === true) {
          // Sent as stored, whole: counted as the bytes it takes on the wire.
          trimmed = [asSentBatch(stored, r)];
          size = stored.batch.byteLength;
        } else {
          if (stored.kind === "kafka-batch" && stored.cleaned) {
            const deltas: number[] = [];
            const records = await storedBatchRecords(stored, deltas);
            trimmed = cleanedReadBatches(stored, records, deltas, r, next);
          } else {
            trimmed = [
              readBatch(
                stored.kind === "batch"
                  ? stored
                  : { ...stored, records: await storedBatchRecords(stored) },
                r,
                next,
              ),
            ];
          }
          size = 0;
          for (const t of trimmed)
            size +=
              t.records.reduce((n, rec) => n + recordSizeBytes(rec), 0) +
              BROKER_LIMITS.fetchBatchWireBytes +
              t.records.length * BROKER_LIMITS.fetchRecordWireBytes;
        }
        // Counted as on the wire (maxBytes bounds the Fetch answer): batch fields and record framing too.
        if (bytes + size > maxBytes && !(firstBatchAlways && batches.length === 0))
          return { ...base, error: "NONE", batches, bytes, nextFetchOffset: next };
        batches.push(...trimmed);
        bytes += size;
        next = lastOffset + 1n;
        if (bytes >= maxBytes)
          return { ...base, error: "NONE", batches, bytes, nextFetchOffset: next };
      }
    }
    return { ...base, error: "NONE", batches, bytes, nextFetchOffset: next };
  }

  /** The first offset whose record timestamp is at or after timestampMs, or null. */
  async offsetForTimestamp(
    timestampMs: number,
  ): Promise<{ offset: bigint; timestampMs: number } | null> {
    // Never below the log start, also when a batch straddles it (Kafka's rule).
    const from = this.logStartOffset();
    // A batch whose header reaches the time may hold no such record any more (a clean removed
    // it, or it lies below the log start): the search goes on after it, a bounded number of times.
    let after = from;
    for (let examined = 0; examined < READ_BATCHES_EXAMINED_MAX; examined++) {
      const r = await this.log.findTimestamp(timestampMs, after);
      if (r === undefined) return null;
      after = r.baseOffset + BigInt(r.offsetCount);
      const stored = decodeStored(r);
      if (stored === null || stored.kind === "marker") continue;
      // A cleaned batch's records are at their offset deltas, not their positions.
      const deltas: number[] = [];
      const records = stampRecords(
        stored.kind === "batch" ? stored.records : await storedBatchRecords(stored, deltas),
        r.appendTimeMs,
      );
      for (let i = 0; i < records.length; i++) {
        const t = records[i]!.timestampMs;
        const offset = r.baseOffset + BigInt(deltas[i] ?? i);
        if (t >= timestampMs && offset >= from) return { offset, timestampMs: t };
      }
    }
    return null;
  }

  /**
   * The record with the largest timestamp (the first of them), or null when the log has none
   * (Kafka's ListOffsets MAX_TIMESTAMP, KIP-734).
   */
  async maxTimestampOffset(): Promise<{ offset: bigint; timestampMs: number } | null> {
    const max = this.log.maxTimestampMs(this.logStartOffset());
    return max < 0 ? null : this.offsetForTimestamp(max);
  }

  /** Closes the segment files (the replica is closing; its data stays). */
  close(): Promise<void> {
    return this.log.close();
  }

  /** Deletes the segment files (the replica left this broker). */
  destroy(): void {
    this.log.destroy();
  }

  // ---- Apply internals ----------------------------------------------------------------

  private noResult(error: ErrorName, message: string): AppendResult {
    return {
      error,
      message,
      baseOffset: -1n,
      lastOffset: -1n,
      appendTimeMs: this.clockMs,
      logStartOffset: this.logStartOffset(),
      duplicate: false,
    };
  }

  private advanceClock(header: EntryHeader): void {
    if (header.appendTimeMs > this.clockMs) this.clockMs = header.appendTimeMs;
    if (this.clockMs - this.lastExpiryCheckMs < PRODUCER_EXPIRY_CHECK_INTERVAL_MS) return;
    this.lastExpiryCheckMs = this.clockMs;
    if (header.producerExpiryMs < 0) return;
    for (const [id, p] of this.producers) {
      if (p.openTransaction === null && this.clockMs - p.lastTimestampMs > header.producerExpiryMs)
        this.producers.delete(id);
    }
  }

  /**
   * Whether a new producer's state fits: under the bound, or after the longest-idle producer
   * without an open transaction, idle producerEvictableIdleMs or more, is forgotten. Scans only
   * when full, and not again before a producer can have become idle enough. Deterministic: the
   * same on every replica (replicated time, map order restored from snapshots).
   */
  private roomForProducer(): boolean {
    if (this.producers.size < this.producersMax) return true;
    if (this.clockMs < this.noEvictableBeforeMs) return false;
    const idleMs = BROKER_LIMITS.producerEvictableIdleMs;
    let victim: bigint | undefined;
    let oldest = Infinity;
    for (const [id, p] of this.producers) {
      if (p.openTransaction !== null || p.lastTimestampMs >= oldest) continue;
      oldest = p.lastTimestampMs;
      victim = id;
    }
    if (victim === undefined || this.clockMs - oldest < idleMs) {
      this.noEvictableBeforeMs = victim === undefined ? this.clockMs + 1 : oldest + idleMs;
      return false;
    }
    this.producers.delete(victim);
    return true;
  }

  /** A data batch, decoded (BatchEntry) or stored as sent (KafkaBatchEntry): identity and max timestamp are all apply needs. */
  private applyBatch(
    e: BatchEntry | KafkaBatchEntry,
    identity: BatchIdentity,
    maxTimestampMs: number,
  ): AppendResult {
    if (identity.recordCount === 0) return this.noResult("INVALID_RECORD", "empty batch");
    const idempotent = e.producerId >= 0n;
    if (!idempotent && e.isTransactional)
      return this.noResult("INVALID_RECORD", "a transactional batch needs a producer id");
    const existing = idempotent ? this.producers.get(e.producerId) : undefined;
    if (idempotent) {
      const check = checkBatch(existing, identity);
      if (check.kind === "error") return this.noResult(check.error, check.message);
      if (check.kind === "duplicate") {
        const d = check.batch;
        return {
          error: "NONE",
          message: "duplicate of an earlier batch",
          baseOffset: d.baseOffset,
          lastOffset: d.lastOffset,
          appendTimeMs: d.appendTimeMs,
          logStartOffset: this.logStartOffset(),
          duplicate: true,
        };
      }
    }
    if (idempotent && existing === undefined && !this.roomForProducer())
      return this.noResult(
        "THROTTLING_QUOTA_EXCEEDED",
        `${this.topic}-${this.partition} keeps the state of ${this.producersMax} producers, the most it holds, and none has been idle ${BROKER_LIMITS.producerEvictableIdleMs} ms: retry later or reuse producers`,
      );
    const baseOffset = this.log.nextOffset();
    const appendTimeMs = this.clockMs;
    this.maxTimestampOfLast = maxTimestampMs;
    const lastOffset = baseOffset + BigInt(identity.recordCount - 1);
    if (idempotent) {
      this.producers.set(e.producerId, recordBatch(existing, identity, baseOffset, appendTimeMs));
      if (e.isTransactional) this.openTransactions.add(e.producerId);
    }
    return {
      error: "NONE",
      message: "",
      baseOffset,
      lastOffset,
      appendTimeMs,
      logStartOffset: this.logStartOffset(),
      duplicate: false,
    };
  }

  private applyMarker(e: MarkerEntry): AppendResult {
    const existing = this.producers.get(e.producerId);
    const check = checkMarker(existing, e);
    if (check.kind === "error") return this.noResult(check.error, check.message);
    if (check.kind === "duplicate")
      return { ...this.noResult("NONE", "a late copy of an applied marker"), duplicate: true };
    const open = existing?.openTransaction ?? null;
    this.producers.set(e.producerId, recordMarker(existing, e, this.clockMs));
    this.openTransactions.delete(e.producerId);
    for (const listener of this.transactionEndListeners) listener(e.producerId);
    if (open === null) {
      // Nothing open here: a retried marker, or a partition that got no data. Harmless no-op.
      return { ...this.noResult("NONE", "no open transaction"), duplicate: true };
    }
    const offset = this.log.nextOffset();
    if (e.controlType === "ABORT")
      this.aborted.add({
        producerId: e.producerId,
        firstOffset: open.firstOffset,
        lastOffset: offset,
      });
    return {
      error: "NONE",
      message: "",
      baseOffset: offset,
      lastOffset: offset,
      appendTimeMs: this.clockMs,
      logStartOffset: this.logStartOffset(),
      duplicate: false,
    };
  }

  /**
   * DeleteRecords: the log start moves up to the entry's offset (-1: the high watermark). Past
   * the high watermark: OFFSET_OUT_OF_RANGE; at or below the log start: nothing changes. The
   * answer's logStartOffset is the new low watermark. Segments wholly below it go in
   * enforceRetention(), which runs after this entry as after any other.
   */
  private applyDeleteRecords(e: DeleteRecordsEntry): AppendResult {
    const highWatermark = this.log.nextOffset();
    const offset = e.offset === -1n ? highWatermark : e.offset;
    if (offset < 0n || offset > highWatermark) {
      return this.noResult(
        "OFFSET_OUT_OF_RANGE",
        `offset ${e.offset} is outside [0, ${highWatermark}] (-1: the high watermark)`,
      );
    }
    // Compared with deletedBefore, not logStartOffset(): segment boundaries differ between
    // replicas, deletedBefore must not.
    if (offset > this.deletedBefore) {
      this.deletedBefore = offset;
      this.aborted.trimBefore(this.logStartOffset());
    }
    return this.noResult("NONE", "");
  }

  /**
   * Retention like Kafka's: whole segments go from the front, never the active one: by time when
   * a segment's newest entry is older than retention.ms (replicated clock), by size while the
   * log without its oldest segment still holds retention.bytes or more, and once every offset in
   * it is below a log start DeleteRecords set (Kafka's log-start-offset breach).
   */
  private enforceRetention(header: EntryHeader): void {
    if (this.log.segmentCount() === 1) return; // the active segment always stays
    const now = this.clockMs;
    let total = this.log.bytes();
    let drop = 0;
    for (const s of this.log.segmentInfos()) {
      if (s.isActive) break;
      const tooOld = header.retentionMs >= 0 && now - s.lastAppendTimeMs > header.retentionMs;
      const tooBig = header.retentionBytes >= 0 && total - s.bytes >= header.retentionBytes;
      const deleted = this.deletedBefore > 0n && s.nextOffset <= this.deletedBefore;
      if (!tooOld && !tooBig && !deleted) break;
      total -= s.bytes;
      drop++;
    }
    if (drop === 0) return;
    this.log.removeOldest(drop);
    this.aborted.trimBefore(this.logStartOffset());
  }

  private notifyAppend(): void {
    for (const listener of this.appendListeners) listener();
  }
}

/** An entry that took offsets (a data batch or a marker), decoded from its record's bytes (views into them); null for anything else. */
function decodeStored(r: LogRecord): BatchEntry | KafkaBatchEntry | MarkerEntry | null {
  if (r.offsetCount === 0 || r.entryType !== EntryType.Normal || r.data.byteLength === 0)
    return null;
  const entry = decodeEntry(r.data, true);
  // A marker the cleaner removed: its offset is a gap for readers (it still applied as a marker).
  if (entry.kind === "marker" && entry.removed === true) return null;
  return entry.kind === "batch" || entry.kind === "kafka-batch" || entry.kind === "marker"
    ? entry
    : null;
}

/** A marker that took its offset, as a read returns it (controlBatches). */
function controlBatch(m: MarkerEntry, r: LogRecord): ReadBatch {
  return {
    baseOffset: r.baseOffset,
    producerId: m.producerId,
    producerEpoch: m.producerEpoch,
    baseSequence: -1,
    isTransactional: true,
    records: [],
    control: {
      commit: m.controlType === "COMMIT",
      coordinatorEpoch: m.coordinatorEpoch,
      timestampMs: r.appendTimeMs,
    },
  };
}

function batchIdentity(e: BatchEntry | KafkaBatchEntry): BatchIdentity {
  // A cleaned batch takes the offsets (and sequences) of the batch it was: lastOffsetDelta + 1.
  const recordCount = e.kind === "batch" ? e.records.length : e.lastOffsetDelta + 1;
  return {
    producerId: e.producerId,
    producerEpoch: e.producerEpoch,
    baseSequence: e.baseSequence,
    recordCount,
    isTransactional: e.isTransactional,
    txnGuard: e.txnGuard,
  };
}

/** The largest timestamp of the records as read: no timestamp means the append time (stampRecords). */
function maxTimestampOf(records: readonly RecordData[], appendTimeMs: number): number {
  let max = -1;
  for (const r of records) {
    const timestampMs = r.timestampMs > 0 ? r.timestampMs : appendTimeMs;
    if (timestampMs > max) max = timestampMs;
  }
  return max;
}

/** A stored Kafka batch as it is sent: whole, from its first offset. */
function asSentBatch(b: KafkaBatchEntry, r: LogRecord): ReadBatch {
  return {
    baseOffset: r.baseOffset,
    producerId: b.producerId,
    producerEpoch: b.producerEpoch,
    baseSequence: b.baseSequence,
    isTransactional: b.isTransactional,
    records: [],
    asSent: {
      batch: b.batch,
      codec: b.codec,
      recordCount: b.recordCount,
      offsetCount: b.lastOffsetDelta + 1,
      cleaned: b.cleaned,
    },
  };
}

/**
 * A cleaned batch as decoded records from fromOffset on: one batch per run of consecutive
 * offsets (the records a clean kept have gaps between them; a decoded batch's offsets are dense).
 */
function cleanedReadBatches(
  b: KafkaBatchEntry,
  records: readonly RecordData[],
  deltas: readonly number[],
  r: LogRecord,
  fromOffset: bigint,
): ReadBatch[] {
  const stamped = stampRecords(records, r.appendTimeMs);
  const out: ReadBatch[] = [];
  let run: RecordData[] = [];
  let runStart = -1;
  const flush = (): void => {
    if (run.length === 0) return;
    out.push({
      baseOffset: r.baseOffset + BigInt(runStart),
      producerId: b.producerId,
      producerEpoch: b.producerEpoch,
      baseSequence: b.baseSequence < 0 ? b.baseSequence : b.baseSequence + runStart,
      isTransactional: b.isTransactional,
      records: run,
    });
    run = [];
  };
  for (let i = 0; i < stamped.length; i++) {
    const delta = deltas[i]!;
    if (r.baseOffset + BigInt(delta) < fromOffset) continue;
    if (run.length > 0 && delta !== runStart + run.length) flush();
    if (run.length === 0) runStart = delta;
    run.push(stamped[i]!);
  }
  flush();
  return out;
}

/** The batch as read from fromOffset on (the records before it dropped), stamped as at apply. */
function readBatch(
  b: Pick<
    BatchEntry,
    "producerId" | "producerEpoch" | "baseSequence" | "isTransactional" | "records"
  >,
  r: LogRecord,
  fromOffset: bigint,
): ReadBatch {
  const records = stampRecords(b.records, r.appendTimeMs);
  const skip = r.baseOffset >= fromOffset ? 0 : Number(fromOffset - r.baseOffset);
  return {
    baseOffset: r.baseOffset + BigInt(skip),
    producerId: b.producerId,
    producerEpoch: b.producerEpoch,
    baseSequence: b.baseSequence < 0 ? b.baseSequence : b.baseSequence + skip,
    isTransactional: b.isTransactional,
    records: skip === 0 ? records : records.slice(skip),
  };
}
