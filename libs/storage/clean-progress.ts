// How far a replica's log is cleaned, in memory (docs/storage.md, "Compaction"): the first dirty
// offset (the clean section ends there) and when each clean ran, for tombstones. A tombstone may
// go once delete.retention.ms has passed since the first clean that covered it (that clean
// removed every older record of its key). After a restart the log counts as dirty from its start
// and tombstones wait from the next clean: later than needed, never earlier.

/** Passes kept; past it the two oldest merge, keeping the later time (never earlier removal). */
const PASSES_MAX = 64;

export class CleanProgress {
  private dirtyFrom = 0n;
  /** (end offset exclusive, replicated time) of each clean, in order; ends increase. */
  private readonly passes: Array<{ end: bigint; atMs: number }> = [];

  get firstDirtyOffset(): bigint {
    return this.dirtyFrom;
  }

  /** The last offset a clean covered (-1 before any). */
  lastCleanedOffset(): bigint {
    return this.dirtyFrom - 1n;
  }

  /** A clean covered the log up to end (exclusive) at replicated time atMs. */
  cleaned(end: bigint, atMs: number): void {
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

  /** Whether the latest record of a key at offset, a tombstone, may be removed at nowMs. */
  tombstoneRemovable(offset: bigint, nowMs: number, deleteRetentionMs: number): boolean {
    const first = this.passes.find((p) => p.end > offset);
    return first !== undefined && nowMs - first.atMs >= deleteRetentionMs;
  }
}
