// Snapshot codec of a partition: producer state, aborted-transaction index, offsets, replicated
// clock and the metadata of every retained batch, with the Raft index of its entry. The records
// themselves are not in the snapshot: the host keeps their entries in the Raft log (the state
// machine's retainFromIndex) and hands them back on restore, so a snapshot costs a few dozen
// bytes per batch instead of the retained bytes (64 MiB partitions used to stall every replica
// for a second or more at each snapshot).
import { ByteReader, ByteWriter } from "./byte-codec.js";
import { decodeEntry, type ControlKind } from "./partition-entry.js";
import type { AppliedEntry } from "../../libs/raft-host/state-machine.js";
import type { StoredBatch } from "./partition-log.js";
import type { BatchMetadata, ProducerEntry } from "./producer-state.js";
import type { AbortedTransaction } from "./transaction-index.js";
import { TernError } from "../../libs/common/errors.js";

/** 1 held the records inline (no longer read); 2 holds batch metadata and entry indexes. */
const SNAPSHOT_VERSION = 2;
const COUNT_MAX = 100_000_000;

export interface PartitionSnapshot {
  readonly clockMs: number;
  readonly lastExpiryCheckMs: number;
  readonly logStartOffset: bigint;
  readonly logEndOffset: bigint;
  readonly producers: Array<[bigint, ProducerEntry]>;
  readonly aborted: AbortedTransaction[];
  readonly batches: StoredBatch[];
}

const EMPTY = new Uint8Array(0);

function controlCode(c: ControlKind | null): number {
  return c === null ? 0 : c === "COMMIT" ? 1 : 2;
}

function controlOf(code: number): ControlKind | null {
  if (code === 0) return null;
  if (code === 1) return "COMMIT";
  if (code === 2) return "ABORT";
  throw new TernError("CORRUPT_MESSAGE", `snapshot: unknown control code ${code}`);
}

export function encodeSnapshot(s: PartitionSnapshot): Uint8Array {
  const w = new ByteWriter(1024 + s.batches.length * BATCH_METADATA_BYTES);
  w.u8(SNAPSHOT_VERSION);
  w.f64(s.clockMs);
  w.f64(s.lastExpiryCheckMs);
  w.i64(s.logStartOffset);
  w.i64(s.logEndOffset);
  w.u32(s.producers.length);
  for (const [id, p] of s.producers) {
    w.i64(id);
    w.i32(p.producerEpoch);
    w.f64(p.lastTimestampMs);
    w.i32(p.coordinatorEpoch);
    w.u8(p.openTransaction === null ? 0 : 1);
    if (p.openTransaction !== null) {
      w.i64(p.openTransaction.firstOffset);
      w.f64(p.openTransaction.startTimeMs);
    }
    w.u32(p.batches.length);
    for (const b of p.batches) {
      w.i32(b.firstSequence);
      w.i32(b.lastSequence);
      w.i64(b.baseOffset);
      w.i64(b.lastOffset);
      w.f64(b.appendTimeMs);
    }
  }
  w.u32(s.aborted.length);
  for (const a of s.aborted) {
    w.i64(a.producerId);
    w.i64(a.firstOffset);
    w.i64(a.lastOffset);
  }
  w.u32(s.batches.length);
  for (const b of s.batches) {
    w.f64(b.index);
    w.i64(b.baseOffset);
    w.i64(b.lastOffset);
    w.i64(b.producerId);
    w.i32(b.producerEpoch);
    w.i32(b.baseSequence);
    w.u8(b.isTransactional ? 1 : 0);
    w.u8(controlCode(b.control));
    w.f64(b.appendTimeMs);
    w.f64(b.maxTimestampMs);
    w.f64(b.sizeBytes);
  }
  return w.finish();
}

const BATCH_METADATA_BYTES = 8 * 7 + 4 * 2 + 2;

function count(r: ByteReader, what: string): number {
  const n = r.u32();
  if (n > COUNT_MAX) throw new TernError("CORRUPT_MESSAGE", `snapshot: ${n} ${what}`);
  return n;
}

