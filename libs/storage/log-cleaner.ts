// The clean of one replica's log (docs/storage.md, "Compaction"): a key→offset map over the dirty
// sealed segments (as many whole segments as the map holds), then every sealed segment from the
// log start to the end of the mapped range read back and written again with only the records
// that are their key's latest (or whose key the map does not hold), minus tombstones past
// delete.retention.ms; records of aborted transactions go (and never enter the map), and a
// transaction marker goes delete.retention.ms after a clean first found its transaction's records
// all gone (KIP-98's cleaner rules); each segment whose records changed is swapped in atomically. Every entry
// stays at its Raft index with its segment record header (offsets, term, times): only payloads
// change, through the log owner's CompactionCodec. Offsets at or above the stable offset (the
// LSO) and segments younger than min.compaction.lag.ms are never cleaned; neither is the active
// segment. One LogCleaner per process: it owns the map (the memory budget) and the I/O throttle.
import { join } from "node:path";
import { CLEANER_FILES, type CleanerFile, type CleanerFiles } from "./cleaner-files.js";
import type { CleanProgress } from "./clean-progress.js";
import type { CleanableContent, CompactionCodec } from "./compaction-codec.js";
import { IoThrottle } from "./io-throttle.js";
import {
  encodeRecordHeader,
  nextOffsetAfter,
  RECORD_HEADER_BYTES,
  type LogRecord,
} from "./log-record.js";
import { OffsetMap } from "./offset-map.js";
import type { Segment } from "./segment.js";
import { segmentName } from "./segment.js";
import { encodeIndexEntries, type IndexEntry } from "./segment-index.js";
import type { SegmentedLog } from "./segmented-log.js";

export interface LogCleanerOptions {
  /** The key→offset map's memory (Kafka's log.cleaner.dedupe.buffer.size). */
  readonly mapBytes: number;
  /** Bounds the bytes read and written per second (default: unlimited). */
  readonly throttle?: IoThrottle;
  /** Index entry spacing of the segments written (the logs' own). */
  readonly indexIntervalBytes: number;
  readonly files?: CleanerFiles;
  /** Bytes one read of a segment asks for. */
  readonly readChunkBytes?: number;
}

/** What a clean of a replica may touch, from its topic config and its state. */
export interface CleanSettings {
  /** The replicated clock. */
  readonly nowMs: number;
  readonly minCompactionLagMs: number;
  readonly deleteRetentionMs: number;
  /** Offsets from here on are never cleaned: the last stable offset. */
  readonly stableOffset: bigint;
  /**
   * Adjacent segments of the clean whose bytes together stay within this (the topic's
   * segment.bytes) are written as one (Kafka's grouping); undefined: each segment alone.
   */
  readonly segmentBytes?: number;
}

/** The dirty part of a replica's cleanable prefix: what the cleaner chooses by. */
export interface DirtyView {
  readonly cleanableBytes: number;
  readonly dirtyBytes: number;
  /** dirtyBytes / cleanableBytes (0 when nothing is cleanable). */
  readonly ratio: number;
  /** The first append time of the oldest dirty segment (-1: nothing dirty). */
  readonly oldestDirtyAppendMs: number;
}

export type CleanOutcome =
  | {
      readonly kind: "cleaned";
      /** The offsets covered: [firstOffset, endOffset). */
      readonly firstOffset: bigint;
      readonly endOffset: bigint;
      readonly segments: number;
      readonly segmentsRewritten: number;
      /** Segments that are no longer there: merged into the one before them. */
      readonly segmentsMerged: number;
      readonly bytesBefore: number;
      readonly bytesAfter: number;
      readonly recordsKept: number;
      readonly recordsRemoved: number;
      readonly tombstonesRemoved: number;
      /** Records of aborted transactions removed (counted in recordsRemoved too). */
      readonly abortedRemoved: number;
      readonly markersRemoved: number;
      readonly mapUtilisation: number;
      readonly bytesRead: number;
      readonly bytesWritten: number;
    }
  | {
      readonly kind: "skipped";
      /**
       * nothing-dirty: no dirty cleanable segment; transactional: the first dirty segment holds a
       * transactional batch the owner cannot rewrite (an older build's); map-full: its keys alone
       * overflow the map.
       */
      readonly reason: "nothing-dirty" | "transactional" | "map-full";
      readonly bytesRead: number;
    };

