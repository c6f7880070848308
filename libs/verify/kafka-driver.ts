// The verify workload on any Kafka-protocol cluster through kafkajs: transactional producers
// (transactions V1: one epoch across transactions), sendOffsets for the copiers, and pollers
// built on a consumer of a group of its own (kafkajs has no manual assignment): a batch handler
// fills a bounded buffer that poll() drains, and records below the poller's own position (a
// redelivery after a rejoin) are dropped, as a Kafka consumer's fetch position drops them.
import { randomUUID } from "node:crypto";
import {
  Kafka,
  logLevel,
  type Admin,
  type Consumer,
  type KafkaConfig,
  type Producer,
  type SASLOptions,
  type Transaction,
} from "kafkajs";
import type { Poller, PolledRecord, TopicSpec, TxnProducer, VerifyDriver } from "./driver.js";

const TXN_TIMEOUT_MS = 60_000;
const REQUEST_TIMEOUT_MS = 10_000;
/** Records a poller buffers before its batch handler waits for poll() to drain them. */
const POLLER_BUFFER_MAX = 2_000;
const DRAIN_WAIT_MS = 50;

export interface KafkaDriverOptions {
  readonly brokers: readonly string[];
  readonly replicationFactor: number;
  readonly ssl?: { ca: Buffer; cert?: Buffer; key?: Buffer };
  readonly sasl?: {
    mechanism: "scram-sha-256" | "scram-sha-512";
    username: string;
    password: string;
  };
}

class KafkaTxnProducer implements TxnProducer {
  private txn: Transaction | undefined;

  constructor(private readonly producer: Producer) {}

  private open(): Transaction {
    if (!this.txn) throw new Error("no open transaction: begin first");
    return this.txn;
  }

  async begin(): Promise<void> {
    this.txn = await this.producer.transaction();
  }

  async send(topic: string, partition: number, values: readonly string[]): Promise<number[]> {
    const acks = await this.open().send({
      topic,
      acks: -1,
      messages: values.map((value) => ({ value, partition })),
    });
    const mine = acks.filter((a) => a.topicName === topic && a.partition === partition);
    if (mine.length === 0) throw new Error(`no acknowledgement for ${topic}/${partition}`);
    const base = Math.min(...mine.map((a) => Number(a.baseOffset)));
    // One send to one partition is one batch: its records take consecutive offsets.
    return values.map((_, i) => base + i);
  }

  async sendOffsets(groupId: string, topic: string, partition: number, offset: number) {
    await this.open().sendOffsets({
      consumerGroupId: groupId,
      topics: [{ topic, partitions: [{ partition, offset: String(offset) }] }],
    });
  }

  async commit(): Promise<void> {
    await this.open().commit();
    this.txn = undefined;
  }

  async abort(): Promise<void> {
    await this.open().abort();
    this.txn = undefined;
  }

  close(): Promise<void> {
    return this.producer.disconnect();
  }
}

class KafkaPoller implements Poller {
  private readonly buffer: PolledRecord[] = [];
  private readonly positions = new Map<string, number>();
  private waiting: (() => void) | undefined;
  private closed = false;

  constructor(
    private readonly consumer: Consumer,
    partitions: ReadonlyArray<{ topic: string; partition: number }>,
  ) {
    for (const p of partitions) this.positions.set(`${p.topic}/${p.partition}`, 0);
  }

  /** The consumer's batch handler: keeps the poller's partitions, waits while the buffer is full. */
  async accept(records: PolledRecord[], isRunning: () => boolean): Promise<void> {
    for (const r of records)
      if (this.positions.has(`${r.topic}/${r.partition}`)) this.buffer.push(r);
    this.waiting?.();
    while (this.buffer.length > POLLER_BUFFER_MAX && isRunning() && !this.closed)
      await new Promise((resolve) => setTimeout(resolve, DRAIN_WAIT_MS));
  }

  seek(topic: string, partition: number, offset: number): void {
    const key = `${topic}/${partition}`;
    this.positions.set(key, offset);
    for (let i = this.buffer.length - 1; i >= 0; i--)
      if (`${this.buffer[i]!.topic}/${this.buffer[i]!.partition}` === key) this.buffer.splice(i, 1);
    try {
      this.consumer.seek({ topic, partition, offset: String(offset) });
    } catch (e) {
      // kafkajs refuses a seek while its consumer restarts after a crash (a join refused while
      // the group's coordinator moves): the restarted consumer fetches from the beginning
      // (fromBeginning, no committed offsets), and poll() skips what is behind `offset`.
      if (!(e instanceof Error && /not initialized/.test(e.message))) throw e;
    }
  }

