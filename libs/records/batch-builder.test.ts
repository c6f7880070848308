// The v2 batch builder: every codec round-trips through the reader (null apart from empty,
// header order, timestamps, offsets from the patched baseOffset); the bytes are the ones the
// Kafka listener's encoder writes, and the listener's decoder (which Kafka clients' batches go
// through) accepts them with their CRC-32C; a new identity rewrites the CRC, not the records.
import { describe, expect, it } from "vitest";
import { buildBatch, buildUncompressedBatch, setBatchIdentity } from "./batch-builder.js";
import { readBatch, readCheckedHeader, type RecordConstructor } from "./batch-reader.js";
import { patchBatchOffsets } from "./batch-header.js";
import { CODECS } from "./compression.js";
import { KafkaWriter } from "./kafka-codec.js";
import type { SectionRecord } from "./records-section.js";
import { decodeBatches, encodeBatch } from "../../services/kafka/record-batch.js";

const records: SectionRecord[] = [
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
  {
    key: Buffer.from("big"),
    value: Buffer.alloc(50_000, 7),
    headers: [],
    timestampMs: 1_700_000_000_001,
  },
];

const identity = { producerId: 5n, producerEpoch: 2, baseSequence: 9 };

const asRead: RecordConstructor<{
  offset: bigint;
  timestampMs: number;
  key: Buffer | null;
  value: Buffer | null;
  headers: readonly { key: string; value: Uint8Array | null }[];
}> = (offset, timestampMs, key, value, headers) => ({ offset, timestampMs, key, value, headers });

describe("record batch v2 builder", () => {
  it.each(CODECS)("round-trips every field through the reader (%s)", async (codec) => {
    const batch = await buildBatch({ codec, isTransactional: true, records, ...identity });
    patchBatchOffsets(batch, 1_000n, 4);
    const { header, records: read } = await readBatch(batch, asRead);
    expect(header).toMatchObject({
      baseOffset: 1_000n,
      codec,
      isTransactional: true,
      isControl: false,
      logAppendTime: false,
      lastOffsetDelta: 3,
      baseTimestampMs: 1_699_999_999_999,
      maxTimestampMs: 1_700_000_000_005,
      recordCount: 4,
      ...identity,
    });
    expect(read).toEqual(
      records.map((r, i) => ({
        offset: 1_000n + BigInt(i),
        timestampMs: r.timestampMs,
        key: r.key === null ? null : Buffer.from(r.key),
        value: r.value === null ? null : Buffer.from(r.value),
        headers: r.headers.map((h) => ({
          key: h.key,
          value: h.value === null ? null : Buffer.from(h.value),
        })),
      })),
    );
    if (codec !== "none") expect(batch.byteLength).toBeLessThan(50_000);
  });

  it("writes the bytes the Kafka listener's encoder writes", () => {
    const w = new KafkaWriter(64);
    encodeBatch(w, { baseOffset: 0n, isTransactional: false, records, ...identity });
    const built = buildUncompressedBatch({ isTransactional: false, records, ...identity });
    expect(built.equals(w.finish())).toBe(true);
  });

  it.each(CODECS)(
    "is accepted by the Kafka listener's decoder, CRC-32C and all (%s)",
    async (codec) => {
      const batch = await buildBatch({ codec, isTransactional: false, records, ...identity });
      const [decoded] = await decodeBatches(batch);
      expect(decoded).toMatchObject({ ...identity, isTransactional: false, isControl: false });
      expect(decoded!.records.map((r) => r.value && Buffer.from(r.value).toString())).toEqual(
        records.map((r) => r.value && Buffer.from(r.value).toString()),
      );
    },
  );

  it("a new identity rewrites the CRC-32C and leaves the compressed records as they were", async () => {
    const batch = await buildBatch({ codec: "zstd", isTransactional: false, records, ...identity });
    const section = Buffer.from(batch.subarray(61));
    setBatchIdentity(batch, { producerId: 77n, producerEpoch: 0, baseSequence: 0 });
    expect(readCheckedHeader(batch)).toMatchObject({
      producerId: 77n,
      producerEpoch: 0,
      baseSequence: 0,
    });
    expect(batch.subarray(61).equals(section)).toBe(true);
    const [decoded] = await decodeBatches(batch);
    expect(decoded!.producerId).toBe(77n);
  });

  it("refuses to build an empty batch", () => {
    expect(() =>
      buildUncompressedBatch({ isTransactional: false, records: [], ...identity }),
    ).toThrow(/at least one record/);
  });
});