const READ_CHUNK_BYTES = 1024 * 1024;
/** Records written to a temporary file per writev. */
const WRITE_BATCH_BYTES = 1024 * 1024;

/** The sealed segments a clean may touch: a prefix, below the stable offset, old enough. */
function cleanablePrefix(
  log: SegmentedLog,
  s: Omit<CleanSettings, "deleteRetentionMs">,
): Segment[] {
  const out: Segment[] = [];
  for (const seg of log.sealedSegments()) {
    if (seg.nextOffset() > s.stableOffset) break;
    if (s.nowMs - seg.lastAppendTimeMs() < s.minCompactionLagMs) break;
    out.push(seg);
  }
  return out;
}

export function dirtyView(
  log: SegmentedLog,
  progress: Pick<CleanProgress, "firstDirtyOffset">,
  s: Omit<CleanSettings, "deleteRetentionMs">,
): DirtyView {
  let cleanableBytes = 0;
  let dirtyBytes = 0;
  let oldestDirtyAppendMs = -1;
  for (const seg of cleanablePrefix(log, s)) {
    cleanableBytes += seg.bytes();
    if (seg.nextOffset() <= progress.firstDirtyOffset) continue;
    dirtyBytes += seg.bytes();
    if (oldestDirtyAppendMs < 0) oldestDirtyAppendMs = seg.firstAppendTimeMs();
  }
  return {
    cleanableBytes,
    dirtyBytes,
    ratio: cleanableBytes === 0 ? 0 : dirtyBytes / cleanableBytes,
    oldestDirtyAppendMs,
  };
}

export class LogCleaner {
  private map: OffsetMap | undefined;
  private readonly throttle: IoThrottle;
  private readonly files: CleanerFiles;
  private readonly chunkBytes: number;

  constructor(private readonly options: LogCleanerOptions) {
    this.throttle = options.throttle ?? IoThrottle.unlimited();
    this.files = options.files ?? CLEANER_FILES;
    this.chunkBytes = options.readChunkBytes ?? READ_CHUNK_BYTES;
  }