/**
 * Decodes a snapshot taken at `index` and re-attaches each retained data batch to its entry in
 * `retained` (views into the entry bytes, checked). A batch whose entry is missing means the
 * host did not keep what retainFromIndex asked for: the restore fails rather than serve holes.
 */
export function decodeSnapshot(data: Uint8Array, index: number, retained: readonly AppliedEntry[]): PartitionSnapshot {
  const r = new ByteReader(data, "partition snapshot", false);
  const version = r.u8();
  if (version !== SNAPSHOT_VERSION) throw new TernError("CORRUPT_MESSAGE", `partition snapshot version ${version} (this build reads ${SNAPSHOT_VERSION})`);
  const entryAt = new Map<number, Uint8Array>();
  for (const e of retained) entryAt.set(e.index, e.data);
  const clockMs = r.f64();
  const lastExpiryCheckMs = r.f64();
  const logStartOffset = r.i64();
  const logEndOffset = r.i64();
  const producers: Array<[bigint, ProducerEntry]> = [];
  for (let i = count(r, "producers"); i > 0; i--) {
    const id = r.i64();
    const producerEpoch = r.i32();
    const lastTimestampMs = r.f64();
    const coordinatorEpoch = r.i32();
    const openTransaction = r.u8() === 1 ? { firstOffset: r.i64(), startTimeMs: r.f64() } : null;
    const batches: BatchMetadata[] = [];
    for (let j = count(r, "producer batches"); j > 0; j--) {
      batches.push({ firstSequence: r.i32(), lastSequence: r.i32(), baseOffset: r.i64(), lastOffset: r.i64(), appendTimeMs: r.f64() });
    }
    producers.push([id, { producerEpoch, batches, lastTimestampMs, coordinatorEpoch, openTransaction }]);
  }
  const aborted: AbortedTransaction[] = [];
  for (let i = count(r, "aborted transactions"); i > 0; i--) aborted.push({ producerId: r.i64(), firstOffset: r.i64(), lastOffset: r.i64() });
  const batches: StoredBatch[] = [];
  for (let i = count(r, "batches"); i > 0; i--) {
    const entryIndex = r.f64();
    const baseOffset = r.i64();
    const lastOffset = r.i64();
    const producerId = r.i64();
    const producerEpoch = r.i32();
    const baseSequence = r.i32();
    const isTransactional = r.u8() === 1;
    const control = controlOf(r.u8());
    const appendTimeMs = r.f64();
    const maxTimestampMs = r.f64();
    const sizeBytes = r.f64();
    if (!Number.isSafeInteger(entryIndex) || entryIndex < 1 || entryIndex > index) throw new TernError("CORRUPT_MESSAGE", `snapshot at ${index}: batch at ${baseOffset} names entry ${entryIndex}`);
    let raw: Uint8Array = EMPTY;
    if (control === null) {
      const bytes = entryAt.get(entryIndex);
      if (bytes === undefined) throw new TernError("CORRUPT_MESSAGE", `snapshot at ${index}: the entry ${entryIndex} of the batch at ${baseOffset} was not retained`);
      // Checked now, so a bad entry fails the restore rather than a later fetch.
      const entry = decodeEntry(bytes, true);
      if (entry.kind !== "batch") throw new TernError("CORRUPT_MESSAGE", `snapshot: batch at ${baseOffset} holds a ${entry.kind} entry`);
      if (BigInt(entry.records.length) !== lastOffset - baseOffset + 1n) throw new TernError("CORRUPT_MESSAGE", `snapshot: batch at ${baseOffset} holds ${entry.records.length} records, not ${lastOffset - baseOffset + 1n}`);
      raw = bytes;
    }
    batches.push({ index: entryIndex, baseOffset, lastOffset, producerId, producerEpoch, baseSequence, isTransactional, control, appendTimeMs, maxTimestampMs, sizeBytes, raw });
  }
  r.expectDone();
  return { clockMs, lastExpiryCheckMs, logStartOffset, logEndOffset, producers, aborted, batches };
}
