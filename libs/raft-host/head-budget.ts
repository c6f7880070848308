// One process-wide bound on the journaled heads: the entries a journaled group (a partition
// replica, whose applied log holds its entries on disk) has applied since its last snapshot.
// Those entries stay in memory until a snapshot lets the group compact them, so without a
// bound shared by every group a process holding many partitions would keep up to
// snapshotBytesInterval per partition. Past the budget, a group holding at least its share
// takes its snapshot at its next apply (a partition snapshot is metadata only: cheap).
export class HeadBudget {
  private totalBytes = 0;
  private groups = 0;

  constructor(readonly bytesMax: number) {}

  /** A journaled group opened (its head starts empty: it was restored from its snapshot). */
  opened(): void {
    this.groups += 1;
  }

  /** A journaled group closed or was dropped, holding bytes of head. */
  closed(bytes: number): void {
    this.groups = Math.max(0, this.groups - 1);
    this.released(bytes);
  }

  applied(bytes: number): void {
    this.totalBytes += bytes;
  }

  /** A snapshot (taken or installed) let a group's head go. */
  released(bytes: number): void {
    this.totalBytes = Math.max(0, this.totalBytes - bytes);
  }

  /**
   * Whether a group holding groupBytes should snapshot now: the total is past the budget and the
   * group holds at least an even share of it (some group always does, so the total comes down).
   */
  shouldRelease(groupBytes: number): boolean {
    return (
      this.totalBytes > this.bytesMax && groupBytes * Math.max(1, this.groups) >= this.bytesMax
    );
  }

  usedBytes(): number {
    return this.totalBytes;
  }
}