  /**
   * Cleans the log once (see the file comment); the progress and the log's stored clean point
   * move only when a clean completes.
   */
  async clean(
    log: SegmentedLog,
    codec: CompactionCodec,
    progress: CleanProgress,
    settings: CleanSettings,
  ): Promise<CleanOutcome> {
    const since = log.rewriteCount();
    const prefix = cleanablePrefix(log, settings);
    const dirty = prefix.filter((s) => s.nextOffset() > progress.firstDirtyOffset);
    // A tombstone or a marker left by an earlier clean may be due: the clean section is
    // rewritten then, also with nothing dirty.
    const removalDue = progress.nextRemovalAtMs <= settings.nowMs;
    if (dirty.length === 0 && !removalDue)
      return { kind: "skipped", reason: "nothing-dirty", bytesRead: 0 };
    // Allocated on first use, once per process (the budget), then reused.
    const map = (this.map ??= new OffsetMap(this.options.mapBytes));
    map.clear();
    let bytesRead = 0;
    let end = removalDue ? progress.firstDirtyOffset : -1n;
    let mapped = 0;
    let stop: "transactional" | "map-full" | undefined;
    for (const s of dirty) {
      const r = await this.mapSegment(log, s, codec, map);
      bytesRead += r.bytesRead;
      if (r.stop !== undefined) {
        stop = r.stop;
        break;
      }
      end = s.nextOffset();
      mapped++;
    }
    if (mapped === 0 && !removalDue) return { kind: "skipped", reason: stop!, bytesRead };
    if (prefix.length === 0 || end <= prefix[0]!.baseOffset)
      return { kind: "skipped", reason: stop ?? "nothing-dirty", bytesRead };
    const mapUtilisation = map.utilisation();

    const outcome = {
      segments: 0,
      segmentsRewritten: 0,
      segmentsMerged: 0,
      bytesBefore: 0,
      bytesAfter: 0,
      recordsKept: 0,
      recordsRemoved: 0,
      tombstonesRemoved: 0,
      abortedRemoved: 0,
      markersRemoved: 0,
      bytesWritten: 0,
    };
    const firstOffset = prefix[0]!.baseOffset;
    progress.forgetMarkersBefore(firstOffset);
    // Per producer: records its current transaction still holds after this clean (batches before
    // the log start are gone). A producer has one transaction open at a time; its marker ends it.
    const txnKept = new Map<bigint, number>();
    const removals = { nextAtMs: Infinity };
    const range = prefix.filter((s) => s.nextOffset() <= end);
    for (const group of groupBySize(range, settings.segmentBytes)) {
      const r = await this.rewriteSegment(
        log,
        group,
        codec,
        map,
        progress,
        settings,
        txnKept,
        removals,
      );
      bytesRead += r.bytesRead;
      if (r.skipped) return { kind: "skipped", reason: "transactional", bytesRead };
      outcome.segments += group.length;
      outcome.bytesBefore += r.bytesBefore;
      outcome.bytesAfter += r.bytesAfter;
      outcome.recordsKept += r.recordsKept;
      outcome.recordsRemoved += r.recordsRemoved;
      outcome.tombstonesRemoved += r.tombstonesRemoved;
      outcome.abortedRemoved += r.abortedRemoved;
      outcome.markersRemoved += r.markersRemoved;
      outcome.bytesWritten += r.bytesWritten;
      if (r.swapped) outcome.segmentsRewritten += group.length;
      if (r.swapped && group.length > 1) outcome.segmentsMerged += group.length - 1;
    }
    // Stored for a restart (clean-point.ts); not when the log was truncated or reset meanwhile.
    if (log.cleanedUpTo(end, since)) {
      progress.cleaned(end, settings.nowMs);
      progress.nextRemovalAtMs = removals.nextAtMs;
    }
    return { kind: "cleaned", firstOffset, endOffset: end, mapUtilisation, bytesRead, ...outcome };
  }

  /** A segment's records in chunks, checked, throttled; the bytes read are added to counter. */
  private async *records(
    log: SegmentedLog,
    s: Segment,
    counter: { bytesRead: number },
  ): AsyncGenerator<LogRecord[]> {
    let position = 0;
    for (;;) {
      const { records, end } = await log.readSegment(s, position, this.chunkBytes);
      if (records.length === 0) return;
      await this.throttle.take(end - position);
      counter.bytesRead += end - position;
      position = end;
      yield records;
    }
  }

  private async *groupRecords(
    log: SegmentedLog,
    group: readonly Segment[],
    counter: { bytesRead: number },
  ): AsyncGenerator<LogRecord[]> {
    for (const s of group) yield* this.records(log, s, counter);
  }

  private async mapSegment(
    log: SegmentedLog,
    s: Segment,
    codec: CompactionCodec,
    map: OffsetMap,
  ): Promise<{ bytesRead: number; stop?: "transactional" | "map-full" }> {
    const counter = { bytesRead: 0 };
    for await (const chunk of this.records(log, s, counter)) {
      for (const r of chunk) {
        const c = await codec.content(r);
        if (c.kind === "transactional")
          return { bytesRead: counter.bytesRead, stop: "transactional" };
        // An aborted record never supersedes anything.
        if (c.kind !== "records" || c.transaction?.aborted === true) continue;
        for (const k of c.records)
          if (k.key !== null && !map.put(k.key, k.offset))
            return { bytesRead: counter.bytesRead, stop: "map-full" };
      }
    }
    return { bytesRead: counter.bytesRead };
  }

