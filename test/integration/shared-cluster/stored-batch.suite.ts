// Real processes (the shared cluster): the one stored format. A batch a gRPC producer built
// (RecordBatch.kafka_batch), uncompressed or compressed, is stored as sent and fetched back byte
// for byte (same CRC-32C; only baseOffset and the leader epoch, outside it, are the broker's)
// over gRPC and over the Kafka listener; the simple form (proto records, compressed_records) is
// stored as a v2 batch, compressed_records still compressed; a bad kafka_batch is refused with
// Kafka's error codes and the broker keeps serving.
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parsePeers } from "../../../libs/common/config.js";
import { silentLogger } from "../../../libs/common/logger.js";
import { until } from "../../../libs/common/poll.js";
import { ControllerClient } from "../../../libs/metadata/controller-client.js";
import { compress, type CompressionCodec } from "../../../libs/records/compression.js";
import { KafkaWriter } from "../../../libs/records/kafka-codec.js";
import { writeRecordsSection } from "../../../libs/records/records-section.js";
import type { ProcessCluster } from "../../../scripts/cluster/process-cluster.js";
import type { BrokerClient } from "../../../services/broker/broker-client.js";
import { crc32c } from "../../../libs/records/crc32c.js";
import { decodeBatches } from "../../../services/kafka/record-batch.js";
import { BrokerClients } from "../helpers/broker-clients.js";
import { batchWithSection, recordBatch } from "../helpers/kafka-produce-frames.js";
import { KafkaRawConnection, kafkaRequest } from "../helpers/kafka-raw-client.js";
import { sharedCluster } from "../helpers/shared-cluster.js";

const TOPIC = "stored-v2";
/** A topic whose batches may be at most 4 KiB (max.message.bytes). */
const SMALL = "stored-v2-small";
const FETCH = 1;
let cluster: ProcessCluster;
let controller: ControllerClient;
const brokers = new BrokerClients();

async function leader(topic: string): Promise<BrokerClient> {
  return until(`leader of ${topic}/0`, 30_000, async () => {
    const m = await controller.metadata();
    const p = m.topics.find((t) => t.name === topic)?.partitions.find((x) => x.partition === 0);
    const n =
      p && p.leader >= 0
        ? m.nodes.find((x) => x.role === "broker" && x.nodeId === p.leader)
        : undefined;
    return n ? brokers.get(n.address) : undefined;
  });
}

/** The partition's answer to one produce of `batch`, retried while the leader moves. */
async function produce(topic: string, batch: Record<string, unknown>): Promise<any> {
  return until(`produce ${topic}/0`, 60_000, async () => {
    const r = await (
      await leader(topic)
    ).produce({ acks: -1, partitions: [{ topic, partition: 0, batch }] });
    const p = r.partitions[0];
    return ["NOT_LEADER_OR_FOLLOWER", "REQUEST_TIMED_OUT"].includes(p.errorCode) ? undefined : p;
  });
}

/** The batches of one gRPC fetch from `offset` (kafka_batch bytes, or decoded records). */
async function grpcFetch(offset: bigint, decodeRecords: boolean): Promise<any[]> {
  const r = await (
    await leader(TOPIC)
  ).fetch({
    maxWaitMs: 0,
    decodeRecords,
    partitions: [{ topic: TOPIC, partition: 0, fetchOffset: String(offset) }],
  });
  expect(r.partitions[0]!.errorCode).toBe("NONE");
  return r.partitions[0]!.batches;
}

