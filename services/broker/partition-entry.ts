// The Raft entries of a topic partition. The Raft log IS the partition log: a produce is one
// entry carrying one record batch, a transaction marker is one entry. Everything apply()
// needs that depends on time or configuration travels in the entry header, so every replica
// computes the same offsets, retention and producer expiry.
import { ByteReader, ByteWriter } from "./byte-codec.js";
import { TernError } from "../../libs/common/errors.js";
import { readBatchHeader } from "../../libs/records/batch-header.js";
import type { CompressionCodec } from "../../libs/records/compression.js";
import type { RecordBytes } from "../../libs/records/records-section.js";
import { isDecodeError } from "../../libs/common/decode-error.js";

/**
 * 2 adds the transaction guard to data batches and the epoch-bumped flag to markers; 1 is still
 * read (its batches carry no guard and its markers count as not bumped).
 */
const ENTRY_VERSION = 2;
const ENTRY_VERSION_READ_MIN = 1;
/** A data batch's txnGuard when it has none (not transactional, or written by version 1). */
const NO_TXN_GUARD = -1;
const KIND_BATCH = 1;
const KIND_MARKER = 2;
const KIND_TICK = 3;
const KIND_DELETE_RECORDS = 4;
/** A Kafka record batch v2: every data batch (builds before kafka-batch entries refuse it). */
const KIND_KAFKA_BATCH = 5;
/**
 * A kafka-batch entry the cleaner rewrote (docs/storage.md, "Compaction"): the batch holds the
 * records it kept; its lastOffsetDelta, not its record count, says the offsets it takes.
 */
const KIND_CLEANED_KAFKA_BATCH = 6;
/** A marker the cleaner removed from reads: applied as a marker, never read (docs/storage.md, "Compaction"). */
const KIND_REMOVED_MARKER = 7;

export type ControlKind = "COMMIT" | "ABORT";

export interface RecordHeaderData {
  readonly key: string;
  readonly value: Uint8Array | null;
}

export interface RecordData {
  readonly key: Uint8Array | null;
  readonly value: Uint8Array | null;
  readonly headers: readonly RecordHeaderData[];
  /** Producer's timestamp, or the append time when the producer left it 0. */
  readonly timestampMs: number;
}

/** Chosen by the leader at propose time; identical on every replica because it is replicated. */
export interface EntryHeader {
  /** Leader's wall clock at propose time: the log append time. */
  readonly appendTimeMs: number;
  /** Retention by time; -1 keeps forever. */
  readonly retentionMs: number;
  /** Retention by size of the retained records; -1 keeps everything. */
  readonly retentionBytes: number;
  /** Idle time after which a producer's state (without an open transaction) is forgotten. */
  readonly producerExpiryMs: number;
}

/**
 * A batch of decoded records, as builds before the one stored format wrote every gRPC batch:
 * read for ever (journals, segments, catch-up), never written by this build (docs/storage.md,
 * "Upgrade"); encodeEntry keeps it for tests that write such data.
 */
export interface BatchEntry {
  readonly kind: "batch";
  readonly header: EntryHeader;
  /** -1n for a plain (non-idempotent) producer. */
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly baseSequence: number;
  readonly isTransactional: boolean;
  /** Transactional batches: the verification guard the leader took (producer-state.ts checkTxnGuard). */
  readonly txnGuard?: number | undefined;
  readonly records: readonly RecordData[];
}

export interface MarkerEntry {
  readonly kind: "marker";
  readonly header: EntryHeader;
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly controlType: ControlKind;
  readonly coordinatorEpoch: number;
  /**
   * The marker's epoch is one above its transaction's data (transactions V2, and every fence or
   * timeout abort); false for a V1 end, whose marker keeps the data's epoch.
   */
  readonly epochBumped: boolean;
  /** The cleaner removed it from reads (entry kind 7): its transaction's records are all gone. */
  readonly removed?: boolean;
}

/** Carries time only: lets retention and producer expiry advance on an idle partition. */
export interface TickEntry {
  readonly kind: "tick";
  readonly header: EntryHeader;
}

/**
 * Kafka's DeleteRecords: moves the log start offset up to `offset` (-1: the high watermark when
 * the entry applies). Checked at apply, so every replica moves it the same way.
 */
export interface DeleteRecordsEntry {
  readonly kind: "delete-records";
  readonly header: EntryHeader;
  readonly offset: bigint;
}

/**
 * Every data batch: a Kafka record batch v2, as its producer built it (a Kafka producer, or a
 * gRPC kafka_batch) or as the leader built it from the gRPC simple form (simple-batch.ts), in
 * its codec, so fetches send these bytes. The leader checked the records against the header
 * before proposing it (services/kafka/record-batch.ts, storableAsSent): what apply() needs
 * comes from the header.
 */
