// One process-wide bound on the journaled heads: the entries a journaled group (a partition
// replica, whose applied log holds its entries on disk) has applied since its last snapshot.
// Those entries stay in memory until a snapshot lets the group compact them, so without a
// bound shared by every group a process holding many partitions would keep up to
// snapshotBytesInterval per partition. The apply that takes the total past the budget makes the
// largest heads take their snapshots at once (a partition snapshot is metadata only: cheap),
// largest first, until the total is down to the low-water mark; so the total never stays past
// the budget, whichever group happens to apply next.

/** A journaled group, as the budget sees it. */
export interface HeadHolder {
  /** Applied entry bytes held since its last snapshot. */
  headBytes(): number;
  /**
   * Takes its snapshot now if it can, reporting the bytes it let go through released(). It
   * cannot while its previous snapshot's applied log is still syncing, nor while a leader's
   * snapshot waits in its core (host-group.ts maybeSnapshot).
   */
  releaseHead(): void;
}

/**
 * What a crossing brings the total down to, as a fraction of the budget: each crossing releases
 * about a quarter of it, so the holders are sorted once per quarter of the budget applied.
 */
const LOW_WATER_FRACTION = 0.75;

export class HeadBudget {
  private totalBytes = 0;
  private readonly holders = new Set<HeadHolder>();
  /** After a pass that fell short of the low-water mark, the total at which to try again. */
  private retryAtBytes = 0;

  constructor(readonly bytesMax: number) {}

  /** A journaled group opened (its head starts empty: it was restored from its snapshot). */
  opened(holder: HeadHolder): void {
    this.holders.add(holder);
  }

  /** A journaled group closed or was dropped, holding its head. */
  closed(holder: HeadHolder): void {
    if (this.holders.delete(holder)) this.released(holder.headBytes());
  }

  applied(bytes: number): void {
    this.totalBytes += bytes;
  }

  /** A snapshot (taken or installed) let a group's head go. */
  released(bytes: number): void {
    this.totalBytes = Math.max(0, this.totalBytes - bytes);
  }

  overBudget(): boolean {
    return this.totalBytes > this.bytesMax;
  }

  /**
   * Past the budget: the largest heads release, largest first, until the total is at the
   * low-water mark. `except` cannot snapshot now (it is applying a conf change the core has not
   * taken yet); holders that cannot release are passed over. A pass that falls short of the
   * mark (the large heads could not release) is not repeated until another quarter of the
   * budget has been applied: otherwise every apply would sort every holder again.
   */
  enforce(except?: HeadHolder): void {
    if (!this.overBudget() || this.totalBytes < this.retryAtBytes) return;
    const lowWater = this.bytesMax * LOW_WATER_FRACTION;
    const bySize = [...this.holders]
      .map((h) => ({ h, bytes: h.headBytes() }))
      .filter((x) => x.bytes > 0 && x.h !== except)
      .sort((a, b) => b.bytes - a.bytes);
    for (const { h } of bySize) {
      if (this.totalBytes <= lowWater) break;
      h.releaseHead();
    }
    this.retryAtBytes =
      this.totalBytes <= lowWater ? 0 : this.totalBytes + (this.bytesMax - lowWater);
  }

  usedBytes(): number {
    return this.totalBytes;
  }
}