  async poll(maxRecords: number, timeoutMs: number): Promise<PolledRecord[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const out: PolledRecord[] = [];
      while (this.buffer.length > 0 && out.length < maxRecords) {
        const r = this.buffer.shift()!;
        const key = `${r.topic}/${r.partition}`;
        if (r.offset < (this.positions.get(key) ?? 0)) continue; // redelivered: behind us
        this.positions.set(key, r.offset + 1);
        out.push(r);
      }
      const left = deadline - Date.now();
      if (out.length > 0 || left <= 0 || this.closed) return out;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiting = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.waiting = undefined;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.consumer.disconnect();
  }
}

export class KafkaDriver implements VerifyDriver {
  readonly protocol = "kafka" as const;
  private readonly kafka: Kafka;
  private admin: Admin | undefined;

  constructor(private readonly options: KafkaDriverOptions) {
    const config: KafkaConfig = {
      clientId: "tern-verify",
      brokers: [...options.brokers],
      logLevel: logLevel.NOTHING,
      requestTimeout: REQUEST_TIMEOUT_MS,
      connectionTimeout: 5_000,
      retry: { retries: 10, initialRetryTime: 200, maxRetryTime: 2_000 },
      ...(options.ssl ? { ssl: { ...options.ssl } } : {}),
      ...(options.sasl ? { sasl: { ...options.sasl } as SASLOptions } : {}),
    };
    this.kafka = new Kafka(config);
  }

  private async connectedAdmin(): Promise<Admin> {
    if (!this.admin) {
      const admin = this.kafka.admin();
      await admin.connect();
      this.admin = admin;
    }
    return this.admin;
  }

  async createTopics(topics: readonly TopicSpec[]): Promise<void> {
    const admin = await this.connectedAdmin();
    await admin.createTopics({
      waitForLeaders: true,
      topics: topics.map((t) => ({
        topic: t.name,
        numPartitions: t.partitions,
        replicationFactor: this.options.replicationFactor,
      })),
    });
  }

  async deleteTopics(names: readonly string[]): Promise<void> {
    const admin = await this.connectedAdmin();
    await admin.deleteTopics({ topics: [...names] });
  }

  async txnProducer(transactionalId: string): Promise<TxnProducer> {
    const producer = this.kafka.producer({
      transactionalId,
      idempotent: true,
      maxInFlightRequests: 1,
      transactionTimeout: TXN_TIMEOUT_MS,
      allowAutoTopicCreation: false,
    });
    try {
      await producer.connect();
      // kafkajs sends InitProducerId with the first transaction: begin and end one to fence now.
      const first = await producer.transaction();
      await first.abort();
    } catch (e) {
      await producer.disconnect().catch(() => undefined);
      throw e;
    }
    return new KafkaTxnProducer(producer);
  }

  async poller(partitions: ReadonlyArray<{ topic: string; partition: number }>): Promise<Poller> {
    const consumer = this.kafka.consumer({
      groupId: `tern-verify-reader-${randomUUID()}`,
      readUncommitted: false,
      allowAutoTopicCreation: false,
      sessionTimeout: 30_000,
      heartbeatInterval: 1_000,
      maxWaitTimeInMs: 200,
      retry: { retries: 30, initialRetryTime: 200, maxRetryTime: 2_000 },
    });
    const poller = new KafkaPoller(consumer, partitions);
    try {
      await consumer.connect();
      await consumer.subscribe({
        topics: [...new Set(partitions.map((p) => p.topic))],
        fromBeginning: true,
      });
      await consumer.run({
        autoCommit: false,
        eachBatchAutoResolve: true,
        eachBatch: async ({ batch, isRunning }) => {
          await poller.accept(
            batch.messages.map((m) => ({
              topic: batch.topic,
              partition: batch.partition,
              offset: Number(m.offset),
              value: m.value?.toString() ?? "",
            })),
            isRunning,
          );
        },
      });
    } catch (e) {
      await consumer.disconnect().catch(() => undefined);
      throw e;
    }
    return poller;
  }

  async committedOffset(
    groupId: string,
    topic: string,
    partition: number,
  ): Promise<number | undefined> {
    const admin = await this.connectedAdmin();
    const [t] = await admin.fetchOffsets({ groupId, topics: [topic] });
    const p = t?.partitions.find((x) => x.partition === partition);
    const offset = p === undefined ? -1 : Number(p.offset);
    return offset < 0 ? undefined : offset;
  }

  async close(): Promise<void> {
    await this.admin?.disconnect();
  }
}
