// Kafka record batch v2 both ways: what the listener writes decodes to the same records (null
// apart from empty, header order and duplicates, timestamps), the CRC-32C is the one Kafka
// computes (check value of "123456789"), every codec's batch decodes, and a damaged,
// unknown-codec or old-format batch is refused with Kafka's error for it.
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import type { RecordData } from "../broker/partition-entry.js";
import { crc32c } from "../../libs/records/crc32c.js";
import { KafkaWriter } from "../../libs/records/kafka-codec.js";
import { kafkaErrorCode } from "./kafka-errors.js";
import { BatchRefusal, decodeBatches, encodeBatch, recordsSection } from "./record-batch.js";
import { compress, type CompressionCodec } from "../../libs/records/compression.js";
import { patchBatchOffsets, readBatchHeader } from "../../libs/records/batch-header.js";
import { DecodeError } from "../../libs/common/decode-error.js";

const records: RecordData[] = [
  { key: null, value: Buffer.from("v0"), headers: [], timestampMs: 1_700_000_000_000 },
  {
    key: Buffer.from("k1"),
    value: null,
    headers: [
      { key: "h", value: Buffer.from("a") },
      { key: "h", value: null },
      { key: "ünï", value: Buffer.alloc(0) },
    ],
    timestampMs: 1_700_000_000_005,
  },
  { key: Buffer.alloc(0), value: Buffer.alloc(0), headers: [], timestampMs: 1_699_999_999_999 },
];

function encoded(over: Partial<Parameters<typeof encodeBatch>[1]> = {}): Buffer {
  const w = new KafkaWriter(64);
  encodeBatch(w, {
    baseOffset: 100n,
    producerId: 5n,
    producerEpoch: 2,
    baseSequence: 9,
    isTransactional: true,
    records,
    ...over,
  });
  return Buffer.from(w.finish());
}

async function refusal(bytes: Buffer): Promise<string> {
  try {
    await decodeBatches(bytes);
  } catch (e) {
    if (e instanceof BatchRefusal) return e.errorName;
    throw e;
  }
  return "accepted";
}