/** The record batches (raw bytes) of a Kafka Fetch v4 from `offset`, from whichever broker leads. */
async function kafkaFetch(offset: bigint): Promise<Buffer[]> {
  for (let i = 0; i < 3; i++) {
    const conn = await KafkaRawConnection.open(cluster.spec("broker", i).kafkaPort!);
    try {
      const frame = kafkaRequest(FETCH, 4, 7, (w: KafkaWriter) => {
        w.int32(-1)
          .int32(0)
          .int32(1)
          .int32(1 << 20)
          .int8(0);
        w.int32(1).string(TOPIC);
        w.int32(1)
          .int32(0)
          .int64(offset)
          .int32(1 << 20);
      });
      conn.s.write(frame);
      const answer = await conn.next(10_000);
      if (answer === undefined) continue;
      const r = answer.body;
      r.int32(); // throttle
      r.int32(); // topics
      r.string();
      r.int32(); // partitions
      r.int32(); // partition
      const error = r.int16();
      r.int64();
      r.int64();
      r.array((x) => [x.int64(), x.int64()]);
      const records = r.bytesOf(r.int32());
      if (error !== 0) continue;
      const out: Buffer[] = [];
      for (let at = 0; at + 61 <= records.byteLength;) {
        const end = at + 12 + records.readInt32BE(at + 8);
        out.push(Buffer.from(records.subarray(at, end)));
        at = end;
      }
      return out;
    } finally {
      conn.close();
    }
  }
  throw new Error(`no broker answered a Kafka fetch of ${TOPIC}/0`);
}

/** Same batch as sent: everything from the magic byte on (the CRC and what it covers) is equal. */
function expectSameBatch(got: Buffer, sent: Buffer, baseOffset: bigint): void {
  expect(got.byteLength).toBe(sent.byteLength);
  expect(got.readBigInt64BE(0)).toBe(baseOffset);
  expect(got.readUInt32BE(17)).toBe(sent.readUInt32BE(17));
  expect(got.subarray(16).equals(sent.subarray(16))).toBe(true);
}

/** The batch with its CRC-32C made right again after an edit. */
function recrc(b: Buffer): Buffer {
  b.writeUInt32BE(crc32c(b.subarray(21)), 17);
  return b;
}

beforeAll(async () => {
  cluster = await sharedCluster();
  controller = new ControllerClient({
    controllers: parsePeers(cluster.controllers, "controllers"),
    logger: silentLogger(),
  });
  await until("topics", 60_000, async () => {
    const out = await controller.createTopics([
      { name: TOPIC, partitions: 1, replicationFactor: 3 },
      {
        name: SMALL,
        partitions: 1,
        replicationFactor: 3,
        config: { "max.message.bytes": "4096" },
      },
    ]);
    return out.every((o) => !o.error || o.error.errorName === "TOPIC_ALREADY_EXISTS")
      ? true
      : undefined;
  });
}, 240_000);

afterAll(() => {
  brokers.closeAll();
  controller?.close();
}, 60_000);

