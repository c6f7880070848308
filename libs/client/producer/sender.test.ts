// The Sender (through the Producer) against a scripted broker: acknowledgement, retries on
// retriable codes with a metadata refresh and the leader named in the answer, idempotent
// sequences kept across retries (a lost answer comes back as a duplicate), a batch failed for
// good (a new producer id after it), and the delivery timeout. Time is vitest's fake clock:
// no test sleeps.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { TernError } from "../../common/errors.js";
import { TimeoutError } from "../errors.js";
import {
  BROKER_2_ADDRESS,
  BROKER_ADDRESS,
  failWith,
  ScriptedBroker,
  ScriptedLog,
  scriptedMetadata,
  wireBatchView,
  type ScriptedCall,
} from "../testing/scripted-broker.js";
import { settle } from "../testing/settle.js";
import { Producer, type ProducerOptions } from "./producer.js";
import { readBatchHeader } from "../../records/batch-header.js";
import { readBatch } from "../../records/batch-reader.js";

/** The first partition's kafka_batch of a Produce call. */
const kafkaBatchOf = (c: ScriptedCall): Buffer =>
  (c.request as { partitions: Array<{ batch: { kafkaBatch: Buffer } }> }).partitions[0]!.batch
    .kafkaBatch;

interface WireProduce {
  partitions: Array<{
    topic: string;
    partition: number;
    batch: { producerId: string; producerEpoch: number; baseSequence: number; records: unknown[] };
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

function cluster(): {
  broker: ScriptedBroker;
  log: ScriptedLog;
  producer: (o?: ProducerOptions) => Producer;
} {
  const broker = new ScriptedBroker(scriptedMetadata([{ name: "t", partitions: 2 }]));
  const log = new ScriptedLog();
  let nextProducerId = 7;
  broker.on("Produce", log.produce);
  broker.on("InitProducerId", () => ({ producerId: String(nextProducerId++), producerEpoch: 0 }));
  return {
    broker,
    log,
    producer: (o = {}) =>
      new Producer({ transport: broker, lingerMs: 0, retryBackoffMsMax: 50, ...o }),
  };
}

beforeEach(() => {
  vi.useFakeTimers({ now: 1_700_000_000_000 });
});
afterEach(() => {
  vi.useRealTimers();
});

describe("Sender", () => {
  it("sends an idempotent batch with the producer id and sequence 0, and resolves with the offsets", async () => {
    const { broker, log, producer } = cluster();
    const p = producer();
    const acks = await settle(
      Promise.all([
        p.send({ topic: "t", partition: 0, value: "a" }),
        p.send({ topic: "t", partition: 0, value: "b" }),
      ]),
    );
    expect(acks.map((a) => a.offset)).toEqual([0n, 1n]);
    expect(log.values("t", 0)).toEqual(["a", "b"]);
    const first = produceOf(broker.callsOf("Produce")[0]!).partitions[0]!.batch;
    expect(first.producerId).toBe("7");
    expect(first.baseSequence).toBe(0);
    expect(broker.callsOf("InitProducerId")).toHaveLength(1);
    await settle(p.close());
  });

  it("on NOT_LEADER_OR_FOLLOWER refreshes metadata and resends the same sequence to the new leader", async () => {
    const { broker, log, producer } = cluster();
    const p = producer();
    await settle(p.send({ topic: "t", partition: 1, value: "warm-up" })); // metadata and identity known
    const metadataBefore = broker.metadataCalls;
    broker.once("Produce", (call) => {
      // The leader moved: the controller now names broker 2, the old leader refuses.
      broker.metadata = {
        ...broker.metadata,
        version: "2",
        topics: broker.metadata.topics.map((t) => ({
          ...t,
          partitions: t.partitions.map((q) => ({ ...q, leader: 2 })),
        })),
      };
      return {
        partitions: produceOf(call).partitions.map((q) => ({
          topic: q.topic,
          partition: q.partition,
          errorCode: "NOT_LEADER_OR_FOLLOWER",
          errorMessage: "moved",
          baseOffset: "-1",
        })),
      };
    });
    const ack = await settle(p.send({ topic: "t", partition: 0, value: "x" }));
    expect(ack.offset).toBe(0n);
    const sends = broker.callsOf("Produce").slice(1);
    expect(sends.map((c) => c.address)).toEqual([BROKER_ADDRESS, BROKER_2_ADDRESS]);
    expect(sends.map((c) => produceOf(c).partitions[0]!.batch.baseSequence)).toEqual([0, 0]);
    expect(broker.metadataCalls).toBeGreaterThan(metadataBefore);
    expect(log.values("t", 0)).toEqual(["x"]);
    await settle(p.close());
  });

  it("uses the leader named in the answer before the controller's metadata catches up", async () => {
    const { broker, producer } = cluster();
    const p = producer();
    broker.once("Produce", (call) => ({
      partitions: produceOf(call).partitions.map((q) => ({
        topic: q.topic,
        partition: q.partition,
        errorCode: "NOT_LEADER_OR_FOLLOWER",
        errorMessage: "",
        baseOffset: "-1",
        leader: { nodeId: 2, address: BROKER_2_ADDRESS },
      })),
    }));
    await settle(p.send({ topic: "t", partition: 0, value: "x" }));
    expect(broker.callsOf("Produce").map((c) => c.address)).toEqual([
      BROKER_ADDRESS,
      BROKER_2_ADDRESS,
    ]);
    await settle(p.close());
  });

  it("a batch whose answer was lost is resent with its sequence and acknowledged as a duplicate, appended once", async () => {
    const { broker, log, producer } = cluster();
    const p = producer();
    broker.once("Produce", (call) => {
      log.produce(call); // the broker appended it, but its answer was lost
      throw new TernError("NETWORK_EXCEPTION", "connection reset");
    });
    const ack = await settle(p.send({ topic: "t", partition: 0, value: "once" }));
    expect(ack.offset).toBe(-1n); // a duplicate: acknowledged without its offset
    expect(log.values("t", 0)).toEqual(["once"]);
    const sequences = broker
      .callsOf("Produce")
      .map((c) => produceOf(c).partitions[0]!.batch.baseSequence);
    expect(sequences).toEqual([0, 0]);
    await settle(p.close());
  });

  it("keeps sequences in order per partition across batches", async () => {
    const { broker, producer } = cluster();
    const p = producer({ maxInFlightPerPartition: 1 });
    await settle(p.send({ topic: "t", partition: 0, value: "a" }));
    await settle(
      Promise.all([
        p.send({ topic: "t", partition: 0, value: "b" }),
        p.send({ topic: "t", partition: 0, value: "c" }),
      ]),
    );
    await settle(p.send({ topic: "t", partition: 0, value: "d" }));
    const sequences = broker
      .callsOf("Produce")
      .flatMap((c) =>
        produceOf(c).partitions.map((q) => [q.batch.baseSequence, q.batch.records.length]),
      );
    let expected = 0;
    for (const [sequence, count] of sequences) {
      expect(sequence).toBe(expected);
      expected += count!;
    }
    expect(expected).toBe(4);
    await settle(p.close());
  });

  it("a batch sent behind a failed one gets OUT_OF_ORDER, and both are resent in sequence order", async () => {
    const { broker, log, producer } = cluster();
    const p = producer({ batchSize: 1 }); // every record closes its batch
    await settle(p.send({ topic: "t", partition: 0, value: "warm-up" }));
    // The first batch's answer is slow and retriable (not appended); the second, sent while the
    // first is in flight, reaches the log first and is out of order. The first answer waits
    // for the second one to be out, not for a span of time.
    let secondAnswered!: () => void;
    const second = new Promise<void>((resolve) => (secondAnswered = resolve));
    broker.once(
      "Produce",
      async (call) => {
        await second;
        return {
          partitions: produceOf(call).partitions.map((q) => ({
            topic: q.topic,
            partition: q.partition,
            errorCode: "NOT_ENOUGH_REPLICAS",
            errorMessage: "",
            baseOffset: "-1",
          })),
        };
      },
      async (call) => {
        try {
          return await log.produce(call);
        } finally {
          secondAnswered();
        }
      },
    );
    const acks = await settle(
      Promise.all([
        p.send({ topic: "t", partition: 0, value: "a" }),
        p.send({ topic: "t", partition: 0, value: "b" }),
      ]),
    );
    expect(acks.map((a) => a.offset)).toEqual([1n, 2n]);
    expect(log.values("t", 0)).toEqual(["warm-up", "a", "b"]);
    const sequences = broker
      .callsOf("Produce")
      .map((c) => produceOf(c).partitions[0]!.batch.baseSequence);
    expect(sequences).toEqual([0, 1, 2, 1, 2]);
    await settle(p.close());
  });

  it("a non-retriable answer fails the record, and the next batch starts over with a new producer id", async () => {
    const { broker, producer } = cluster();
    const p = producer();
    broker.once("Produce", (call) => ({
      partitions: produceOf(call).partitions.map((q) => ({
        topic: q.topic,
        partition: q.partition,
        errorCode: "CORRUPT_MESSAGE",
        errorMessage: "bad crc",
        baseOffset: "-1",
      })),
    }));
    await expect(settle(p.send({ topic: "t", partition: 0, value: "bad" }))).rejects.toMatchObject({
      code: "CORRUPT_MESSAGE",
    });
    await settle(p.send({ topic: "t", partition: 0, value: "good" }));
    const last = produceOf(broker.callsOf("Produce").at(-1)!).partitions[0]!.batch;
    expect(last.producerId).toBe("8");
    expect(last.baseSequence).toBe(0);
    await settle(p.close());
  });

  it("a record that stays unacknowledged fails with TimeoutError after deliveryTimeoutMs", async () => {
    const { broker, producer } = cluster();
    const p = producer({ deliveryTimeoutMs: 2_000, requestTimeoutMs: 500 });
    broker.on("Produce", (call) => ({
      partitions: produceOf(call).partitions.map((q) => ({
        topic: q.topic,
        partition: q.partition,
        errorCode: "NOT_ENOUGH_REPLICAS",
        errorMessage: "",
        baseOffset: "-1",
      })),
    }));
    const started = Date.now();
    await expect(
      settle(p.send({ topic: "t", partition: 0, value: "late" })),
    ).rejects.toBeInstanceOf(TimeoutError);
    expect(Date.now() - started).toBeGreaterThanOrEqual(2_000);
    expect(broker.callsOf("Produce").length).toBeGreaterThan(1); // retried until the deadline
    await settle(p.close({ timeoutMs: 0 }));
  });

  it("sends a Kafka record batch v2 in the producer's codec, and a retry resends the same bytes", async () => {
    const { broker, log, producer } = cluster();
    const p = producer({ compression: "zstd" });
    broker.once("Produce", failWith("NETWORK_EXCEPTION", "lost on the way"));
    const acks = await settle(
      Promise.all([
        p.send({ topic: "t", partition: 0, value: "a".repeat(1_000) }),
        p.send({ topic: "t", partition: 0, key: "k", value: null }),
      ]),
    );
    expect(acks.map((a) => a.offset)).toEqual([0n, 1n]);
    const sent = broker.callsOf("Produce").map(kafkaBatchOf);
    expect(sent).toHaveLength(2);
    expect(sent[1]!.equals(sent[0]!)).toBe(true);
    expect(readBatchHeader(sent[0]!)).toMatchObject({
      codec: "zstd",
      producerId: 7n,
      baseSequence: 0,
      recordCount: 2,
    });
    expect(sent[0]!.byteLength).toBeLessThan(200);
    const { records } = await readBatch(sent[0]!, (_o, _t, key, value) => ({ key, value }));
    expect(records[1]).toEqual({ key: Buffer.from("k"), value: null });
    expect(log.values("t", 0)).toEqual(["a".repeat(1_000), ""]);
    await settle(p.close());
  });

  it("counts a batch's built size in bufferMemory once it is built", async () => {
    const { broker, log, producer } = cluster();
    const p = producer({ compression: "gzip", bufferMemory: 1_000_000 });
    await settle(p.send({ topic: "t", partition: 0, value: "warm-up" }));
    let answer: () => void = () => undefined;
    const held = new Promise<void>((r) => (answer = r));
    let arrived: () => void = () => undefined;
    const sent = new Promise<void>((r) => (arrived = r));
    broker.once("Produce", async (call) => {
      arrived();
      await held;
      return log.produce(call);
    });
    const acked = p.send({ topic: "t", partition: 0, value: "x".repeat(100_000) });
    await settle(sent);
    const built = kafkaBatchOf(broker.callsOf("Produce")[1]!);
    expect(built.byteLength).toBeLessThan(1_000);
    expect(p.bufferAvailableBytes).toBe(1_000_000 - built.byteLength);
    answer();
    await settle(acked);
    expect(p.bufferAvailableBytes).toBe(1_000_000);
    await settle(p.close());
  });
});
