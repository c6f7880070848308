// Kafka places a transactional id (and a group id) on partition
// Utils.abs(String.hashCode()) % n. We use the same formula so that ids map to the same
// partition numbers as in Kafka.

/** Java's String.hashCode: s[0]*31^(n-1) + ... + s[n-1], in 32-bit two's complement over UTF-16 units. */
export function javaStringHashCode(s: string): number {
  let h = 0;
  for (let i = 0; i < s.length; i++) {
    h = (Math.imul(31, h) + s.charCodeAt(i)) | 0;
  }
  return h;
}

/** Kafka's Utils.abs: Integer.MIN_VALUE maps to 0 instead of staying negative. */
export function kafkaAbs(n: number): number {
  return n === -2147483648 ? 0 : Math.abs(n);
}

export function partitionFor(id: string, partitionCount: number): number {
  if (!Number.isInteger(partitionCount) || partitionCount <= 0)
    throw new RangeError(`partitionCount must be a positive integer, got ${partitionCount}`);
  return kafkaAbs(javaStringHashCode(id)) % partitionCount;
}

/**
 * The controller's default partition counts of __transaction_state and __consumer_offsets
 * (TERN_TXN_STATE_PARTITIONS / TERN_OFFSETS_PARTITIONS). Only the controller creating the topics
 * may use them: everything that hashes an id takes the count of the topic in cluster metadata
 * (libs/metadata/lookup.ts), since a cluster may have been set up with other counts.
 */
export const TXN_LOG_PARTITIONS_DEFAULT = 50;
export const OFFSETS_PARTITIONS_DEFAULT = 50;
