// How far a replica's log is cleaned, in memory (docs/storage.md, "Compaction"): the first dirty
// offset (the clean section ends there; it starts from the log's stored clean point,
// clean-point.ts) and when each clean ran, for tombstones. A tombstone may go once
// delete.retention.ms has passed since the first clean that covered it (that clean removed every
// older record of its key). The times are not stored: after a restart the tombstones of the
// restored clean section wait from the first clean since, later than needed, never earlier
// (that clean comes once something is dirty again). The same holds for
// transaction markers: a marker may go once delete.retention.ms has passed since a clean first
// found every record of its transaction gone.

/** Passes kept; past it the two oldest merge, keeping the later time (never earlier removal). */
const PASSES_MAX = 64;

export class CleanProgress {
  /** firstDirtyOffset: where the log's stored clean point says the clean section ends (0: none). */
  constructor(private dirtyFrom = 0n) {}

  /** (end offset exclusive, replicated time) of each clean, in order; ends increase. */
  private readonly passes: Array<{ end: bigint; atMs: number }> = [];
  /** Markers (by offset) whose transactions a clean found empty, and when it first did. */
  private readonly emptySince = new Map<bigint, number>();
  /**
   * When the last complete clean left a tombstone or a marker that may go later: a clean is due
   * then even with nothing dirty (Infinity: none waits).
   */
  nextRemovalAtMs = Infinity;

  get firstDirtyOffset(): bigint {
    return this.dirtyFrom;
  }

  /** The last offset a clean covered (-1 before any). */
  lastCleanedOffset(): bigint {
    return this.dirtyFrom - 1n;
  }

  /** A clean covered the log up to end (exclusive) at replicated time atMs. */
  cleaned(end: bigint, atMs: number): void {
    // A clean section restored from the stored point is timed from the first clean since.
    if (this.passes.length === 0 && this.dirtyFrom > 0n)
      this.passes.push({ end: this.dirtyFrom, atMs });
    if (end <= this.dirtyFrom) return;
    this.dirtyFrom = end;
    this.passes.push({ end, atMs });
    if (this.passes.length > PASSES_MAX) {
      const [a, b] = this.passes.splice(0, 2) as [
        { end: bigint; atMs: number },
        { end: bigint; atMs: number },
      ];
      this.passes.unshift({ end: b.end, atMs: Math.max(a.atMs, b.atMs) });
    }
  }

  /**
   * A clean at nowMs found every record of the transaction the marker at offset ends gone: from
   * when the marker may be removed (delete.retention.ms after the first clean that found it so).
   */
  markerRemovableAtMs(offset: bigint, nowMs: number, deleteRetentionMs: number): number {
    let since = this.emptySince.get(offset);
    if (since === undefined) {
      since = nowMs;
      this.emptySince.set(offset, since);
    }
    return since + deleteRetentionMs;
  }

  /** Forgets a marker a clean removed. */
  forgetMarker(offset: bigint): void {
    this.emptySince.delete(offset);
  }

  /** Forgets markers below offset (removed by retention). */
  forgetMarkersBefore(offset: bigint): void {
    for (const o of this.emptySince.keys()) if (o < offset) this.emptySince.delete(o);
  }

  /**
   * From when a tombstone at offset, its key's latest record, may be removed, as seen by a clean
   * at nowMs (which covers it, if no earlier clean did).
   */
  tombstoneRemovableAtMs(offset: bigint, nowMs: number, deleteRetentionMs: number): number {
    const first = this.passes.find((p) => p.end > offset);
    return (first?.atMs ?? nowMs) + deleteRetentionMs;
  }
}
