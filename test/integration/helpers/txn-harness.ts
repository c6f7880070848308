// A minimal transactional producer and read_committed reader over real processes, shared by
// the coordinator's integration tests and the failover benchmark. Not the SDK: just enough to
// drive InitProducerId / AddPartitionsToTxn / Produce / EndTxn and to check what a
// read_committed consumer sees. Every wait is bounded by a deadline.
import { RETRIABLE_CODES, TernError, type ErrorName } from "../../../libs/common/errors.js";
import { until as poll } from "../../../libs/common/poll.js";
import type { ControllerClient } from "../../../libs/metadata/controller-client.js";
import { GrpcClientCache } from "../../../libs/grpc/grpc-client-cache.js";
import { BrokerClient } from "../../../services/broker/broker-client.js";
import { CoordinatorClient } from "../../../services/coordinator/coordinator-client.js";
import type { TransactionDescription__Output } from "../../../libs/common/proto-types/index.js";
import { processCredentials } from "../../../libs/server/tls/credentials.js";

const POLL_MS = 100;

export interface Identity {
  producerId: string;
  producerEpoch: number;
}

/** The shared bounded poll, at this harness's 100 ms pace (failover times are measured with it). */
export const until = <T>(
  what: string,
  timeoutMs: number,
  probe: () => Promise<T | undefined>,
): Promise<T> => poll(what, timeoutMs, probe, { intervalMs: POLL_MS });

export class TxnHarness {
  readonly coordinators: CoordinatorClient;
  private readonly brokers = new GrpcClientCache({ credentials: processCredentials() });
  private readonly sequences = new Map<string, number>();

  constructor(
    private readonly controller: ControllerClient,
    coordinatorAddresses: readonly string[],
  ) {
    this.coordinators = new CoordinatorClient(coordinatorAddresses);
  }

  close(): void {
    this.coordinators.close();
    this.brokers.close();
  }

  async init(transactionalId: string, held?: Identity, timeoutMs = 60_000): Promise<Identity> {
    const r = await this.coordinators.txnCall(transactionalId, "InitProducerId", {
      transactionalId,
      transactionTimeoutMs: timeoutMs,
      producerId: held?.producerId ?? "-1",
      producerEpoch: held?.producerEpoch ?? -1,
    });
    return { producerId: r.producerId, producerEpoch: r.producerEpoch };
  }

  async addPartitions(
    transactionalId: string,
    id: Identity,
    partitions: Array<{ topic: string; partition: number }>,
  ): Promise<string[]> {
    const r = await this.coordinators.txnCall(transactionalId, "AddPartitionsToTxn", {
      transactionalId,
      ...id,
      partitions,
      verifyOnly: false,
    });
    return r.results.map((x) => x.errorCode);
  }

  async addOffsets(transactionalId: string, id: Identity, groupId: string): Promise<number> {
    const r = await this.coordinators.txnCall(transactionalId, "AddOffsetsToTxn", {
      transactionalId,
      ...id,
      groupId,
    });
    return r.offsetsPartition;
  }

  async endTxn(
    transactionalId: string,
    id: Identity,
    committed: boolean,
    timeoutMs = 60_000,
  ): Promise<Identity> {
    const r = await this.coordinators.txnCall(
      transactionalId,
      "EndTxn",
      { transactionalId, ...id, committed },
      timeoutMs,
    );
    return { producerId: r.producerId, producerEpoch: r.producerEpoch };
  }

  async describe(transactionalId: string): Promise<TransactionDescription__Output> {
    const r = await this.coordinators.txnCall(transactionalId, "DescribeTransactions", {
      transactionalIds: [transactionalId],
    });
    return r.transactions[0];
  }

  /** Leader node id and address of a partition from the controller's metadata. */
  async leader(
    topic: string,
    partition: number,
    role: "broker" | "coordinator" = "broker",
    avoid?: number,
  ): Promise<{ nodeId: number; address: string }> {
    return until(`leader of ${topic}/${partition}`, 60_000, async () => {
      const m = await this.controller.metadata();
      const p = m.topics
        .find((t) => t.name === topic)
        ?.partitions.find((x) => x.partition === partition);
      if (!p || p.leader < 0 || p.leader === avoid) return undefined;
      const node = m.nodes.find((n) => n.role === role && n.nodeId === p.leader && n.alive);
      return node ? { nodeId: node.nodeId, address: node.address } : undefined;
    });
  }

  private broker(address: string): BrokerClient {
    return new BrokerClient(address, this.brokers);
  }

  /** One transactional batch to a partition's leader; answers the broker's code (retriable ones retried). */
  async produce(
    transactionalId: string,
    id: Identity,
    topic: string,
    partition: number,
    values: string[],
    timeoutMs = 60_000,
  ): Promise<string> {
    const key = `${id.producerId}/${id.producerEpoch}/${topic}/${partition}`;
    const baseSequence = this.sequences.get(key) ?? 0;
    const code = await until(`produce to ${topic}/${partition}`, timeoutMs, async () => {
      const { address } = await this.leader(topic, partition);
      const r = await this.broker(address).produce({
        acks: -1,
        timeoutMs: 10_000,
        transactionalId,
        partitions: [
          {
            topic,
            partition,
            batch: {
              producerId: id.producerId,
              producerEpoch: id.producerEpoch,
              baseSequence,
              isTransactional: true,
              records: values.map((v) => ({ value: Buffer.from(v), timestampMs: "0" })),
            },
          },
        ],
      });
      const c = String(r.partitions[0].errorCode);
      return RETRIABLE_CODES.has(c as ErrorName) ? undefined : c;
    });
    if (code === "NONE") this.sequences.set(key, baseSequence + values.length);
    return code;
  }

  /** What a read_committed consumer sees once no transaction is open on the partition. */
  async readCommitted(topic: string, partition: number, timeoutMs = 60_000): Promise<string[]> {
    return until(`stable read_committed fetch of ${topic}/${partition}`, timeoutMs, async () => {
      const { address } = await this.leader(topic, partition);
      const values: string[] = [];
      let offset = 0n;
      for (let page = 0; page < 1_000; page++) {
        const r = await this.broker(address).fetch({
          maxWaitMs: 0,
          isolationLevel: "READ_COMMITTED",
          partitions: [{ topic, partition, fetchOffset: offset.toString() }],
        });
        const p = r.partitions[0];
        if (p.errorCode !== "NONE") return undefined;
        if (p.lastStableOffset !== p.highWatermark) return undefined; // a transaction is still open
        const records = p.batches.flatMap((b) => b.records);
        if (records.length === 0) return values;
        for (const rec of records) values.push(Buffer.from(rec.value).toString());
        offset = BigInt(records[records.length - 1].offset) + 1n;
      }
      throw new TernError("REQUEST_TIMED_OUT", "too many fetch pages");
    });
  }
}
