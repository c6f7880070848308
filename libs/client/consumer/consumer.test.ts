// The Consumer against a scripted broker: positions from the reset policy or the committed
// offset, fetch and position, seek, pause, OFFSET_OUT_OF_RANGE, a leader that moved (metadata
// refreshed), commitSync / committed through the group coordinator (found again after
// NOT_COORDINATOR), and the isolation level on the wire. Time is vitest's fake clock: the
// scripted long poll waits on it, no test sleeps.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { TernError } from "../../common/errors.js";
import {
  appendValues,
  BROKER_2_ADDRESS,
  BROKER_ADDRESS,
  ScriptedBroker,
  ScriptedLog,
  scriptedMetadata,
  kafkaBatchOf,
  ScriptedReader,
  type ScriptedCall,
} from "../testing/scripted-broker.js";
import { settle } from "../testing/settle.js";
import { Consumer, type ConsumerOptions, type ConsumerRecord } from "./consumer.js";
import { buildUncompressedBatch } from "../../records/batch-builder.js";
import {
  ATTR_CONTROL,
  AT_ATTRIBUTES,
  AT_CRC,
  patchBatchOffsets,
} from "../../records/batch-header.js";
import { crc32c } from "../../records/crc32c.js";

const TP = { topic: "t", partition: 0 };
const requestOf = <T>(c: ScriptedCall): T => c.request as T;
const values = (records: readonly ConsumerRecord[]): string[] =>
  records.map((r) => r.value!.toString());

interface Cluster {
  broker: ScriptedBroker;
  log: ScriptedLog;
  committed: Map<string, bigint>;
  consumer: (o?: ConsumerOptions) => Consumer;
}

function cluster(): Cluster {
  const broker = new ScriptedBroker(scriptedMetadata([{ name: "t", partitions: 2 }]));
  const log = new ScriptedLog();
  const reader = new ScriptedReader(log);
  const committed = new Map<string, bigint>();
  broker.on("Fetch", reader.fetch);
  broker.on("ListOffsets", reader.listOffsets);
  broker.on("FindCoordinator", () => ({
    errorCode: "NONE",
    errorMessage: "",
    partition: 0,
    coordinator: { nodeId: 1, address: BROKER_ADDRESS },
  }));
  broker.on("OffsetCommit", (call) => {
    const r = requestOf<{
      partitions: Array<{ topic: string; partition: number; offset: string }>;
    }>(call);
    for (const p of r.partitions) committed.set(`${p.topic}/${p.partition}`, BigInt(p.offset));
    return {
      partitions: r.partitions.map((p) => ({
        topic: p.topic,
        partition: p.partition,
        errorCode: "NONE",
        errorMessage: "",
      })),
    };
  });
  broker.on("OffsetFetch", (call) => ({
    partitions: requestOf<{ partitions: Array<{ topic: string; partition: number }> }>(
      call,
    ).partitions.map((p) => ({
      topic: p.topic,
      partition: p.partition,
      offset: String(committed.get(`${p.topic}/${p.partition}`) ?? -1n),
      errorCode: "NONE",
      errorMessage: "",
    })),
  }));
  appendValues(log, "t", 0, ["a", "b", "c"]);
  appendValues(log, "t", 0, ["d", "e"]);
  return {
    broker,
    log,
    committed,
    consumer: (o = {}) => new Consumer({ transport: broker, fetchMaxWaitMs: 100, ...o }),
  };
}

beforeEach(() => {
  vi.useFakeTimers({ now: 1_700_000_000_000 });
});
afterEach(() => {
  vi.useRealTimers();
});