  /**
   * Adjacent segments read back, their records decided, written to temporary files as one
   * segment and swapped in when any record changed or there are several.
   */
  private async rewriteSegment(
    log: SegmentedLog,
    group: readonly Segment[],
    codec: CompactionCodec,
    map: OffsetMap,
    progress: CleanProgress,
    settings: CleanSettings,
    txnKept: Map<bigint, number>,
    removals: { nextAtMs: number },
  ): Promise<{
    skipped: boolean;
    swapped: boolean;
    bytesRead: number;
    bytesBefore: number;
    bytesAfter: number;
    recordsKept: number;
    recordsRemoved: number;
    tombstonesRemoved: number;
    abortedRemoved: number;
    markersRemoved: number;
    bytesWritten: number;
  }> {
    const first = group[0]!;
    const lastIndexes = group.map((s) => s.lastIndex());
    let bytesBefore = 0;
    for (const s of group) bytesBefore += s.bytes();
    const name = segmentName(first.baseIndex);
    const tmpLog = join(log.dir, `${name}.log.clean.tmp`);
    const tmpIndex = join(log.dir, `${name}.index.clean.tmp`);
    const counts = {
      recordsKept: 0,
      recordsRemoved: 0,
      tombstonesRemoved: 0,
      abortedRemoved: 0,
      markersRemoved: 0,
    };
    const writer = new CleanedSegmentWriter(
      first,
      this.options.indexIntervalBytes,
      await this.files.create(tmpLog),
      this.throttle,
    );
    let changed = group.length > 1;
    const counter = { bytesRead: 0 };
    let done = false;
    try {
      for await (const chunk of this.groupRecords(log, group, counter)) {
        for (const r of chunk) {
          const c: CleanableContent = await codec.content(r);
          if (c.kind === "transactional") {
            return {
              skipped: true,
              swapped: false,
              bytesRead: counter.bytesRead,
              bytesBefore,
              bytesAfter: bytesBefore,
              bytesWritten: 0,
              ...counts,
            };
          }
          if (c.kind === "marker") {
            const kept = txnKept.get(c.producerId) ?? 0;
            txnKept.delete(c.producerId);
            const at =
              c.removed || kept > 0
                ? Infinity
                : progress.markerRemovableAtMs(
                    r.baseOffset,
                    settings.nowMs,
                    settings.deleteRetentionMs,
                  );
            if (at <= settings.nowMs) {
              changed = true;
              counts.markersRemoved++;
              progress.forgetMarker(r.baseOffset);
              await writer.add({ ...r, data: await c.remove() });
            } else {
              removals.nextAtMs = Math.min(removals.nextAtMs, at);
              await writer.add(r);
            }
            continue;
          }
          if (c.kind !== "records") {
            await writer.add(r);
            continue;
          }
          const aborted = c.transaction?.aborted === true;
          const keep = c.records.map((k) => {
            if (aborted) return false;
            if (k.key === null) return true;
            const latest = map.get(k.key);
            if (latest !== undefined && k.offset < latest) return false;
            if (k.tombstone) {
              const at = progress.tombstoneRemovableAtMs(
                k.offset,
                settings.nowMs,
                settings.deleteRetentionMs,
              );
              if (at <= settings.nowMs) {
                counts.tombstonesRemoved++;
                return false;
              }
              removals.nextAtMs = Math.min(removals.nextAtMs, at);
            }
            return true;
          });
          const kept = keep.filter((k) => k).length;
          counts.recordsKept += kept;
          counts.recordsRemoved += keep.length - kept;
          if (aborted) counts.abortedRemoved += keep.length;
          if (c.transaction !== undefined) {
            const pid = c.transaction.producerId;
            txnKept.set(pid, (txnKept.get(pid) ?? 0) + kept);
          }
          if (kept === keep.length) {
            await writer.add(r);
          } else {
            changed = true;
            await writer.add({ ...r, data: await c.rewrite(keep) });
          }
        }
      }
      const unchanged = {
        skipped: false,
        swapped: false,
        bytesRead: counter.bytesRead,
        bytesBefore,
        bytesAfter: bytesBefore,
        bytesWritten: 0,
        ...counts,
      };
      if (!changed) return unchanged;
      await writer.finish(this.files, tmpIndex);
      // The segment may have gone meanwhile (retention, a truncation): then nothing is swapped.
      const swapped = log.swapCleaned(group, lastIndexes, tmpLog, tmpIndex, this.files);
      done = swapped;
      if (!swapped) return unchanged;
      return {
        ...unchanged,
        swapped: true,
        bytesAfter: writer.bytes,
        bytesWritten: writer.bytes + writer.indexBytes,
      };
    } finally {
      await writer.abandon();
      if (!done) {
        await this.files.discard(tmpLog).catch(() => undefined);
        await this.files.discard(tmpIndex).catch(() => undefined);
      }
    }
  }
}