export interface KafkaBatchEntry {
  readonly kind: "kafka-batch";
  readonly header: EntryHeader;
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly baseSequence: number;
  readonly isTransactional: boolean;
  /** As BatchEntry's. */
  readonly txnGuard?: number | undefined;
  /** The records in the batch (fewer than the offsets it takes once cleaned; 0 when all went). */
  readonly recordCount: number;
  /** The batch's lastOffsetDelta: it takes lastOffsetDelta + 1 offsets, cleaned or not. */
  readonly lastOffsetDelta: number;
  /** Rewritten by the cleaner (entry kind 6): records removed, offsets and header kept. */
  readonly cleaned: boolean;
  /** The batch's maxTimestamp: every record has a create time (the leader checked). */
  readonly maxTimestampMs: number;
  readonly codec: CompressionCodec;
  /** The whole batch, from its baseOffset field (as sent; baseOffset and leader epoch are patched per fetch). */
  readonly batch: Uint8Array;
}

export type PartitionEntry =
  BatchEntry | MarkerEntry | TickEntry | DeleteRecordsEntry | KafkaBatchEntry;

function writeHeader(w: ByteWriter, h: EntryHeader): void {
  w.f64(h.appendTimeMs);
  w.f64(h.retentionMs);
  w.f64(h.retentionBytes);
  w.f64(h.producerExpiryMs);
}

function readHeader(r: ByteReader): EntryHeader {
  return {
    appendTimeMs: r.f64(),
    retentionMs: r.f64(),
    retentionBytes: r.f64(),
    producerExpiryMs: r.f64(),
  };
}

export function writeRecord(w: ByteWriter, record: RecordData): void {
  w.f64(record.timestampMs);
  w.bytes(record.key);
  w.bytes(record.value);
  w.u32(record.headers.length);
  for (const h of record.headers) {
    w.string(h.key);
    w.bytes(h.value);
  }
}

export function readRecord(r: ByteReader, headersMax: number): RecordData {
  const timestampMs = r.f64();
  const key = r.bytes();
  const value = r.bytes();
  const headerCount = r.u32();
  if (headerCount > headersMax)
    throw new TernError("CORRUPT_MESSAGE", `record has ${headerCount} headers (max ${headersMax})`);
  const headers: RecordHeaderData[] = [];
  for (let i = 0; i < headerCount; i++) headers.push({ key: r.string(), value: r.bytes() });
  return { key, value, headers, timestampMs };
}

/** Bytes a record occupies in the log: what retention and fetch max_bytes count. */
export function recordSizeBytes(record: RecordData): number {
  let size = 8 + 4 + (record.key?.length ?? 0) + 4 + (record.value?.length ?? 0) + 4;
  for (const h of record.headers) size += 4 + Buffer.byteLength(h.key) + 4 + (h.value?.length ?? 0);
  return size;
}

/** recordSizeBytes from a record's field lengths: a Kafka batch walked, not decoded (records-section.ts). */
export const recordSizeOfLengths: RecordBytes = (keyBytes, valueBytes, headers) => {
  let size = 8 + 4 + keyBytes + 4 + valueBytes + 4;
  for (const h of headers) size += 4 + h.keyBytes + 4 + h.valueBytes;
  return size;
};

/** Records the producer left without a timestamp get the append time (at apply and on restore). */
export function stampRecords(records: readonly RecordData[], appendTimeMs: number): RecordData[] {
  return records.map((r) => (r.timestampMs > 0 ? r : { ...r, timestampMs: appendTimeMs }));
}

export const RECORDS_PER_BATCH_MAX = 100_000;
const HEADERS_PER_RECORD_MAX = 10_000;

export function encodeEntry(entry: PartitionEntry): Uint8Array {
  let estimateBytes = 64;
  if (entry.kind === "batch") for (const r of entry.records) estimateBytes += recordSizeBytes(r);
  if (entry.kind === "kafka-batch") estimateBytes += entry.batch.byteLength;
  const w = new ByteWriter(estimateBytes);
  w.u8(ENTRY_VERSION);
  switch (entry.kind) {
    case "batch":
      w.u8(KIND_BATCH);
      writeHeader(w, entry.header);
      w.i32(entry.txnGuard ?? NO_TXN_GUARD);
      w.i64(entry.producerId);
      w.i32(entry.producerEpoch);
      w.i32(entry.baseSequence);
      w.u8(entry.isTransactional ? 1 : 0);
      w.u32(entry.records.length);
      for (const r of entry.records) writeRecord(w, r);
      break;
    case "marker":
      w.u8(entry.removed === true ? KIND_REMOVED_MARKER : KIND_MARKER);
      writeHeader(w, entry.header);
      w.i64(entry.producerId);
      w.i32(entry.producerEpoch);
      w.u8(entry.controlType === "COMMIT" ? 1 : 2);
      w.i32(entry.coordinatorEpoch);
      w.u8(entry.epochBumped ? 1 : 0);
      break;
    case "tick":
      w.u8(KIND_TICK);
      writeHeader(w, entry.header);
      break;
    case "delete-records":
      w.u8(KIND_DELETE_RECORDS);
      writeHeader(w, entry.header);
      w.i64(entry.offset);
      break;
    case "kafka-batch":
      // Only the bytes: every other field is read back from the batch's header.
      w.u8(entry.cleaned ? KIND_CLEANED_KAFKA_BATCH : KIND_KAFKA_BATCH);
      writeHeader(w, entry.header);
      w.i32(entry.txnGuard ?? NO_TXN_GUARD);
      w.bytes(entry.batch);
      break;
  }
  return w.finish();
}

