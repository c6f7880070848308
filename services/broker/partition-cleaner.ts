// The broker's log cleaner (docs/storage.md, "Compaction"): one per process, over the replicas of
// compacted topics it holds, leader or follower (each replica cleans its own segments). It
// cleans one replica at a time: those whose oldest dirty record is past max.compaction.lag.ms
// first (oldest first), then the dirtiest whose dirty ratio reaches min.cleanable.dirty.ratio;
// when none is due it waits --cleaner-backoff-ms. The key map (its memory budget) and the
// I/O throttle are the LogCleaner's, shared by every clean. A clean logs one line and counts
// into the cleaner metrics (cleaner-metrics.ts).
import type { Logger } from "../../libs/common/logger.js";
import { haltOnAssertion } from "../../libs/common/assert.js";
import type { SchedulingClock, TimerHandle } from "../../libs/runtime/scheduler.js";
import { sleep } from "../../libs/runtime/sleep.js";
import { CleanProgress } from "../../libs/storage/clean-progress.js";
import { IoThrottle } from "../../libs/storage/io-throttle.js";
import { LogCleaner, type CleanOutcome, type DirtyView } from "../../libs/storage/log-cleaner.js";
import type { LocalPartition } from "./local-partition.js";
import type { PartitionStateMachine } from "./partition-state-machine.js";

/** A replica whose clean failed or was skipped is not tried again before this. */
const RETRY_AFTER_MS = 60_000;

export interface PartitionCleanerOptions {
  readonly partitions: () => Iterable<LocalPartition>;
  readonly logger: Logger;
  readonly clock: SchedulingClock;
  readonly mapBytes: number;
  readonly ioBytesPerSecond: number;
  readonly backoffMs: number;
  readonly indexIntervalBytes: number;
}

/** Plain counters the metrics read when scraped. */
export interface CleanerStats {
  bytesRead: number;
  bytesWritten: number;
  cleans: number;
  readonly skipped: Map<string, number>;
  /** The last clean's fill of the key map (0-1). */
  mapUtilisation: number;
}

interface Candidate {
  readonly local: LocalPartition;
  readonly progress: CleanProgress;
  readonly view: DirtyView;
  /** Past max.compaction.lag.ms: how far (ms); -1 when not. */
  readonly overdueMs: number;
}

export class PartitionCleaner {
  readonly stats: CleanerStats = {
    bytesRead: 0,
    bytesWritten: 0,
    cleans: 0,
    skipped: new Map(),
    mapUtilisation: 0,
  };
  private readonly cleaner: LogCleaner;
  /** Per replica (a reopened replica is a new state machine: it starts from the stored clean point). */
  private readonly progress = new WeakMap<PartitionStateMachine, CleanProgress>();
  private readonly retryAt = new WeakMap<PartitionStateMachine, number>();
  private timer: TimerHandle | undefined;
  private running: Promise<void> | undefined;
  private closed = false;

  constructor(private readonly o: PartitionCleanerOptions) {
    this.cleaner = new LogCleaner({
      mapBytes: o.mapBytes,
      indexIntervalBytes: o.indexIntervalBytes,
      throttle: new IoThrottle(
        o.ioBytesPerSecond,
        () => o.clock.monotonicMs(),
        (ms) => sleep(o.clock, ms),
      ),
    });
  }

  start(): void {
    this.schedule(this.o.backoffMs);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.o.clock.clearTimeout(this.timer);
    await this.running;
  }

  private schedule(ms: number): void {
    if (this.closed) return;
    this.timer = this.o.clock.setTimeout(() => {
      this.running = this.pass().finally(() => (this.running = undefined));
    }, ms);
  }

  /** Cleans the replica that needs it most, if any; then looks again (at once after a clean). */
  private async pass(): Promise<void> {
    let cleaned = false;
    try {
      cleaned = (await this.cleanOnce()) !== undefined;
    } catch (e) {
      if (haltOnAssertion(e)) return;
      this.o.logger.error({ err: e }, "log cleaner pass failed");
    }
    this.schedule(cleaned ? 0 : this.o.backoffMs);
  }

