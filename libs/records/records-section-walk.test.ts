// walkRecordsSection: what it reports agrees with decodeRecordsSection on the same section, and
// a section decoding refuses is refused by the walk with the same DecodeError.
import { describe, expect, it } from "vitest";
import { KafkaReader, KafkaWriter } from "./kafka-codec.js";
import {
  decodeRecordsSection,
  walkRecordsSection,
  writeRecordsSection,
  type RecordBytes,
  type SectionRecord,
} from "./records-section.js";

/** Key + value + each header's key and value, and 1 per header: every length visible. */
const size: RecordBytes = (k, v, headers) =>
  headers.reduce((n, h) => n + 1 + h.keyBytes + h.valueBytes, k + v);

function section(records: readonly SectionRecord[], base: number): Buffer {
  const w = new KafkaWriter(16);
  writeRecordsSection(w, records, base);
  return w.finish();
}

const records: SectionRecord[] = [
  { key: null, value: Buffer.from("a"), headers: [], timestampMs: 1_000 },
  { key: Buffer.from("k"), value: null, headers: [], timestampMs: 990 },
  {
    key: Buffer.alloc(0),
    value: Buffer.alloc(300, 7),
    headers: [
      { key: "h", value: Buffer.from("vv") },
      { key: "é", value: null },
    ],
    timestampMs: 1_700_000_000_000,
  },
];

describe("walkRecordsSection", () => {
  it("reports the sizes, null keys, timestamps and order decoding would see", () => {
    const s = section(records, 990);
    const decoded = decodeRecordsSection(new KafkaReader(s), records.length, 990);
    const walk = walkRecordsSection(new KafkaReader(s), records.length, 990, size);
    const sizes = decoded.map((r) =>
      size(
        r.key?.byteLength ?? 0,
        r.value?.byteLength ?? 0,
        r.headers.map((h) => ({
          keyBytes: Buffer.byteLength(h.key),
          valueBytes: h.value?.byteLength ?? 0,
        })),
      ),
    );
    expect(walk).toEqual({
      offsetDeltasInOrder: true,
      everyTimestamped: true,
      minTimestampMs: 990,
      maxTimestampMs: 1_700_000_000_000,
      keylessRecords: 1, // the null key, not the empty one
      totalRecordBytes: sizes.reduce((a, b) => a + b, 0),
    });
  });

  it("sees a record without a create time", () => {
    const s = section([{ key: null, value: null, headers: [], timestampMs: 0 }], 0);
    expect(walkRecordsSection(new KafkaReader(s), 1, 0, size).everyTimestamped).toBe(false);
  });

  it("refuses what decoding refuses, with the same message", () => {
    const good = section(records, 990);
    const nullHeaderKey = Buffer.from(good);
    // The first header key's length varint of the last record: find "h" preceded by its length (2).
    const at = nullHeaderKey.indexOf(Buffer.from([2, "h".charCodeAt(0)]), 20);
    nullHeaderKey[at] = 1; // zigzag -1: a null key
    const cases: Array<[string, Buffer, number]> = [
      ["cut short", good.subarray(0, good.byteLength - 3), records.length],
      ["trailing bytes", Buffer.concat([good, Buffer.from([0])]), records.length],
      ["one record too many", good, records.length + 1],
      ["a count the bytes cannot hold", good, 1_000_000],
      ["a null header key", nullHeaderKey, records.length],
    ];
    for (const [name, bytes, count] of cases) {
      let decodeError: unknown;
      try {
        decodeRecordsSection(new KafkaReader(bytes), count, 990);
      } catch (e) {
        decodeError = e;
      }
      expect(decodeError, name).toBeInstanceOf(Error);
      expect(() => walkRecordsSection(new KafkaReader(bytes), count, 990, size), name).toThrow(
        (decodeError as Error).message,
      );
    }
  });
});