/** With zeroCopy, record keys/values are views into data: the caller must own data. */
export function decodeEntry(data: Uint8Array, zeroCopy = false): PartitionEntry {
  const r = new ByteReader(data, "partition entry", !zeroCopy);
  const version = r.u8();
  if (version < ENTRY_VERSION_READ_MIN || version > ENTRY_VERSION)
    throw new TernError(
      "CORRUPT_MESSAGE",
      `partition entry version ${version} (this build reads ${ENTRY_VERSION_READ_MIN}-${ENTRY_VERSION})`,
    );
  const kind = r.u8();
  const header = readHeader(r);
  const readGuard = (): number | undefined => {
    if (version < 2) return undefined;
    const guard = r.i32();
    return guard === NO_TXN_GUARD ? undefined : guard;
  };
  let entry: PartitionEntry;
  if (kind === KIND_BATCH) {
    const txnGuard = readGuard();
    const producerId = r.i64();
    const producerEpoch = r.i32();
    const baseSequence = r.i32();
    const isTransactional = r.u8() === 1;
    const count = r.u32();
    if (count > RECORDS_PER_BATCH_MAX)
      throw new TernError(
        "CORRUPT_MESSAGE",
        `batch of ${count} records (max ${RECORDS_PER_BATCH_MAX})`,
      );
    const records: RecordData[] = [];
    for (let i = 0; i < count; i++) records.push(readRecord(r, HEADERS_PER_RECORD_MAX));
    entry = {
      kind: "batch",
      header,
      producerId,
      producerEpoch,
      baseSequence,
      isTransactional,
      ...(txnGuard !== undefined ? { txnGuard } : {}),
      records,
    };
  } else if (kind === KIND_MARKER || kind === KIND_REMOVED_MARKER) {
    const producerId = r.i64();
    const producerEpoch = r.i32();
    const control = r.u8();
    if (control !== 1 && control !== 2)
      throw new TernError("CORRUPT_MESSAGE", `unknown control type ${control}`);
    entry = {
      kind: "marker",
      header,
      producerId,
      producerEpoch,
      controlType: control === 1 ? "COMMIT" : "ABORT",
      coordinatorEpoch: r.i32(),
      epochBumped: version >= 2 && r.u8() === 1,
      ...(kind === KIND_REMOVED_MARKER ? { removed: true } : {}),
    };
  } else if (kind === KIND_TICK) {
    entry = { kind: "tick", header };
  } else if (kind === KIND_DELETE_RECORDS) {
    entry = { kind: "delete-records", header, offset: r.i64() };
  } else if (kind === KIND_KAFKA_BATCH || kind === KIND_CLEANED_KAFKA_BATCH) {
    const txnGuard = readGuard();
    const batch = r.bytes();
    if (batch === null)
      throw new TernError("CORRUPT_MESSAGE", "a Kafka batch entry without its batch");
    entry = kafkaBatchEntry(header, batch, txnGuard, kind === KIND_CLEANED_KAFKA_BATCH);
  } else {
    throw new TernError("CORRUPT_MESSAGE", `unknown partition entry kind ${kind}`);
  }
  r.expectDone();
  return entry;
}

/** The entry of a stored Kafka batch, its fields from the batch's header (checked, never inflated). */
export function kafkaBatchEntry(
  header: EntryHeader,
  batch: Uint8Array,
  txnGuard?: number,
  cleaned = false,
): KafkaBatchEntry {
  let h;
  try {
    h = readBatchHeader(batch);
  } catch (e) {
    if (isDecodeError(e, "batch-header"))
      throw new TernError("CORRUPT_MESSAGE", `stored Kafka batch: ${e.message}`);
    throw e;
  }
  if (h.isControl || h.logAppendTime)
    throw new TernError(
      "CORRUPT_MESSAGE",
      "a stored Kafka batch is a control batch or has log-append time",
    );
  // A cleaned batch keeps its lastOffsetDelta and holds at most that many records plus one.
  if (
    h.lastOffsetDelta < 0 ||
    h.lastOffsetDelta >= RECORDS_PER_BATCH_MAX ||
    (cleaned
      ? h.recordCount < 0 || h.recordCount > h.lastOffsetDelta + 1
      : h.recordCount !== h.lastOffsetDelta + 1)
  ) {
    throw new TernError(
      "CORRUPT_MESSAGE",
      `stored Kafka batch of ${h.recordCount} records, lastOffsetDelta ${h.lastOffsetDelta}`,
    );
  }
  return {
    kind: "kafka-batch",
    header,
    producerId: h.producerId,
    producerEpoch: h.producerEpoch,
    baseSequence: h.baseSequence,
    isTransactional: h.isTransactional,
    ...(txnGuard !== undefined ? { txnGuard } : {}),
    recordCount: h.recordCount,
    lastOffsetDelta: h.lastOffsetDelta,
    cleaned,
    maxTimestampMs: h.maxTimestampMs,
    codec: h.codec,
    batch,
  };
}