  /** One clean of the replica chosen now; undefined when none needs one. */
  async cleanOnce(): Promise<CleanOutcome | undefined> {
    const c = this.choose();
    if (c === undefined) return undefined;
    const sm = c.local.stateMachine;
    const settings = c.local.compaction();
    const startedMs = this.o.clock.monotonicMs();
    let out: CleanOutcome;
    try {
      out = await sm.clean(this.cleaner, c.progress, settings);
    } catch (e) {
      if (haltOnAssertion(e)) throw e;
      this.stats.skipped.set("error", (this.stats.skipped.get("error") ?? 0) + 1);
      this.retryAt.set(sm, this.o.clock.monotonicMs() + RETRY_AFTER_MS);
      this.o.logger.error(
        { err: e, topic: c.local.topic, partition: c.local.partition },
        "partition not compacted: the clean failed (tried again in a minute)",
      );
      return undefined;
    }
    this.stats.bytesRead += out.bytesRead;
    const where = { topic: c.local.topic, partition: c.local.partition };
    if (out.kind === "skipped") {
      this.stats.skipped.set(out.reason, (this.stats.skipped.get(out.reason) ?? 0) + 1);
      this.retryAt.set(sm, this.o.clock.monotonicMs() + RETRY_AFTER_MS);
      this.o.logger.info(
        { ...where, reason: out.reason, dirtyBytes: c.view.dirtyBytes },
        out.reason === "transactional"
          ? "partition not compacted: a transactional batch an older build stored decoded stops the clean (retention ends it)"
          : "partition not compacted",
      );
      return out;
    }
    this.stats.cleans++;
    this.stats.bytesWritten += out.bytesWritten;
    this.stats.mapUtilisation = out.mapUtilisation;
    this.o.logger.info(
      {
        ...where,
        firstOffset: String(out.firstOffset),
        endOffset: String(out.endOffset),
        segments: out.segments,
        segmentsRewritten: out.segmentsRewritten,
        segmentsMerged: out.segmentsMerged,
        bytesBefore: out.bytesBefore,
        bytesAfter: out.bytesAfter,
        recordsKept: out.recordsKept,
        recordsRemoved: out.recordsRemoved,
        tombstonesRemoved: out.tombstonesRemoved,
        abortedRemoved: out.abortedRemoved,
        markersRemoved: out.markersRemoved,
        dirtyRatio: Number(c.view.ratio.toFixed(3)),
        mapUtilisation: Number(out.mapUtilisation.toFixed(3)),
        durationMs: Math.round(this.o.clock.monotonicMs() - startedMs),
      },
      "partition compacted",
    );
    return out;
  }

  private progressOf(sm: PartitionStateMachine): CleanProgress {
    let p = this.progress.get(sm);
    // From the log's stored clean point; again when the log lowered it (a truncation, an
    // installed snapshot, a repaired segment): what lies above it is dirty again.
    if (p === undefined || sm.firstDirtyOffset() < p.firstDirtyOffset) {
      p = new CleanProgress(sm.firstDirtyOffset());
      this.progress.set(sm, p);
    }
    return p;
  }

  private choose(): Candidate | undefined {
    const now = this.o.clock.monotonicMs();
    let best: Candidate | undefined;
    for (const local of this.o.partitions()) {
      const settings = local.compaction();
      if (!settings.compact) continue;
      const sm = local.stateMachine;
      if ((this.retryAt.get(sm) ?? 0) > now) continue;
      const progress = this.progressOf(sm);
      const view = sm.dirtyView(progress, settings.minCompactionLagMs);
      // A tombstone or a marker waiting for delete.retention.ms makes a clean due on its own.
      const removalOverdueMs = sm.replicatedTimeMs() - progress.nextRemovalAtMs;
      if (view.dirtyBytes === 0 && !(removalOverdueMs >= 0)) continue;
      const age =
        view.oldestDirtyAppendMs < 0 ? -1 : sm.replicatedTimeMs() - view.oldestDirtyAppendMs;
      const overdueMs = Math.max(
        age > settings.maxCompactionLagMs ? age - settings.maxCompactionLagMs : -1,
        removalOverdueMs >= 0 ? removalOverdueMs : -1,
      );
      if (overdueMs < 0 && view.ratio < settings.minCleanableDirtyRatio) continue;
      const c: Candidate = { local, progress, view, overdueMs };
      if (best === undefined || better(c, best)) best = c;
    }
    return best;
  }

  /** Cleaner lag: the age of the oldest dirty record among compacted replicas (replicated clock), 0 when none. */
  maxDirtyAgeMs(): number {
    let max = 0;
    for (const local of this.o.partitions()) {
      const settings = local.compaction();
      if (!settings.compact) continue;
      const sm = local.stateMachine;
      const view = sm.dirtyView(this.progressOf(sm), 0);
      if (view.oldestDirtyAppendMs >= 0)
        max = Math.max(max, sm.replicatedTimeMs() - view.oldestDirtyAppendMs);
    }
    return max;
  }
}

/** Overdue replicas first (the most overdue first), then the highest dirty ratio. */
function better(a: Candidate, b: Candidate): boolean {
  if (a.overdueMs >= 0 || b.overdueMs >= 0) return a.overdueMs > b.overdueMs;
  return a.view.ratio > b.view.ratio;
}
