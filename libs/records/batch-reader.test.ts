// The v2 batch reader refuses what it cannot trust, with an error that says what is wrong: a
// damaged CRC-32C, a record count the bytes cannot hold, a length that does not match, a
// record cut short, a compressed section inflating past the bound (refused, not inflated).
// It reads what Kafka writes: a batch from the Kafka listener's encoder, log append time.
import { describe, expect, it } from "vitest";
import { buildBatch, buildUncompressedBatch } from "./batch-builder.js";
import {
  readBatch,
  readCheckedHeader,
  readUncompressedBatch,
  type RecordConstructor,
} from "./batch-reader.js";
import {
  ATTR_LOG_APPEND_TIME,
  AT_ATTRIBUTES,
  AT_CRC,
  AT_RECORD_COUNT,
  patchBatchOffsets,
} from "./batch-header.js";
import { compress, codecId } from "./compression.js";
import { crc32c } from "./crc32c.js";
import { KafkaWriter } from "./kafka-codec.js";
import { DecodeError } from "../common/decode-error.js";
import { encodeBatch } from "../../services/kafka/record-batch.js";

const values: RecordConstructor<string | null> = (_o, _t, _k, value) =>
  value === null ? null : value.toString();
const offsets: RecordConstructor<bigint> = (offset) => offset;
const times: RecordConstructor<number> = (_o, timestampMs) => timestampMs;

const identity = { producerId: -1n, producerEpoch: -1, baseSequence: -1 };
const record = (
  value: string,
  timestampMs = 1_700_000_000_000,
): {
  key: null;
  value: Buffer;
  headers: [];
  timestampMs: number;
} => ({ key: null, value: Buffer.from(value), headers: [], timestampMs });

function batchOf(...vs: string[]): Buffer {
  return buildUncompressedBatch({
    isTransactional: false,
    records: vs.map((v) => record(v)),
    ...identity,
  });
}

/** The batch with its CRC-32C computed again (a damage the checksum does not catch). */
function recrc(b: Buffer): Buffer {
  b.writeUInt32BE(crc32c(b.subarray(AT_ATTRIBUTES)), AT_CRC);
  return b;
}

async function refusal(p: Promise<unknown> | (() => unknown)): Promise<string> {
  try {
    await (typeof p === "function" ? p() : p);
  } catch (e) {
    expect(e).toBeInstanceOf(DecodeError);
    return (e as Error).message;
  }
  return "accepted";
}

describe("record batch v2 reader", () => {
  it("reads a batch from the Kafka listener's encoder, offsets from its baseOffset", () => {
    const w = new KafkaWriter(64);
    encodeBatch(w, {
      baseOffset: 2n ** 40n,
      ...identity,
      isTransactional: false,
      records: [record("a"), record("b")],
    });
    const b = Buffer.from(w.finish());
    expect(readUncompressedBatch(b, values).records).toEqual(["a", "b"]);
    expect(readUncompressedBatch(b, offsets).records).toEqual([2n ** 40n, 2n ** 40n + 1n]);
  });

  it("gives every record the batch's maxTimestamp under log append time", () => {
    const b = buildUncompressedBatch({
      isTransactional: false,
      records: [record("a", 10), record("b", 30)],
      ...identity,
    });
    expect(readUncompressedBatch(b, times).records).toEqual([10, 30]);
    b.writeInt16BE(b.readInt16BE(AT_ATTRIBUTES) | ATTR_LOG_APPEND_TIME, AT_ATTRIBUTES);
    expect(readUncompressedBatch(recrc(b), times).records).toEqual([30, 30]);
  });

  it("a patched baseOffset keeps the CRC-32C valid; any damage inside it is refused", async () => {
    const b = batchOf("a", "b");
    patchBatchOffsets(b, 99n, 3);
    expect(readUncompressedBatch(b, offsets).records).toEqual([99n, 100n]);
    b[b.byteLength - 2] ^= 1; // the last value's byte
    expect(await refusal(() => readUncompressedBatch(b, values))).toMatch(/CRC-32C mismatch/);
    expect(await refusal(readBatch(b, values))).toMatch(/CRC-32C mismatch/);
    expect(readUncompressedBatch(b, values, { checkCrc: false }).records).toHaveLength(2);
  });

  it("refuses a record count the bytes cannot hold, or that disagrees with the records", async () => {
    const b = batchOf("a", "b");
    b.writeInt32BE(1_000_000, AT_RECORD_COUNT);
    expect(await refusal(() => readUncompressedBatch(recrc(b), values))).toMatch(
      /record count 1000000 in \d+ bytes/,
    );
    b.writeInt32BE(-1, AT_RECORD_COUNT);
    expect(await refusal(() => readUncompressedBatch(recrc(b), values))).toMatch(/record count -1/);
    b.writeInt32BE(1, AT_RECORD_COUNT);
    expect(await refusal(() => readUncompressedBatch(recrc(b), values))).toMatch(
      /bytes after the last record/,
    );
  });

  it("refuses a batch whose length field does not match its bytes, or cut short", async () => {
    const b = batchOf("abc");
    expect(await refusal(() => readCheckedHeader(b.subarray(0, b.byteLength - 1)))).toMatch(
      /length \d+ does not match/,
    );
    expect(await refusal(() => readCheckedHeader(b.subarray(0, 40)))).toMatch(/header alone is 61/);
  });

  it("refuses a record whose value length runs past the record", async () => {
    const b = batchOf("abc");
    // The value's length varint sits right before its 3 bytes: claim 60 bytes (zigzag 120).
    b[b.byteLength - 5] = 120;
    expect(await refusal(() => readUncompressedBatch(recrc(b), values))).toMatch(
      /a field of 60 bytes/,
    );
  });

  it("refuses an inflation bomb before it grows past the bound, in every codec", async () => {
    const big = Buffer.alloc(8 * 1024 * 1024, 0x61);
    for (const codec of ["gzip", "snappy", "lz4", "zstd"] as const) {
      const b = await buildBatch({
        codec,
        isTransactional: false,
        records: [{ key: null, value: big, headers: [], timestampMs: 1 }],
        ...identity,
      });
      expect(b.byteLength).toBeLessThan(1024 * 1024);
      expect(await refusal(readBatch(b, values, { maxInflatedBytes: 1024 * 1024 }))).toMatch(
        /inflate|bound|declares|larger than/,
      );
      expect((await readBatch(b, values)).records[0]).toHaveLength(big.byteLength);
    }
  });

  it("refuses a compressed batch read as uncompressed, and damaged compressed bytes", async () => {
    const b = await buildBatch({
      codec: "gzip",
      isTransactional: false,
      records: [record("x")],
      ...identity,
    });
    expect(await refusal(() => readUncompressedBatch(b, values))).toMatch(/a gzip batch/);
    const garbage = Buffer.concat([b.subarray(0, 61), await compress("gzip", Buffer.from("junk"))]);
    garbage.writeInt32BE(garbage.byteLength - 12, 8);
    garbage.writeInt16BE(codecId("gzip"), AT_ATTRIBUTES);
    expect(await refusal(readBatch(recrc(garbage), values))).toMatch(/record|cut short|count/);
  });
});
