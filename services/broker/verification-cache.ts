// The leader-local memory of successful KIP-890 add-partition verifications: "the coordinator
// said partition P is in the ongoing transaction of (pid, epoch)". An entry is only true while
// that transaction is open, so a COMMIT/ABORT marker applied to P for pid ends it (forget), and
// a snapshot installed on P (markers it never applied one by one) ends every entry of P. Without
// that, a very late duplicate first batch of an ended transaction whose producer state expired
// would be appended without asking the coordinator: a hanging transaction. Bounded: the oldest
// entry goes first (a miss only costs one more round trip to the coordinator).

export class VerificationCache {
  /** Entry key → where it belongs; insertion order is age (a hit re-inserts it). */
  private readonly entries = new Map<string, { partitionKey: string; producerId: string }>();
  /** Partition key → producer id → entry keys, so a marker finds its entries without a scan. */
  private readonly byPartition = new Map<string, Map<string, Set<string>>>();
  /** Bumped by every forget: a verification that raced one is not remembered (see begin). */
  private forgets = 0;

  constructor(readonly entriesMax: number) {
    if (!Number.isSafeInteger(entriesMax) || entriesMax < 1)
      throw new RangeError(
        `verification cache bound must be a positive integer, got ${entriesMax}`,
      );
  }

  get size(): number {
    return this.entries.size;
  }

  has(producerId: bigint, producerEpoch: number, topic: string, partition: number): boolean {
    const key = entryKey(producerId, producerEpoch, topic, partition);
    const entry = this.entries.get(key);
    if (entry === undefined) return false;
    this.entries.delete(key);
    this.entries.set(key, entry);
    return true;
  }

  /** A token to pass to add(): taken before asking the coordinator. */
  begin(): number {
    return this.forgets;
  }

  /**
   * Remembers a success, unless a marker was applied since begin() (the answer may describe a
   * transaction that has just ended; the next batch simply asks again). True when remembered.
   */
  add(
    token: number,
    producerId: bigint,
    producerEpoch: number,
    topic: string,
    partition: number,
  ): boolean {
    if (token !== this.forgets) return false;
    const key = entryKey(producerId, producerEpoch, topic, partition);
    if (this.entries.has(key)) return true;
    while (this.entries.size >= this.entriesMax) this.evictOldest();
    const partitionKey = partitionKeyOf(topic, partition);
    const pid = producerId.toString();
    this.entries.set(key, { partitionKey, producerId: pid });
    let producers = this.byPartition.get(partitionKey);
    if (producers === undefined) this.byPartition.set(partitionKey, (producers = new Map()));
    let keys = producers.get(pid);
    if (keys === undefined) producers.set(pid, (keys = new Set()));
    keys.add(key);
    return true;
  }

  /** A marker of producerId was applied to the partition (every epoch: a marker may bump it); undefined: every producer. */
  forget(topic: string, partition: number, producerId?: bigint): void {
    this.forgets += 1;
    const partitionKey = partitionKeyOf(topic, partition);
    const producers = this.byPartition.get(partitionKey);
    if (producers === undefined) return;
    const pids = producerId === undefined ? [...producers.keys()] : [producerId.toString()];
    for (const pid of pids) {
      for (const key of producers.get(pid) ?? []) this.entries.delete(key);
      producers.delete(pid);
    }
    if (producers.size === 0) this.byPartition.delete(partitionKey);
  }

  private evictOldest(): void {
    const oldest = this.entries.keys().next();
    if (oldest.done === true) return;
    const key = oldest.value;
    const entry = this.entries.get(key)!;
    this.entries.delete(key);
    const producers = this.byPartition.get(entry.partitionKey);
    const keys = producers?.get(entry.producerId);
    keys?.delete(key);
    if (keys !== undefined && keys.size === 0) producers!.delete(entry.producerId);
    if (producers !== undefined && producers.size === 0)
      this.byPartition.delete(entry.partitionKey);
  }
}

function partitionKeyOf(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}

function entryKey(
  producerId: bigint,
  producerEpoch: number,
  topic: string,
  partition: number,
): string {
  return `${producerId}\u0000${producerEpoch}\u0000${topic}\u0000${partition}`;
}
