// The TransactionManager (through a transactional Producer) against a scripted coordinator and
// broker: initTransactions, begin / send / commit and abort with the first batch asking its
// leader to add the partition (KIP-890 part 2, no AddPartitionsToTxn from the producer), the
// epoch EndTxn answers adopted (sequences restart), the coordinator found
// again after NOT_COORDINATOR, offsets sent to the transaction, an abortable batch error,
// fencing, and the illegal calls. Time is vitest's fake clock: no test sleeps.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { TernError } from "../../common/errors.js";
import { AbortableTransactionError, IllegalStateError, ProducerFencedError } from "../errors.js";
import {
  BROKER_ADDRESS,
  COORDINATOR_ADDRESS,
  ScriptedBroker,
  ScriptedLog,
  scriptedMetadata,
  wireBatchView,
  type ScriptedCall,
} from "../testing/scripted-broker.js";
import { settle } from "../testing/settle.js";
import { Producer } from "./producer.js";

interface WireProduce {
  transactionalId: string;
  addPartitionsToTxn: boolean;
  partitions: Array<{
    topic: string;
    partition: number;
    batch: {
      producerId: string;
      producerEpoch: number;
      baseSequence: number;
      isTransactional: boolean;
    };
  }>;
}
/** The request with each batch read from its kafka_batch (the fields its header carries). */
const produceOf = (c: ScriptedCall): WireProduce => {
  const request = c.request as { partitions: Array<{ batch: { kafkaBatch?: Buffer } }> };
  return {
    ...request,
    partitions: request.partitions.map((p) => ({ ...p, batch: wireBatchView(p.batch) })),
  } as unknown as WireProduce;
};
const requestOf = <T>(c: ScriptedCall): T => c.request as T;

function cluster(): { broker: ScriptedBroker; log: ScriptedLog; producer: Producer } {
  const broker = new ScriptedBroker(scriptedMetadata([{ name: "t", partitions: 2 }]));
  const log = new ScriptedLog();
  let epoch = 0;
  broker.on("Produce", log.produce);
  broker.on("FindCoordinator", () => ({
    errorCode: "NONE",
    errorMessage: "",
    partition: 0,
    coordinator: { nodeId: 11, address: COORDINATOR_ADDRESS },
  }));
  broker.on("InitProducerId", () => ({ producerId: "42", producerEpoch: epoch }));
  broker.on("EndTxn", () => ({ producerId: "42", producerEpoch: ++epoch })); // transactions V2: every EndTxn bumps the epoch
  const producer = new Producer({
    transport: broker,
    transactionalId: "tx-1",
    lingerMs: 0,
    retryBackoffMsMax: 50,
  });
  return { broker, log, producer };
}

beforeEach(() => {
  vi.useFakeTimers({ now: 1_700_000_000_000 });
});
afterEach(() => {
  vi.useRealTimers();
});

