// AddPartitionsToTxn requests of one transactional id that wait for its lock together are
// written as one record. With transactions V2 the brokers add partitions for the producer
// (KIP-890 part 2): the first batches of a transaction reach several partition leaders at once,
// and each asks the coordinator; without this each would wait for the previous one's Raft write.
// The completion of the previous transaction, which holds the lock while its markers go out,
// may instead claim the waiting batch and write it in its own Complete* record.
import { partitionKey, type TopicPartitionRef } from "./transaction-metadata.js";

/** Requests of one producer waiting to be written together. */
interface PendingAdd {
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly partitions: Map<string, TopicPartitionRef>;
  /** False once the partitions were taken or claimed: later requests open a new batch. */
  open: boolean;
  readonly done: Promise<void>;
  /** Settles done; only the first call counts. */
  settle(error?: unknown): void;
}

/**
 * Takes the batch's partitions; call it once the id's lock is held, so that every request that
 * joined before is in the record and every request after it opens the next batch. Undefined:
 * the batch was claimed (its record is written by the claimer) and there is nothing to write.
 */
export type TakePartitions = () => TopicPartitionRef[] | undefined;

/** A batch taken by another writer: write its partitions, then settle it with the outcome. */
export interface ClaimedAdds {
  readonly partitions: TopicPartitionRef[];
  settle(error?: unknown): void;
}

export class PendingAdds {
  private readonly open = new Map<string, PendingAdd>();

  /** Ids with an open batch (bounded by the requests waiting for their locks). */
  get size(): number {
    return this.open.size;
  }

  /**
   * Joins the open batch of the id when it is the same producer's and stays within
   * partitionsMax, else opens one whose `write` runs once for all who join it. Every joiner gets
   * the outcome of that one write (or of the claimer's).
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
    let settled = false;
    let resolve!: () => void;
    let reject!: (e: unknown) => void;
    const batch: PendingAdd = {
      producerId,
      producerEpoch,
      partitions: new Map(partitions.map((tp) => [partitionKey(tp), tp])),
      open: true,
      done: new Promise<void>((res, rej) => ((resolve = res), (reject = rej))),
      settle: (error) => {
        if (settled) return;
        settled = true;
        this.close(transactionalId, batch);
        if (error === undefined) resolve();
        else reject(error);
      },
    };
    // Only a batch no one may join any more is replaced (it is being written).
    if (pending === undefined || !pending.open) this.open.set(transactionalId, batch);
    const take: TakePartitions = () => {
      if (!batch.open) return undefined;
      this.close(transactionalId, batch);
      return [...batch.partitions.values()];
    };
    write(take).then(
      () => batch.settle(),
      (e: unknown) => batch.settle(e ?? new Error("add failed")),
    );
    return batch.done;
  }

  /** Takes the id's open batch when it is this producer's; the caller writes it and settles it. */
  claim(
    transactionalId: string,
    producerId: bigint,
    producerEpoch: number,
  ): ClaimedAdds | undefined {
    const pending = this.open.get(transactionalId);
    if (
      pending === undefined ||
      !pending.open ||
      pending.producerId !== producerId ||
      pending.producerEpoch !== producerEpoch
    )
      return undefined;
    this.close(transactionalId, pending);
    return { partitions: [...pending.partitions.values()], settle: pending.settle };
  }

  private close(transactionalId: string, batch: PendingAdd): void {
    batch.open = false;
    if (this.open.get(transactionalId) === batch) this.open.delete(transactionalId);
  }
}
