// The verify workload on tern's own client over gRPC: Producer (transactions V2), Consumer
// (read_committed, manual assignment), Admin. TLS and SCRAM are the options' (the CLI's
// --tls-*/--username settings), passed to every client, as for every other CLI command.
import { Admin, Consumer, Producer, type ClientSecurityOptions } from "../client/index.js";
import type { Poller, PolledRecord, TopicSpec, TxnProducer, VerifyDriver } from "./driver.js";

const REQUEST_TIMEOUT_MS = 10_000;
const TXN_TIMEOUT_MS = 60_000;

export interface GrpcDriverOptions extends ClientSecurityOptions {
  readonly bootstrap: string;
  readonly replicationFactor: number;
}

class GrpcTxnProducer implements TxnProducer {
  constructor(private readonly producer: Producer) {}

  begin(): Promise<void> {
    this.producer.beginTransaction();
    return Promise.resolve();
  }

  async send(topic: string, partition: number, values: readonly string[]): Promise<number[]> {
    const acks = await Promise.all(
      values.map((value) => this.producer.send({ topic, partition, value })),
    );
    return acks.map((m) => Number(m.offset));
  }

  async sendOffsets(groupId: string, topic: string, partition: number, offset: number) {
    await this.producer.sendOffsetsToTransaction([{ topic, partition, offset: BigInt(offset) }], {
      groupId,
      generationId: -1,
      memberId: "",
    });
  }

  commit(): Promise<void> {
    return this.producer.commitTransaction();
  }

  abort(): Promise<void> {
    return this.producer.abortTransaction();
  }

  close(): Promise<void> {
    return this.producer.close({ timeoutMs: 2_000 });
  }
}

class GrpcPoller implements Poller {
  constructor(private readonly consumer: Consumer) {}

  seek(topic: string, partition: number, offset: number): void {
    this.consumer.seek({ topic, partition }, BigInt(offset));
  }

  async poll(maxRecords: number, timeoutMs: number): Promise<PolledRecord[]> {
    const records = await this.consumer.poll({ maxPollRecords: maxRecords, timeoutMs });
    return records.map((r) => ({
      topic: r.topic,
      partition: r.partition,
      offset: Number(r.offset),
      value: r.value?.toString() ?? "",
    }));
  }

  close(): Promise<void> {
    return this.consumer.close();
  }
}

export class GrpcDriver implements VerifyDriver {
  readonly protocol = "grpc" as const;
  private readonly admin: Admin;

  constructor(private readonly options: GrpcDriverOptions) {
    this.admin = new Admin({ ...this.security(), requestTimeoutMs: REQUEST_TIMEOUT_MS });
  }

  /** The bootstrap, TLS and password every client of the driver takes. */
  private security(): ClientSecurityOptions & { bootstrap: string } {
    const { bootstrap, tls, credentials } = this.options;
    return { bootstrap, ...(tls ? { tls } : {}), ...(credentials ? { credentials } : {}) };
  }

  async createTopics(topics: readonly TopicSpec[]): Promise<void> {
    const outcomes = await this.admin.createTopics(
      topics.map((t) => ({ ...t, replicationFactor: this.options.replicationFactor })),
    );
    const failed = outcomes.find((o) => o.error !== undefined);
    if (failed) throw new Error(`create topic ${failed.name}: ${failed.error!.message}`);
    await this.admin.waitForLeaders(topics.map((t) => t.name));
  }

  async deleteTopics(names: readonly string[]): Promise<void> {
    await this.admin.deleteTopics(names);
  }

  async txnProducer(transactionalId: string): Promise<TxnProducer> {
    const producer = new Producer({
      ...this.security(),
      transactionalId,
      transactionTimeoutMs: TXN_TIMEOUT_MS,
      requestTimeoutMs: REQUEST_TIMEOUT_MS,
      lingerMs: 1,
    });
    try {
      await producer.initTransactions();
    } catch (e) {
      await producer.close({ timeoutMs: 1_000 }).catch(() => undefined);
      throw e;
    }
    return new GrpcTxnProducer(producer);
  }

  async poller(partitions: ReadonlyArray<{ topic: string; partition: number }>): Promise<Poller> {
    const consumer = new Consumer({
      ...this.security(),
      isolationLevel: "read_committed",
      autoOffsetReset: "earliest",
      requestTimeoutMs: REQUEST_TIMEOUT_MS,
      fetchMaxWaitMs: 200,
    });
    consumer.assign(partitions);
    for (const p of partitions) consumer.seek(p, 0n);
    return new GrpcPoller(consumer);
  }

  async committedOffset(
    groupId: string,
    topic: string,
    partition: number,
  ): Promise<number | undefined> {
    const consumer = new Consumer({ ...this.security(), groupId });
    try {
      const [c] = await consumer.committed([{ topic, partition }]);
      return c?.offset === null || c?.offset === undefined ? undefined : Number(c.offset);
    } finally {
      await consumer.close();
    }
  }

  close(): Promise<void> {
    return this.admin.close();
  }
}