describe("TransactionManager", () => {
  it("initTransactions registers the id with its coordinator and makes the producer READY", async () => {
    const { broker, producer } = cluster();
    expect(producer.transactionState).toBe("UNINITIALIZED");
    await settle(producer.initTransactions());
    expect(producer.transactionState).toBe("READY");
    expect(producer.identity).toEqual({ producerId: 42n, producerEpoch: 0 });
    const init = broker.callsOf("InitProducerId")[0]!;
    expect(init.address).toBe(COORDINATOR_ADDRESS);
    expect(requestOf<{ transactionalId: string }>(init).transactionalId).toBe("tx-1");
    expect(broker.callsOf("FindCoordinator")).toHaveLength(1);
    await settle(producer.close());
  });

  it("asks the leader to add the partition, commits, and adopts the epoch EndTxn answers", async () => {
    const { broker, log, producer } = cluster();
    await settle(producer.initTransactions());
    producer.beginTransaction();
    expect(producer.transactionState).toBe("IN_TRANSACTION");
    const sent = producer.send({ topic: "t", partition: 1, value: "v1" });
    await settle(producer.commitTransaction());
    expect((await sent).offset).toBe(0n);
    expect(producer.transactionState).toBe("READY");
    const order = broker.calls
      .map((c) => c.method)
      .filter((m) => m === "AddPartitionsToTxn" || m === "Produce" || m === "EndTxn");
    expect(order).toEqual(["Produce", "EndTxn"]);
    expect(
      requestOf<{ committed: boolean; producerEpoch: number }>(broker.callsOf("EndTxn")[0]!),
    ).toMatchObject({ committed: true, producerEpoch: 0 });
    const batch = produceOf(broker.callsOf("Produce")[0]!);
    expect(batch.transactionalId).toBe("tx-1");
    expect(batch.addPartitionsToTxn).toBe(true);
    expect(batch.partitions[0]!.batch).toMatchObject({
      producerId: "42",
      producerEpoch: 0,
      baseSequence: 0,
      isTransactional: true,
    });
    expect(log.values("t", 1)).toEqual(["v1"]);
    expect(producer.identity.producerEpoch).toBe(1);

    // The next transaction: the new epoch, sequences from 0, the leader asked to add it again.
    producer.beginTransaction();
    const again = producer.send({ topic: "t", partition: 1, value: "v2" });
    await settle(producer.commitTransaction());
    await again;
    expect(broker.callsOf("AddPartitionsToTxn")).toHaveLength(0);
    expect(produceOf(broker.callsOf("Produce")[1]!).addPartitionsToTxn).toBe(true);
    expect(produceOf(broker.callsOf("Produce")[1]!).partitions[0]!.batch).toMatchObject({
      producerEpoch: 1,
      baseSequence: 0,
    });
    await settle(producer.close());
  });

  it("abortTransaction ends the transaction with committed=false", async () => {
    const { broker, producer } = cluster();
    await settle(producer.initTransactions());
    producer.beginTransaction();
    await settle(producer.send({ topic: "t", partition: 0, value: "gone" }));
    await settle(producer.abortTransaction());
    expect(producer.transactionState).toBe("READY");
    expect(requestOf<{ committed: boolean }>(broker.callsOf("EndTxn")[0]!).committed).toBe(false);
    await settle(producer.close());
  });

  it("a transaction with nothing in it commits without calling the coordinator", async () => {
    const { broker, producer } = cluster();
    await settle(producer.initTransactions());
    producer.beginTransaction();
    await settle(producer.commitTransaction());
    expect(producer.transactionState).toBe("READY");
    expect(broker.callsOf("EndTxn")).toHaveLength(0);
    await settle(producer.close());
  });

  it("finds the coordinator again after NOT_COORDINATOR and retries the call", async () => {
    const { broker, producer } = cluster();
    await settle(producer.initTransactions());
    producer.beginTransaction();
    await settle(producer.send({ topic: "t", partition: 0, value: "x" }));
    broker.once("EndTxn", () => {
      throw new TernError("NOT_COORDINATOR", "moved");
    });
    await settle(producer.commitTransaction());
    expect(producer.transactionState).toBe("READY");
    expect(broker.callsOf("EndTxn")).toHaveLength(2);
    expect(broker.callsOf("FindCoordinator")).toHaveLength(2);
    await settle(producer.close());
  });

  it("sendOffsetsToTransaction adds the group, then commits the offsets on the group coordinator", async () => {
    const { broker, producer } = cluster();
    broker.on("AddOffsetsToTxn", () => ({ offsetsPartition: 3 }));
    broker.on("TxnOffsetCommit", (call) => ({
      partitions: requestOf<{ partitions: Array<{ topic: string; partition: number }> }>(
        call,
      ).partitions.map((p) => ({
        topic: p.topic,
        partition: p.partition,
        errorCode: "NONE",
        errorMessage: "",
      })),
    }));
    broker.on("FindCoordinator", (call) => {
      const group = requestOf<{ keyType: string }>(call).keyType === "GROUP";
      return {
        errorCode: "NONE",
        errorMessage: "",
        partition: 0,
        coordinator: group
          ? { nodeId: 1, address: BROKER_ADDRESS }
          : { nodeId: 11, address: COORDINATOR_ADDRESS },
      };
    });
    await settle(producer.initTransactions());
    producer.beginTransaction();
    await settle(
      producer.sendOffsetsToTransaction([{ topic: "in", partition: 0, offset: 10n }], {
        groupId: "g",
      }),
    );
    const commit = broker.callsOf("TxnOffsetCommit")[0]!;
    expect(commit.address).toBe(BROKER_ADDRESS);
    expect(requestOf<Record<string, unknown>>(commit)).toMatchObject({
      transactionalId: "tx-1",
      groupId: "g",
      producerId: "42",
      producerEpoch: 0,
      partitions: [{ topic: "in", partition: 0, offset: "10" }],
    });
    await settle(producer.commitTransaction());
    expect(broker.callsOf("EndTxn")).toHaveLength(1); // the offsets alone make the transaction non-empty
    await settle(producer.close());
  });

  it("a batch that failed for good makes the commit abortable; abort clears it", async () => {
    const { broker, producer } = cluster();
    await settle(producer.initTransactions());
    producer.beginTransaction();
    broker.once("Produce", (call) => ({
      partitions: produceOf(call).partitions.map((q) => ({
        topic: q.topic,
        partition: q.partition,
        errorCode: "INVALID_RECORD",
        errorMessage: "no",
        baseOffset: "-1",
      })),
    }));
    const failed = producer.send({ topic: "t", partition: 0, value: "bad" });
    void failed.catch(() => undefined);
    await expect(settle(producer.commitTransaction())).rejects.toMatchObject({
      kind: "abortable",
      code: "INVALID_RECORD",
    });
    await expect(failed).rejects.toMatchObject({ code: "INVALID_RECORD" });
    expect(producer.transactionState).toBe("ABORTABLE_ERROR");
    expect(() => producer.beginTransaction()).toThrow(AbortableTransactionError);
    await settle(producer.abortTransaction());
    expect(producer.transactionState).toBe("READY");
    expect(requestOf<{ committed: boolean }>(broker.callsOf("EndTxn").at(-1)!).committed).toBe(
      false,
    );
    await settle(producer.close());
  });

  it("a fenced producer fails fatally, and every later call says so", async () => {
    const { broker, producer } = cluster();
    await settle(producer.initTransactions());
    producer.beginTransaction();
    await settle(producer.send({ topic: "t", partition: 0, value: "x" }));
    broker.once("EndTxn", () => {
      throw new TernError("PRODUCER_FENCED", "a newer instance initialised tx-1");
    });
    await expect(settle(producer.commitTransaction())).rejects.toBeInstanceOf(ProducerFencedError);
    expect(producer.transactionState).toBe("FATAL_ERROR");
    expect(() => producer.beginTransaction()).toThrow(ProducerFencedError);
    await expect(producer.send({ topic: "t", partition: 0, value: "y" })).rejects.toBeInstanceOf(
      ProducerFencedError,
    );
    await settle(producer.close());
  });

  it("refuses calls out of order", async () => {
    const { producer } = cluster();
    expect(() => producer.beginTransaction()).toThrow(IllegalStateError);
    await settle(producer.initTransactions());
    await expect(producer.commitTransaction()).rejects.toBeInstanceOf(IllegalStateError);
    await expect(producer.send({ topic: "t", partition: 0, value: "x" })).rejects.toBeInstanceOf(
      IllegalStateError,
    );
    producer.beginTransaction();
    expect(() => producer.beginTransaction()).toThrow(IllegalStateError);
    await settle(producer.close());
  });
});