describe("stored batch: one format from producer to disk to consumer", () => {
  it.each(["none", "lz4", "zstd"] as CompressionCodec[])(
    "a gRPC kafka_batch (%s) comes back byte for byte over gRPC and over the Kafka listener",
    async (codec) => {
      const sent = await recordBatch(5, 300, codec);
      const p = await produce(TOPIC, { kafkaBatch: sent });
      expect(p.errorCode, p.errorMessage).toBe("NONE");
      const base = BigInt(p.baseOffset);
      const [asStored] = await grpcFetch(base, false);
      expect(asStored.records).toEqual([]);
      expectSameBatch(Buffer.from(asStored.kafkaBatch), sent, base);
      const [overKafka] = await kafkaFetch(base);
      expectSameBatch(overKafka!, sent, base);
      // Asked for records, a gRPC fetch gets them decoded, with their offsets.
      const [decoded] = await grpcFetch(base, true);
      expect(decoded.kafkaBatch.byteLength).toBe(0);
      expect(decoded.records.map((r: any) => [r.offset, Buffer.from(r.key).toString()])).toEqual(
        [0, 1, 2, 3, 4].map((i) => [String(base + BigInt(i)), `k${i}`]),
      );
    },
    60_000,
  );

  it("stores the simple form as a v2 batch, compressed_records still compressed", async () => {
    const now = Date.now();
    // Plain producers (an unset producer_id is producer 0, an idempotent one).
    const plain = await produce(TOPIC, {
      producerId: "-1",
      records: [{ key: Buffer.from("a"), value: Buffer.from("plain"), timestampMs: String(now) }],
    });
    expect(plain.errorCode, plain.errorMessage).toBe("NONE");
    const [stored] = await grpcFetch(BigInt(plain.baseOffset), false);
    const [batch] = await decodeBatches(Buffer.from(stored.kafkaBatch));
    expect(batch!.compression).toBe(0);
    expect(batch!.records.map((r) => [Buffer.from(r.value!).toString(), r.timestampMs])).toEqual([
      ["plain", now],
    ]);

    const records = [0, 1, 2].map((i) => ({
      key: null,
      value: Buffer.from(`zipped-${i}-${"z".repeat(200)}`),
      headers: [],
      timestampMs: now + i,
    }));
    const w = new KafkaWriter(1024);
    writeRecordsSection(w, records, now);
    const section = await compress("lz4", Buffer.from(w.finish()));
    const zipped = await produce(TOPIC, {
      producerId: "-1",
      compression: "COMPRESSION_LZ4",
      compressedRecords: section,
      recordCount: 3,
      baseTimestampMs: String(now),
    });
    expect(zipped.errorCode, zipped.errorMessage).toBe("NONE");
    const [kept] = await grpcFetch(BigInt(zipped.baseOffset), false);
    const bytes = Buffer.from(kept.kafkaBatch);
    expect(bytes.readInt16BE(21) & 7).toBe(3); // lz4
    expect(bytes.subarray(61).equals(section)).toBe(true);
    const [back] = await decodeBatches(bytes);
    expect(back!.records.map((r) => Buffer.from(r.value!).toString())).toEqual(
      records.map((r) => r.value.toString()),
    );
  }, 60_000);

  it("refuses a bad kafka_batch with Kafka's codes and keeps serving", async () => {
    const good = await recordBatch(3, 100);
    const badCrc = Buffer.from(good);
    badCrc[badCrc.byteLength - 1] ^= 0xff;
    const wrongCount = Buffer.from(good);
    wrongCount.writeInt32BE(4, 57);
    const magic1 = Buffer.from(good);
    magic1.writeInt8(1, 16);
    // 80 MiB of zeros in a 80 KiB gzip stream, declared as one record: refused while inflating.
    const bomb = batchWithSection("gzip", gzipSync(Buffer.alloc(80 * 1024 * 1024)));
    const cases: Array<[string, Buffer, string, string]> = [
      ["bad CRC", badCrc, TOPIC, "CORRUPT_MESSAGE"],
      ["wrong record count", recrc(wrongCount), TOPIC, "CORRUPT_MESSAGE"],
      ["magic 1", magic1, TOPIC, "UNSUPPORTED_FOR_MESSAGE_FORMAT"],
      ["cut short", good.subarray(0, 40), TOPIC, "CORRUPT_MESSAGE"],
      ["two batches", Buffer.concat([good, good]), TOPIC, "INVALID_RECORD"],
      ["oversized", await recordBatch(3, 4096), SMALL, "MESSAGE_TOO_LARGE"],
      ["inflation bomb", bomb, TOPIC, "CORRUPT_MESSAGE"],
    ];
    for (const [what, bytes, topic, code] of cases) {
      const p = await produce(topic, { kafkaBatch: bytes });
      expect(p.errorCode, `${what}: ${p.errorMessage}`).toBe(code);
    }
    const after = await produce(TOPIC, { kafkaBatch: good });
    expect(after.errorCode, after.errorMessage).toBe("NONE");
    const [stored] = await grpcFetch(BigInt(after.baseOffset), false);
    expectSameBatch(Buffer.from(stored.kafkaBatch), good, BigInt(after.baseOffset));
  }, 120_000);
});
