// Snapshot codec of a partition: producer state, aborted-transaction index, offsets and the
// replicated clock. The records are not in it: they live in the partition's segment files
// (libs/storage), which hold everything up to the snapshot's index when it is taken.
import { ByteReader, ByteWriter } from "./byte-codec.js";
import type { BatchMetadata, ProducerEntry } from "./producer-state.js";
import type { AbortedTransaction } from "./transaction-index.js";
import { TernError } from "../../libs/common/errors.js";

/**
 * 1 held the records, 2 batch metadata for records kept in the Raft log; 3 neither (segment
 * files hold them); 4 adds where DeleteRecords moved the log start (3 is still read: none had);
 * 5 adds each producer's marker count and last ended epoch (4 reads as 0 and -1: entries of 4
 * carry no guard to compare).
 */
const SNAPSHOT_VERSION = 5;
const SNAPSHOT_VERSION_READ_MIN = 3;
const COUNT_MAX = 100_000_000;

export interface PartitionSnapshot {
  readonly clockMs: number;
  readonly lastExpiryCheckMs: number;
  /** The log start when taken (informational: it depends on the replica's segment layout). */
  readonly logStartOffset: bigint;
  readonly logEndOffset: bigint;
  /** Where DeleteRecords moved the log start: replicated state, the same on every replica. */
  readonly deletedBefore: bigint;
  readonly producers: Array<[bigint, ProducerEntry]>;
  readonly aborted: AbortedTransaction[];
}

export function encodeSnapshot(s: PartitionSnapshot): Uint8Array {
  const w = new ByteWriter(1024);
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
    w.i32(p.markersApplied);
    w.i32(p.lastEndedEpoch);
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
  w.i64(s.deletedBefore);
  return w.finish();
}

function count(r: ByteReader, what: string): number {
  const n = r.u32();
  if (n > COUNT_MAX) throw new TernError("CORRUPT_MESSAGE", `snapshot: ${n} ${what}`);
  return n;
}

/** Decodes a snapshot (checked: a bad one fails the restore rather than a later read). */
export function decodeSnapshot(data: Uint8Array): PartitionSnapshot {
  const r = new ByteReader(data, "partition snapshot", false);
  const version = r.u8();
  if (version < SNAPSHOT_VERSION_READ_MIN || version > SNAPSHOT_VERSION)
    throw new TernError(
      "CORRUPT_MESSAGE",
      `partition snapshot version ${version} (this build reads ${SNAPSHOT_VERSION_READ_MIN}-${SNAPSHOT_VERSION})`,
    );
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
    const markersApplied = version >= 5 ? r.i32() : 0;
    const lastEndedEpoch = version >= 5 ? r.i32() : -1;
    const openTransaction = r.u8() === 1 ? { firstOffset: r.i64(), startTimeMs: r.f64() } : null;
    const batches: BatchMetadata[] = [];
    for (let j = count(r, "producer batches"); j > 0; j--) {
      batches.push({
        firstSequence: r.i32(),
        lastSequence: r.i32(),
        baseOffset: r.i64(),
        lastOffset: r.i64(),
        appendTimeMs: r.f64(),
      });
    }
    producers.push([
      id,
      {
        producerEpoch,
        batches,
        lastTimestampMs,
        coordinatorEpoch,
        openTransaction,
        markersApplied,
        lastEndedEpoch,
      },
    ]);
  }
  const aborted: AbortedTransaction[] = [];
  for (let i = count(r, "aborted transactions"); i > 0; i--)
    aborted.push({ producerId: r.i64(), firstOffset: r.i64(), lastOffset: r.i64() });
  const deletedBefore = version >= 4 ? r.i64() : 0n;
  r.expectDone();
  return {
    clockMs,
    lastExpiryCheckMs,
    logStartOffset,
    logEndOffset,
    producers,
    aborted,
    deletedBefore,
  };
}
