// The default partitioner. With a key: Kafka's murmur2 of the key bytes, made positive, modulo
// the partition count (so keyed records land on the same partition numbers as with Kafka's
// Java client). Without a key: "sticky" — records go to one partition until a batch there is
// closed, then the next partition (round-robin), which keeps batches large at low latency.

/** Kafka's Utils.murmur2 (seed 0x9747b28c) as a signed 32-bit integer. */
export function murmur2(data: Uint8Array): number {
  const length = data.length;
  const m = 0x5bd1e995;
  const r = 24;
  let h = (0x9747b28c ^ length) | 0;
  const length4 = length >>> 2;
  for (let i = 0; i < length4; i++) {
    const i4 = i * 4;
    let k =
      (data[i4]! & 0xff) |
      ((data[i4 + 1]! & 0xff) << 8) |
      ((data[i4 + 2]! & 0xff) << 16) |
      ((data[i4 + 3]! & 0xff) << 24);
    k = Math.imul(k, m);
    k ^= k >>> r;
    k = Math.imul(k, m);
    h = Math.imul(h, m);
    h ^= k;
  }
  const tail = length & ~3;
  const rest = length % 4;
  if (rest >= 3) h ^= (data[tail + 2]! & 0xff) << 16;
  if (rest >= 2) h ^= (data[tail + 1]! & 0xff) << 8;
  if (rest >= 1) {
    h ^= data[tail]! & 0xff;
    h = Math.imul(h, m);
  }
  h ^= h >>> 13;
  h = Math.imul(h, m);
  h ^= h >>> 15;
  return h | 0;
}

export function toPositive(n: number): number {
  return n & 0x7fffffff;
}

export function partitionForKey(key: Uint8Array, partitionCount: number): number {
  return toPositive(murmur2(key)) % partitionCount;
}

/** The default: murmur2 of the key, or sticky round-robin without a key. */
export class DefaultPartitioner {
  private readonly sticky = new Map<string, number>();
  private readonly topicsMax = 10_000;

  partition(topic: string, key: Uint8Array | null, partitionCount: number): number {
    if (key !== null) return partitionForKey(key, partitionCount);
    let p = this.sticky.get(topic);
    if (p === undefined || p >= partitionCount) {
      if (this.sticky.size >= this.topicsMax) this.sticky.clear();
      p = Math.floor(Math.random() * partitionCount);
      this.sticky.set(topic, p);
    }
    return p;
  }

  /** A batch of the sticky partition was closed: move unkeyed records to the next partition. */
  onBatchClosed(topic: string, partition: number, partitionCount: number): void {
    if (this.sticky.get(topic) === partition)
      this.sticky.set(topic, (partition + 1) % partitionCount);
  }
}
