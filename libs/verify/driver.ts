// What the verify workload needs from a cluster, with one implementation per protocol:
// grpc-driver.ts (tern's own client) and kafka-driver.ts (kafkajs on any Kafka-protocol
// cluster). Offsets are plain numbers: a verify run writes far fewer than 2^53 records.

export interface TopicSpec {
  readonly name: string;
  readonly partitions: number;
}

export interface PolledRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly value: string;
}

/** One transactional producer instance (a transactional id; a new instance fences the old). */
export interface TxnProducer {
  begin(): Promise<void>;
  /** Sends values to one partition in the open transaction; answers their offsets, in order. */
  send(topic: string, partition: number, values: readonly string[]): Promise<number[]>;
  /** Commits `offset` (the next to consume) for the group's partition with the transaction. */
  sendOffsets(groupId: string, topic: string, partition: number, offset: number): Promise<void>;
  commit(): Promise<void>;
  abort(): Promise<void>;
  close(): Promise<void>;
}

/** A read_committed reader of assigned partitions, without a group (positions are its own). */
export interface Poller {
  /** Moves the position of one partition (the next offset poll returns from). */
  seek(topic: string, partition: number, offset: number): void;
  /** Up to maxRecords records in offset order per partition, waiting up to timeoutMs. */
  poll(maxRecords: number, timeoutMs: number): Promise<PolledRecord[]>;
  close(): Promise<void>;
}

export interface VerifyDriver {
  readonly protocol: "grpc" | "kafka";
  createTopics(topics: readonly TopicSpec[]): Promise<void>;
  deleteTopics(names: readonly string[]): Promise<void>;
  /** A producer with the id, initialised: fences every earlier instance of the id. */
  txnProducer(transactionalId: string): Promise<TxnProducer>;
  /** A read_committed poller of the partitions, each starting at offset 0. */
  poller(partitions: ReadonlyArray<{ topic: string; partition: number }>): Promise<Poller>;
  /** The group's committed offset of a partition (undefined when none), once stable. */
  committedOffset(groupId: string, topic: string, partition: number): Promise<number | undefined>;
  close(): Promise<void>;
}
