// A v2 batch whose records were walked, not decoded (record-batch.ts decodeOnlyPlainBatch), gets
// the same answers from validateBatch as the same batch decoded into records.
import { describe, expect, it } from "vitest";
import { buildBatch, buildUncompressedBatch } from "../../../libs/records/batch-builder.js";
import type { SectionRecord } from "../../../libs/records/records-section.js";
import { decodeBatches, decodeOnlyPlainBatch } from "../../kafka/record-batch.js";
import { validateBatch } from "./produce.js";

const NOW = 1_000_000_000;
const MAX_MESSAGE_BYTES = 1 << 20;

function batch(records: SectionRecord[]): Buffer {
  return buildUncompressedBatch({
    producerId: -1n,
    producerEpoch: -1,
    baseSequence: -1,
    isTransactional: false,
    records,
  });
}

const rec = (valueBytes: number, timestampMs = NOW): SectionRecord => ({
  key: null,
  value: Buffer.alloc(valueBytes, 1),
  headers: [{ key: "h", value: Buffer.from("v") }],
  timestampMs,
});

describe("validateBatch of a walked batch", () => {
  it("answers as for the decoded batch", async () => {
    const cases: Array<[string, SectionRecord[], string]> = [
      ["fine", [rec(10), rec(20, NOW - 5)], "NONE"],
      ["one record over the batch bound", [rec(10), rec(2 << 20)], "MESSAGE_TOO_LARGE"],
      [
        "records over the batch bound",
        Array.from({ length: 20 }, () => rec(60_000)),
        "MESSAGE_TOO_LARGE",
      ],
      ["a timestamp hours ahead", [rec(10), rec(10, NOW + 2 * 3600_000)], "INVALID_TIMESTAMP"],
    ];
    for (const [name, records, expected] of cases) {
      const bytes = batch(records);
      const walked = decodeOnlyPlainBatch(bytes)!;
      expect(walked.walked?.count, name).toBe(records.length);
      expect(walked.records, name).toEqual([]);
      const [decoded] = await decodeBatches(bytes);
      const code = (b: Parameters<typeof validateBatch>[0]): string => {
        const r = validateBatch(b, "", NOW, MAX_MESSAGE_BYTES);
        return "error" in r ? r.error : "NONE";
      };
      expect(code(walked), name).toBe(expected);
      expect(code(decoded!), name).toBe(expected);
    }
  });

  it("keeps the batch's own bytes to store as sent (a view, not a copy)", () => {
    const bytes = batch([rec(10)]);
    const r = validateBatch(decodeOnlyPlainBatch(bytes)!, "", NOW, MAX_MESSAGE_BYTES);
    const asSent = "asSent" in r ? r.asSent : undefined;
    expect(asSent).toEqual(bytes);
    expect(asSent?.buffer).toBe(bytes.buffer);
  });

  it("bounds the batch as sent, as Kafka does: a record has no bound of its own, and a compressed batch counts compressed", async () => {
    const code = (b: Parameters<typeof validateBatch>[0], max: number): string => {
      const r = validateBatch(b, "", NOW, max);
      return "error" in r ? r.error : "NONE";
    };
    // A 2 MiB record in a topic that takes 4 MiB batches (the default).
    const plain = batch([rec(2 << 20)]);
    expect(code(decodeOnlyPlainBatch(plain)!, 4 << 20)).toBe("NONE");
    // A 3 MiB record gzip-compressed to a few KiB: within a 1 MiB max.message.bytes.
    const gzipped = await buildBatch({
      producerId: -1n,
      producerEpoch: -1,
      baseSequence: -1,
      isTransactional: false,
      codec: "gzip",
      records: [rec(3 << 20)],
    });
    expect(gzipped.byteLength).toBeLessThan(64 * 1024);
    const [decoded] = await decodeBatches(gzipped);
    expect(code(decoded!, MAX_MESSAGE_BYTES)).toBe("NONE");
    // The same batch sent uncompressed is over that bound.
    expect(code(decodeOnlyPlainBatch(batch([rec(3 << 20)]))!, MAX_MESSAGE_BYTES)).toBe(
      "MESSAGE_TOO_LARGE",
    );
  });

  it("refuses a record without a key on a compacted topic, walked or decoded (Kafka's INVALID_RECORD), and takes an empty key", async () => {
    const keyed = (key: Buffer | null): SectionRecord => ({ ...rec(10), key });
    for (const [records, compacted, expected] of [
      [[keyed(Buffer.from("k")), keyed(null)], true, "INVALID_RECORD"],
      [[keyed(Buffer.from("k")), keyed(Buffer.alloc(0))], true, "NONE"],
      [[keyed(null)], false, "NONE"],
    ] as const) {
      const bytes = batch([...records]);
      for (const b of [decodeOnlyPlainBatch(bytes)!, (await decodeBatches(bytes))[0]!]) {
        const r = validateBatch(b, "", NOW, MAX_MESSAGE_BYTES, compacted);
        expect("error" in r ? r.error : "NONE").toBe(expected);
      }
    }
  });
});
