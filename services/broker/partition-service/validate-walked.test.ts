// A v2 batch whose records were walked, not decoded (record-batch.ts decodeOnlyPlainBatch), gets
// the same answers from validateBatch as the same batch decoded into records.
import { describe, expect, it } from "vitest";
import { buildUncompressedBatch } from "../../../libs/records/batch-builder.js";
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
      ["a record over the record bound", [rec(10), rec(2 << 20)], "MESSAGE_TOO_LARGE"],
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
});