describe("Consumer", () => {
  it("starts at the earliest offset without a group, fetches in order and advances its position", async () => {
    const { broker, consumer } = cluster();
    const c = consumer();
    c.assign([TP]);
    expect(await settle(c.position(TP))).toBe(0n);
    expect(
      requestOf<{ partitions: Array<{ timestampMs: string }> }>(broker.callsOf("ListOffsets")[0]!)
        .partitions[0]!.timestampMs,
    ).toBe("-2");
    const first = await settle(c.poll({ maxPollRecords: 2 }));
    expect(values(first)).toEqual(["a", "b"]);
    expect(first.map((r) => r.offset)).toEqual([0n, 1n]);
    expect(await c.position(TP)).toBe(2n);
    expect(values(await settle(c.poll()))).toEqual(["c", "d", "e"]);
    expect(await c.position(TP)).toBe(5n);
    await settle(c.close());
  });

  it("with autoOffsetReset=latest starts at the end, and a poll with nothing new waits out its timeout", async () => {
    const { consumer, log } = cluster();
    const c = consumer({ autoOffsetReset: "latest" });
    c.assign([TP]);
    expect(await settle(c.position(TP))).toBe(5n);
    const started = Date.now();
    expect(await settle(c.poll({ timeoutMs: 300 }))).toEqual([]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
    appendValues(log, "t", 0, ["f"]);
    expect(values(await settle(c.poll()))).toEqual(["f"]);
    await settle(c.close());
  });

  it("seek moves the position and drops what was buffered", async () => {
    const { consumer } = cluster();
    const c = consumer();
    c.assign([TP]);
    expect(values(await settle(c.poll({ maxPollRecords: 1 })))).toEqual(["a"]);
    c.seek(TP, 3n);
    expect(await c.position(TP)).toBe(3n);
    expect(values(await settle(c.poll()))).toEqual(["d", "e"]);
    expect(() => c.seek(TP, -1n)).toThrow(RangeError);
    expect(() => c.seek({ topic: "t", partition: 1 }, 0n)).toThrow(/not assigned/);
    await settle(c.close());
  });

  it("sends the next fetch before poll returns, and drops its answer when a seek moved the position", async () => {
    const { broker, consumer, log } = cluster();
    const reader = new ScriptedReader(log);
    let answerHeld!: (answer: unknown) => void;
    const held = new Promise((resolve) => (answerHeld = resolve));
    broker.once("Fetch", reader.fetch, () => held);
    const c = consumer();
    c.assign([TP]);
    expect(values(await settle(c.poll()))).toEqual(["a", "b", "c", "d", "e"]);
    // Pipelining: the fetch from offset 5 is already in flight.
    const fetches = broker.callsOf("Fetch");
    expect(fetches).toHaveLength(2);
    expect(
      requestOf<{ partitions: Array<{ fetchOffset: string }> }>(fetches[1]!).partitions[0]!
        .fetchOffset,
    ).toBe("5");
    c.seek(TP, 1n);
    answerHeld({
      partitions: [
        {
          topic: "t",
          partition: 0,
          errorCode: "NONE",
          errorMessage: "",
          nextFetchOffset: "6",
          batches: [{ kafkaBatch: kafkaBatchOf(["stale"], 5n) }],
        },
      ],
    });
    expect(values(await settle(c.poll()))).toEqual(["b", "c", "d", "e"]);
    expect(await c.position(TP)).toBe(5n);
    await settle(c.close());
  });

  it("splits a leader's partitions over several fetches in flight", async () => {
    const { broker, consumer, log } = cluster();
    appendValues(log, "t", 1, ["x"]);
    const c = consumer();
    c.assign([TP, { topic: "t", partition: 1 }]);
    const got = await settle(c.poll());
    expect(got.length).toBeGreaterThan(0);
    const firstTwo = broker
      .callsOf("Fetch")
      .slice(0, 2)
      .map((f) =>
        requestOf<{ partitions: Array<{ partition: number }> }>(f).partitions.map(
          (p) => p.partition,
        ),
      );
    expect(firstTwo).toEqual([[0], [1]]);
    await settle(c.close());
  });

  it("a paused partition is not returned until resumed", async () => {
    const { consumer } = cluster();
    const c = consumer();
    c.assign([TP]);
    c.pause([TP]);
    expect(c.paused()).toEqual([TP]);
    expect(await settle(c.poll({ timeoutMs: 200 }))).toEqual([]);
    c.resume([TP]);
    expect(values(await settle(c.poll()))).toEqual(["a", "b", "c", "d", "e"]);
    await settle(c.close());
  });

  it("OFFSET_OUT_OF_RANGE resets the position by the reset policy", async () => {
    const { broker, consumer } = cluster();
    const c = consumer();
    c.assign([TP]);
    c.seek(TP, 100n);
    broker.once("Fetch", () => ({
      partitions: [
        {
          topic: "t",
          partition: 0,
          errorCode: "OFFSET_OUT_OF_RANGE",
          errorMessage: "",
          nextFetchOffset: "100",
          batches: [],
        },
      ],
    }));
    expect(values(await settle(c.poll()))).toEqual(["a", "b", "c", "d", "e"]);
    await settle(c.close());
  });

  it("after NOT_LEADER_OR_FOLLOWER refreshes metadata and fetches from the new leader", async () => {
    const { broker, consumer } = cluster();
    const c = consumer();
    c.assign([TP]);
    await settle(c.position(TP));
    const metadataBefore = broker.metadataCalls;
    broker.once("Fetch", () => {
      broker.metadata = {
        ...broker.metadata,
        version: "2",
        topics: broker.metadata.topics.map((t) => ({
          ...t,
          partitions: t.partitions.map((p) => ({ ...p, leader: 2 })),
        })),
      };
      return {
        partitions: [
          {
            topic: "t",
            partition: 0,
            errorCode: "NOT_LEADER_OR_FOLLOWER",
            errorMessage: "",
            nextFetchOffset: "0",
            batches: [],
          },
        ],
      };
    });
    expect(values(await settle(c.poll()))).toEqual(["a", "b", "c", "d", "e"]);
    // The third is the next fetch, sent before poll() returned (pipelining).
    expect(broker.callsOf("Fetch").map((f) => f.address)).toEqual([
      BROKER_ADDRESS,
      BROKER_2_ADDRESS,
      BROKER_2_ADDRESS,
    ]);
    expect(broker.metadataCalls).toBeGreaterThan(metadataBefore);
    await settle(c.close());
  });

  it("commitSync commits the positions; a new consumer of the group starts from them", async () => {
    const { broker, committed, consumer } = cluster();
    const c = consumer({ groupId: "g" });
    c.assign([TP]);
    expect(values(await settle(c.poll({ maxPollRecords: 2 })))).toEqual(["a", "b"]);
    await settle(c.commitSync());
    expect(committed.get("t/0")).toBe(2n);
    expect(
      requestOf<{ groupId: string; generationId: number }>(broker.callsOf("OffsetCommit")[0]!),
    ).toMatchObject({ groupId: "g", generationId: -1 });
    await settle(c.close());

    const next = consumer({ groupId: "g" });
    next.assign([TP]);
    expect(await settle(next.committed([TP]))).toEqual([{ ...TP, offset: 2n }]);
    expect(values(await settle(next.poll()))).toEqual(["c", "d", "e"]);
    await settle(next.commitSync([{ ...TP, offset: 4n }]));
    expect(committed.get("t/0")).toBe(4n);
    await settle(next.close());
  });

  it("commitSync finds the group coordinator again after NOT_COORDINATOR", async () => {
    const { broker, committed, consumer } = cluster();
    const c = consumer({ groupId: "g" });
    c.assign([TP]);
    broker.once("OffsetCommit", () => {
      throw new TernError("NOT_COORDINATOR", "moved");
    });
    await settle(c.commitSync([{ ...TP, offset: 1n }]));
    expect(committed.get("t/0")).toBe(1n);
    expect(broker.callsOf("FindCoordinator")).toHaveLength(2);
    await settle(c.close());
  });

  it("sends its isolation level with every fetch and offset lookup", async () => {
    const { broker, consumer } = cluster();
    const c = consumer({ isolationLevel: "read_committed" });
    c.assign([TP]);
    await settle(c.poll());
    expect(
      requestOf<{ isolationLevel: string }>(broker.callsOf("ListOffsets")[0]!).isolationLevel,
    ).toBe("READ_COMMITTED");
    expect(requestOf<{ isolationLevel: string }>(broker.callsOf("Fetch")[0]!).isolationLevel).toBe(
      "READ_COMMITTED",
    );
    await settle(c.close());
  });

  it("leaves control batches out and hands out a transaction's records under read_uncommitted", async () => {
    const { broker, consumer } = cluster();
    const transactional = buildUncompressedBatch({
      producerId: 5n,
      producerEpoch: 0,
      baseSequence: 0,
      isTransactional: true,
      records: ["t1", "t2"].map((v) => ({
        key: null,
        value: Buffer.from(v),
        headers: [],
        timestampMs: 7,
      })),
    });
    patchBatchOffsets(transactional, 10n, 1);
    const marker = kafkaBatchOf(["marker"], 12n);
    marker.writeInt16BE(marker.readInt16BE(AT_ATTRIBUTES) | ATTR_CONTROL, AT_ATTRIBUTES);
    marker.writeUInt32BE(crc32c(marker.subarray(AT_ATTRIBUTES)), AT_CRC);
    broker.once("Fetch", () => ({
      partitions: [
        {
          topic: "t",
          partition: 0,
          errorCode: "NONE",
          errorMessage: "",
          nextFetchOffset: "14",
          batches: [
            { kafkaBatch: transactional },
            { kafkaBatch: marker },
            { kafkaBatch: kafkaBatchOf(["x"], 13n) },
          ],
        },
      ],
    }));
    const c = consumer();
    c.assign([TP]);
    c.seek(TP, 10n);
    const got = await settle(c.poll());
    expect(values(got)).toEqual(["t1", "t2", "x"]);
    expect(got.map((r) => [r.offset, r.timestampMs])).toEqual([
      [10n, 7],
      [11n, 7],
      [13n, 0],
    ]);
    expect(requestOf<{ decodeRecords?: boolean }>(broker.callsOf("Fetch")[0]!).decodeRecords).toBe(
      undefined,
    );
    await settle(c.close());
  });

  it("a fetched batch that does not decode makes poll throw CORRUPT_MESSAGE at its offset", async () => {
    const { broker, consumer } = cluster();
    const damaged = kafkaBatchOf(["a", "b", "c"]);
    damaged[damaged.byteLength - 2] ^= 1;
    broker.once("Fetch", () => ({
      partitions: [
        {
          topic: "t",
          partition: 0,
          errorCode: "NONE",
          errorMessage: "",
          nextFetchOffset: "3",
          batches: [{ kafkaBatch: damaged }],
        },
      ],
    }));
    const c = consumer();
    c.assign([TP]);
    c.seek(TP, 0n);
    await expect(
      settle(
        (async () => {
          for (;;) await c.poll({ timeoutMs: 50 });
        })(),
      ),
    ).rejects.toMatchObject({ code: "CORRUPT_MESSAGE", message: /t\/0 at offset 0: .*CRC-32C/ });
    expect(await c.position(TP)).toBe(0n);
    expect(values(await settle(c.poll()))).toEqual(["a", "b", "c", "d", "e"]);
    await settle(c.close());
  });
});
