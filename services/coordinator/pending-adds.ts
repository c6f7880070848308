// AddPartitionsToTxn requests of one transactional id that wait for its lock together are
// written as one record. With transactions V2 the brokers add partitions for the producer
// (KIP-890 part 2): the first batches of a transaction reach several partition leaders at once,
// and each asks the coordinator; without this each would wait for the previous one's Raft write.
import { partitionKey, type TopicPartitionRef } from "./transaction-metadata.js";

/** Requests of one producer waiting to be written together. */
interface PendingAdd {
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly partitions: Map<string, TopicPartitionRef>;
  /** False once the writer has taken the partitions: later requests open a new batch. */
  open: boolean;
  readonly done: Promise<void>;
}

/**
 * Takes the batch's partitions; call it once the id's lock is held, so that every request that
 * joined before is in the record and every request after it opens the next batch.
 */
export type TakePartitions = () => TopicPartitionRef[];

export class PendingAdds {
  private readonly open = new Map<string, PendingAdd>();

  /** Ids with an open batch (bounded by the requests waiting for their locks). */
  get size(): number {
    return this.open.size;
  }

  /**
   * Joins the open batch of the id when it is the same producer's and stays within
   * partitionsMax, else opens one whose `write` runs once for all who join it. Every joiner gets
   * the outcome of that one write.
   */
  join(
    transactionalId: string,
    producerId: bigint,
    producerEpoch: number,
    partitions: readonly TopicPartitionRef[],
    partitionsMax: number,
    write: (take: TakePartitions) => Promise<void>,
  ): Promise<void> {
    const pending = this.open.get(transactionalId);
    if (
      pending !== undefined &&
      pending.open &&
      pending.producerId === producerId &&
      pending.producerEpoch === producerEpoch &&
      pending.partitions.size + partitions.length <= partitionsMax
    ) {
      for (const tp of partitions) pending.partitions.set(partitionKey(tp), tp);
      return pending.done;
    }
    const batch: { -readonly [K in keyof PendingAdd]: PendingAdd[K] } = {
      producerId,
      producerEpoch,
      partitions: new Map(partitions.map((tp) => [partitionKey(tp), tp])),
      open: true,
      done: Promise.resolve(),
    };
    // Only a batch no one else may join yet is replaced: a closed one is being written.
    if (pending === undefined || !pending.open) this.open.set(transactionalId, batch);
    const take: TakePartitions = () => {
      batch.open = false;
      if (this.open.get(transactionalId) === batch) this.open.delete(transactionalId);
      return [...batch.partitions.values()];
    };
    batch.done = write(take).finally(() => {
      batch.open = false;
      if (this.open.get(transactionalId) === batch) this.open.delete(transactionalId);
    });
    return batch.done;
  }
}