describe("record batch v2", () => {
  it("CRC-32C is Castagnoli's", () => {
    expect(crc32c(Buffer.from("123456789")).toString(16)).toBe("e3069283");
    expect(crc32c(Buffer.from("56789"), crc32c(Buffer.from("1234")))).toBe(
      crc32c(Buffer.from("123456789")),
    );
  });

  it("round-trips records: null vs empty, header order and duplicates, timestamps, producer fields", async () => {
    const [b] = await decodeBatches(encoded());
    expect(b!.producerId).toBe(5n);
    expect(b!.producerEpoch).toBe(2);
    expect(b!.baseSequence).toBe(9);
    expect(b!.isTransactional).toBe(true);
    expect(
      b!.records.map((r) => ({
        ...r,
        key: r.key && Buffer.from(r.key),
        value: r.value && Buffer.from(r.value),
        headers: r.headers.map((h) => ({ key: h.key, value: h.value && Buffer.from(h.value) })),
      })),
    ).toEqual(records);
    const two = Buffer.concat([encoded(), encoded({ baseOffset: 103n })]);
    expect((await decodeBatches(two)).length).toBe(2);
  });

  it("decodes a gzip batch: the records section after the count is one gzip stream", async () => {
    const plain = encoded();
    const gz = Buffer.concat([plain.subarray(0, 61), gzipSync(plain.subarray(61))]);
    gz.writeInt32BE(gz.byteLength - 12, 8);
    gz.writeInt16BE(gz.readInt16BE(21) | 1, 21);
    gz.writeUInt32BE(crc32c(gz.subarray(21)), 17);
    const [b] = await decodeBatches(gz);
    expect(b!.compression).toBe(1);
    expect(b!.records.map((r) => r.value && Buffer.from(r.value).toString())).toEqual([
      "v0",
      null,
      "",
    ]);
    const broken = Buffer.from(gz);
    broken[broken.byteLength - 6] ^= 0xff; // the gzip trailer's CRC-32
    broken.writeUInt32BE(crc32c(broken.subarray(21)), 17);
    expect(await refusal(broken)).toBe("CORRUPT_MESSAGE");
  });

  it.each(["gzip", "snappy", "lz4", "zstd"] as CompressionCodec[])(
    "round-trips a %s batch written by encodeBatch",
    async (codec) => {
      const batch = {
        baseOffset: 7n,
        producerId: 5n,
        producerEpoch: 2,
        baseSequence: 9,
        isTransactional: false,
        records,
      };
      const w = new KafkaWriter(64);
      encodeBatch(w, batch, { codec, section: await compress(codec, recordsSection(batch)) });
      const [b] = await decodeBatches(Buffer.from(w.finish()));
      expect(b!.compression).toBe(["none", "gzip", "snappy", "lz4", "zstd"].indexOf(codec));
      expect(
        b!.records.map((r) => [
          r.key && Buffer.from(r.key).toString(),
          r.value && Buffer.from(r.value).toString(),
          r.headers.length,
          r.timestampMs,
        ]),
      ).toEqual(
        records.map((r) => [
          r.key && Buffer.from(r.key).toString(),
          r.value && Buffer.from(r.value).toString(),
          r.headers.length,
          r.timestampMs,
        ]),
      );
    },
  );

  it("writes lastOffsetDelta past the last record when asked (filtered offsets after it)", async () => {
    const bytes = encoded({ lastOffsetDelta: 9 });
    expect(bytes.readInt32BE(23)).toBe(9);
    expect((await decodeBatches(bytes))[0]!.records.length).toBe(3);
  });

  it("refuses a damaged, unknown-codec or old-format batch with Kafka's error", async () => {
    const flipped = encoded();
    flipped[flipped.byteLength - 2] ^= 0xff;
    expect(await refusal(flipped)).toBe("CORRUPT_MESSAGE");
    expect(await refusal(encoded().subarray(0, 70))).toBe("CORRUPT_MESSAGE");
    const codec5 = encoded();
    codec5.writeInt16BE(codec5.readInt16BE(21) | 5, 21);
    codec5.writeUInt32BE(crc32c(codec5.subarray(21)), 17);
    expect(await refusal(codec5)).toBe("UNSUPPORTED_COMPRESSION_TYPE");
    const notSnappy = encoded(); // uncompressed records labelled snappy
    notSnappy.writeInt16BE(notSnappy.readInt16BE(21) | 2, 21);
    notSnappy.writeUInt32BE(crc32c(notSnappy.subarray(21)), 17);
    expect(await refusal(notSnappy)).toBe("CORRUPT_MESSAGE");
    const magic1 = encoded();
    magic1.writeInt8(1, 16);
    expect(await refusal(magic1)).toBe("UNSUPPORTED_FOR_MESSAGE_FORMAT");
    // Kafka's numbers for them; tern-only codes reach Kafka clients as UNKNOWN_SERVER_ERROR.
    expect([
      kafkaErrorCode("CORRUPT_MESSAGE"),
      kafkaErrorCode("UNSUPPORTED_COMPRESSION_TYPE"),
      kafkaErrorCode("UNSUPPORTED_FOR_MESSAGE_FORMAT"),
      kafkaErrorCode("NONE"),
    ]).toEqual([2, 76, 43, 0]);
    expect(kafkaErrorCode("SHUTTING_DOWN")).toBe(-1);
  });
});

describe("record batch v2 stored as sent", () => {
  it("is storable when its header agrees with its records; otherwise the records are stored decoded", async () => {
    const [ok] = await decodeBatches(encoded());
    expect(ok!.asSent?.byteLength).toBe(encoded().byteLength);
    const [wideDelta] = await decodeBatches(encoded({ lastOffsetDelta: 9 }));
    expect(wideDelta!.asSent).toBeUndefined();
    const [noTime] = await decodeBatches(
      encoded({ records: [{ ...records[0]!, timestampMs: 0 }] }),
    );
    expect(noTime!.asSent).toBeUndefined();
    const maxLies = encoded();
    maxLies.writeBigInt64BE(1n, 35);
    maxLies.writeUInt32BE(crc32c(maxLies.subarray(21)), 17);
    expect((await decodeBatches(maxLies))[0]!.asSent).toBeUndefined();
  });

  it("reads its header in place, and a patched baseOffset and leader epoch keep the CRC valid", async () => {
    const bytes = encoded();
    expect(readBatchHeader(bytes)).toMatchObject({
      codec: "none",
      isTransactional: true,
      isControl: false,
      lastOffsetDelta: 2,
      baseTimestampMs: 1_699_999_999_999,
      maxTimestampMs: 1_700_000_000_005,
      producerId: 5n,
      producerEpoch: 2,
      baseSequence: 9,
      recordCount: 3,
    });
    const crc = bytes.readUInt32BE(17);
    patchBatchOffsets(bytes, 123_456_789_012n, 7);
    expect(bytes.readBigInt64BE(0)).toBe(123_456_789_012n);
    expect(bytes.readInt32BE(12)).toBe(7);
    expect(bytes.readUInt32BE(17)).toBe(crc);
    expect((await decodeBatches(bytes))[0]!.records.length).toBe(3);
    expect(() => readBatchHeader(bytes.subarray(0, bytes.length - 1))).toThrow(DecodeError);
  });
});
