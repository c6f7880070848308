// Per-partition queues of batches (Kafka's RecordAccumulator). Appends fill the last open
// batch up to batchSize bytes (or the broker's per-batch record bound); the sender drains
// ready batches in sequence order, at most maxInFlight per partition, and puts failed ones
// back in sequence order so that a retry resends from the failed batch onwards.
import { ProducerBatch, type PendingRecord } from "./producer-batch.js";

export const RECORDS_PER_BATCH_MAX = 10_000;
export const SEQUENCE_MAX = 2 ** 31 - 1;

export interface PartitionQueue {
  readonly topic: string;
  readonly partition: number;
  /** Waiting to be sent (new, or put back for a retry), sorted: retried ones (by sequence) first. */
  readonly batches: ProducerBatch[];
  readonly inFlight: Set<ProducerBatch>;
  /** Next sequence number to assign (idempotence). */
  nextSequence: number;
  /** After a retriable failure: resend one batch at a time, in order, until the retried ones are through. */
  retrying: boolean;
  /** Leader address named by a NOT_LEADER_OR_FOLLOWER answer; preferred over (possibly stale) metadata until a send to it fails. */
  leaderHint: string | undefined;
}

/** a comes before b in the wrapping 31-bit sequence space (at most half the space apart). */
export function sequenceBefore(a: number, b: number): boolean {
  const distance = (b - a + SEQUENCE_MAX + 1) % (SEQUENCE_MAX + 1);
  return distance !== 0 && distance <= SEQUENCE_MAX / 2;
}

export function tpKey(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}

export class Accumulator {
  /**
   * One queue per partition this producer has written to, kept for its sequence numbers (as
   * Kafka's producer keeps them): bounded by the partitions of the topics it writes, not by data.
   */
  readonly queues = new Map<string, PartitionQueue>();

  constructor(
    private readonly batchSizeBytes: number,
    private readonly deliveryTimeoutMs: number,
  ) {}

  queue(topic: string, partition: number): PartitionQueue {
    const key = tpKey(topic, partition);
    let q = this.queues.get(key);
    if (!q) {
      q = {
        topic,
        partition,
        batches: [],
        inFlight: new Set(),
        nextSequence: 0,
        retrying: false,
        leaderHint: undefined,
      };
      this.queues.set(key, q);
    }
    return q;
  }

  /** Appends a record; returns true when it closed a full batch (the partitioner may move on). */
  append(topic: string, partition: number, record: PendingRecord, nowMs: number): boolean {
    const q = this.queue(topic, partition);
    let last = q.batches[q.batches.length - 1];
    let closedOne = false;
    if (
      last &&
      !last.closed &&
      (last.bytes + record.bytes > this.batchSizeBytes ||
        last.records.length >= RECORDS_PER_BATCH_MAX) &&
      last.records.length > 0
    ) {
      last.closed = true;
      closedOne = true;
    }
    if (!last || last.closed) {
      last = new ProducerBatch(topic, partition, nowMs, nowMs + this.deliveryTimeoutMs);
      q.batches.push(last);
    }
    last.add(record);
    if (last.bytes >= this.batchSizeBytes) {
      last.closed = true;
      closedOne = true;
    }
    return closedOne;
  }

  /** Puts a batch back for a retry, keeping sequence order ahead of never-sent batches. */
  requeue(q: PartitionQueue, batch: ProducerBatch): void {
    q.inFlight.delete(batch);
    q.retrying = true;
    let i = 0;
    while (
      i < q.batches.length &&
      q.batches[i]!.baseSequence >= 0 &&
      sequenceBefore(q.batches[i]!.baseSequence, batch.baseSequence)
    )
      i++;
    q.batches.splice(i, 0, batch);
  }

  /** True when another batch of q with an earlier sequence is unresolved (in flight or waiting for its resend). */
  hasEarlierUnresolved(q: PartitionQueue, batch: ProducerBatch): boolean {
    if (batch.baseSequence < 0) return false;
    for (const b of q.inFlight)
      if (b !== batch && b.baseSequence >= 0 && sequenceBefore(b.baseSequence, batch.baseSequence))
        return true;
    for (const b of q.batches)
      if (b !== batch && b.baseSequence >= 0 && sequenceBefore(b.baseSequence, batch.baseSequence))
        return true;
    return false;
  }

  /** Every batch not yet done (queued or in flight). */
  pendingBatches(): ProducerBatch[] {
    const out: ProducerBatch[] = [];
    for (const q of this.queues.values()) out.push(...q.batches, ...q.inFlight);
    return out;
  }

  inFlightCount(): number {
    let n = 0;
    for (const q of this.queues.values()) n += q.inFlight.size;
    return n;
  }

  /** A new producer epoch or id: sequences start again at 0 and unsent batches forget theirs. */
  resetSequences(): void {
    for (const q of this.queues.values()) {
      q.nextSequence = 0;
      q.retrying = false;
      for (const b of q.batches) b.baseSequence = -1;
    }
  }
}