/** Consecutive runs of segments whose bytes stay within max (each alone when max is undefined). */
function groupBySize(segments: readonly Segment[], max: number | undefined): Segment[][] {
  const groups: Segment[][] = [];
  let bytes = 0;
  for (const s of segments) {
    const last = groups.at(-1);
    if (max !== undefined && last !== undefined && bytes + s.bytes() <= max) {
      last.push(s);
      bytes += s.bytes();
    } else {
      groups.push([s]);
      bytes = s.bytes();
    }
  }
  return groups;
}

/**
 * The records of a cleaned segment, written in order to its temporary log file, with the sparse
 * index Segment would build for them (an entry at position 0, every indexIntervalBytes and at
 * every term change; segment.ts track()).
 */
class CleanedSegmentWriter {
  bytes = 0;
  indexBytes = 0;
  private readonly entries: IndexEntry[] = [];
  private sinceIndexEntry = 0;
  private lastTerm: number;
  private nextOffset: bigint;
  private maxTimestampMs = -1;
  private pending: Uint8Array[] = [];
  private pendingBytes = 0;
  private file: CleanerFile | undefined;

  constructor(
    s: Segment,
    private readonly indexIntervalBytes: number,
    file: CleanerFile,
    private readonly throttle: IoThrottle,
  ) {
    this.file = file;
    this.lastTerm = s.checkpoint.term;
    this.nextOffset = s.baseOffset;
  }

  async add(r: LogRecord): Promise<void> {
    const size = RECORD_HEADER_BYTES + r.data.byteLength;
    if (
      this.bytes === 0 ||
      this.sinceIndexEntry >= this.indexIntervalBytes ||
      r.term !== this.lastTerm
    ) {
      this.entries.push({
        index: r.index,
        term: r.term,
        offset: Number(this.nextOffset),
        position: this.bytes,
        maxTimestampMs: this.maxTimestampMs,
      });
      this.sinceIndexEntry = 0;
    }
    this.sinceIndexEntry += size;
    this.lastTerm = r.term;
    if (r.offsetCount > 0) this.nextOffset = nextOffsetAfter(r);
    if (r.maxTimestampMs > this.maxTimestampMs) this.maxTimestampMs = r.maxTimestampMs;
    this.pending.push(encodeRecordHeader(r));
    if (r.data.byteLength > 0) this.pending.push(r.data);
    this.pendingBytes += size;
    this.bytes += size;
    if (this.pendingBytes >= WRITE_BATCH_BYTES) await this.flush();
  }

  private async flush(): Promise<void> {
    if (this.pending.length === 0) return;
    const parts = this.pending;
    const bytes = this.pendingBytes;
    this.pending = [];
    this.pendingBytes = 0;
    await this.throttle.take(bytes);
    await this.file!.append(parts);
  }

  /** The log file flushed, synced and closed; the index written beside it and synced. */
  async finish(files: CleanerFiles, tmpIndex: string): Promise<void> {
    await this.flush();
    const file = this.file!;
    this.file = undefined;
    try {
      await file.datasync();
    } finally {
      await file.close();
    }
    const index = encodeIndexEntries(this.entries);
    this.indexBytes = index.byteLength;
    const f = await files.create(tmpIndex);
    try {
      await f.append([index]);
      await f.datasync();
    } finally {
      await f.close();
    }
  }

  /** Closes the log file if finish() did not. */
  async abandon(): Promise<void> {
    const file = this.file;
    this.file = undefined;
    await file?.close().catch(() => undefined);
  }
}
