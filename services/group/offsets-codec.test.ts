import { describe, expect, it } from "vitest";
import {
  decodeEntry,
  encodeEntry,
  ENTRY_FORMAT_V1,
  parseInt64,
  type OffsetsEntry,
} from "./offsets-codec.js";
import { DecodeError } from "../../libs/common/decode-error.js";

const txn: OffsetsEntry = {
  type: "txn-commit",
  transactionalId: "tx-1",
  groupId: "g",
  producerId: 9223372036854775807n,
  producerEpoch: 3,
  generationId: -1,
  memberId: "",
  groupInstanceId: "",
  timestampMs: 1_700_000_000_000,
  offsets: [
    { topic: "t", partition: 2, offset: 12345678901234567n, leaderEpoch: -1, metadata: "m€" },
  ],
};

function raw(json: string): Uint8Array {
  const body = new TextEncoder().encode(json);
  return Uint8Array.from([ENTRY_FORMAT_V1, ...body]);
}

describe("offsets codec", () => {
  it("round-trips every entry type with 64-bit values intact", () => {
    const entries: OffsetsEntry[] = [
      txn,
      {
        type: "commit",
        groupId: "g",
        generationId: -1,
        memberId: "m",
        groupInstanceId: "i",
        timestampMs: 5,
        offsets: [],
      },
      {
        type: "marker",
        producerId: 7n,
        producerEpoch: 1,
        committed: true,
        coordinatorEpoch: 4,
        timestampMs: 6,
      },
      { type: "expire", nowMs: 10, offsetsRetentionMs: 20, producerExpirationMs: 30 },
    ];
    for (const e of entries) expect(decodeEntry(encodeEntry(e))).toEqual(e);
  });

  it("refuses unknown formats, bad JSON, wrong types and out-of-range int64", () => {
    const bad: Uint8Array[] = [
      new Uint8Array(),
      Uint8Array.from([2, 123, 125]),
      raw("{not json"),
      raw("[]"),
      raw(JSON.stringify({ type: "nope" })),
      raw(
        JSON.stringify({
          type: "marker",
          producerId: 7,
          producerEpoch: 1,
          committed: true,
          coordinatorEpoch: 1,
          timestampMs: 1,
        }),
      ),
      raw(
        JSON.stringify({
          type: "marker",
          producerId: "9223372036854775808",
          producerEpoch: 1,
          committed: true,
          coordinatorEpoch: 1,
          timestampMs: 1,
        }),
      ),
      raw(
        JSON.stringify({
          type: "marker",
          producerId: "1",
          producerEpoch: 1.5,
          committed: true,
          coordinatorEpoch: 1,
          timestampMs: 1,
        }),
      ),
      raw(
        JSON.stringify({
          type: "commit",
          groupId: "g",
          generationId: -1,
          memberId: "",
          groupInstanceId: "",
          timestampMs: 1,
          offsets: {},
        }),
      ),
      raw(
        JSON.stringify({
          type: "commit",
          groupId: "g",
          generationId: -1,
          memberId: "",
          groupInstanceId: "",
          timestampMs: 1,
          offsets: [{ topic: "t" }],
        }),
      ),
    ];
    for (const data of bad) expect(() => decodeEntry(data)).toThrow(DecodeError);
  });

  it("parses wire int64 values", () => {
    expect(parseInt64("-1")).toBe(-1n);
    expect(parseInt64("9223372036854775807")).toBe(9223372036854775807n);
    expect(parseInt64("9223372036854775808")).toBeUndefined();
    expect(parseInt64(42)).toBe(42n);
    expect(parseInt64(1.5)).toBeUndefined();
    expect(parseInt64("12a")).toBeUndefined();
    expect(parseInt64(undefined)).toBeUndefined();
  });
});
