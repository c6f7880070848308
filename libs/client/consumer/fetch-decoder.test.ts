// The consumer's hand-written Fetch decoder against the generated one: for answers written by
// the broker's hand-written encoder and by the generated encoder (fields in any order, control
// batches, negative int64s, empty keys, headers), both decoders must agree record for record.
import { describe, expect, it } from "vitest";
import { loadTernProto } from "../../common/proto.js";
import { fetchResponseSerializer, WireBatch } from "../../../services/broker/fetch-codec.js";
import type { ReadBatch } from "../../../services/broker/partition-state-machine.js";
import { fetchResponseDeserializer, type FetchedPartition } from "./fetch-decoder.js";

const proto = loadTernProto();
type Codec = { serialize: (v: unknown) => Buffer; deserialize: (b: Buffer) => any };
const responseType = proto.packageDefinition["tern.v1.FetchResponse"] as unknown as Codec;
const partitionType = proto.packageDefinition["tern.v1.FetchPartitionResult"] as unknown as Codec;
const brokerEncode = fetchResponseSerializer(partitionType.serialize, responseType.serialize);
const decode = fetchResponseDeserializer(partitionType.deserialize);

const bytes = (s: string): Uint8Array => new Uint8Array(Buffer.from(s));

const batch: ReadBatch = {
  baseOffset: 41n,
  producerId: 7n,
  producerEpoch: 3,
  baseSequence: 12,
  isTransactional: true,
  records: [
    { key: null, value: bytes("v0"), headers: [], timestampMs: 1_700_000_000_000 },
    {
      key: bytes("k1"),
      value: null,
      headers: [
        { key: "h", value: bytes("hv") },
        { key: "ünï", value: null },
      ],
      timestampMs: 0,
    },
    { key: bytes("k2"), value: new Uint8Array(20_000).fill(7), headers: [], timestampMs: 2 ** 52 },
  ],
};

/** The partition-level fields both decoders must agree on, with each decoder's batches. */
function partitionView(p: any, batches: unknown): unknown {
  return {
    topic: p.topic,
    partition: p.partition,
    errorCode: p.errorCode,
    nextFetchOffset: p.nextFetchOffset,
    highWatermark: p.highWatermark,
    leader: p.leader,
    batches,
  };
}

/** What the generated decoder says, in the consumer's terms. */
function expected(buf: Buffer): unknown[] {
  return responseType.deserialize(buf).partitions.map((p: any) =>
    partitionView(
      p,
      p.batches.map((b: any) => ({
        isControl: b.isControl,
        records: b.records.map((r: any) => ({
          topic: p.topic,
          partition: p.partition,
          offset: BigInt(r.offset),
          key: r.key.length > 0 ? Buffer.from(r.key) : null,
          value: Buffer.from(r.value),
          headers: Object.fromEntries(r.headers.map((h: any) => [h.key, Buffer.from(h.value)])),
          timestampMs: Number(r.timestampMs),
        })),
      })),
    ),
  );
}

function mine(buf: Buffer): unknown[] {
  return decode(buf).partitions.map((p: FetchedPartition) =>
    partitionView(
      p,
      p.batches.map((b) => ({ isControl: b.isControl, records: b.records.map((r) => ({ ...r })) })),
    ),
  );
}

describe("consumer fetch decoder", () => {
  it("agrees with the generated decoder on the broker's hand-written answers", () => {
    const buf = brokerEncode({
      partitions: [0, 1].map((i) => ({
        topic: `t${i}`,
        partition: i,
        errorCode: "NONE",
        errorMessage: "",
        highWatermark: "99",
        lastStableOffset: "98",
        logStartOffset: "3",
        batches: [
          new WireBatch(batch),
          new WireBatch({
            ...batch,
            baseOffset: 2n ** 40n,
            producerId: -1n,
            producerEpoch: -1,
            baseSequence: -1,
          }),
        ],
        nextFetchOffset: "44",
        leader: i === 1 ? { nodeId: 2, address: "127.0.0.1:9" } : null,
      })),
    });
    const got = mine(buf);
    expect(got).toEqual(expected(buf));
    expect((got[0] as any).batches[1].records[2].offset).toBe(2n ** 40n + 2n);
  });

  it("agrees on generated answers: control batches, errors, fields in another order", () => {
    const buf = responseType.serialize({
      partitions: [
        {
          topic: "a",
          partition: 3,
          errorCode: "NONE",
          highWatermark: "10",
          nextFetchOffset: "10",
          batches: [
            {
              producerId: "-1",
              isControl: true,
              controlType: "COMMIT",
              baseOffset: "5",
              records: [
                { key: Buffer.alloc(0), value: Buffer.alloc(0), offset: "5", timestampMs: "-1" },
              ],
            },
            {
              producerId: "9",
              baseOffset: "6",
              records: [
                {
                  key: Buffer.from("k"),
                  value: Buffer.from("v"),
                  offset: "6",
                  timestampMs: "123",
                  headers: [{ key: "x", value: Buffer.from("y") }],
                },
              ],
            },
          ],
        },
        {
          topic: "b",
          partition: 0,
          errorCode: "NOT_LEADER_OR_FOLLOWER",
          errorMessage: "moved",
          leader: { nodeId: 1, address: "127.0.0.1:1" },
          batches: [],
        },
      ],
    });
    const got = mine(buf);
    expect(got).toEqual(expected(buf));
    expect((got[0] as any).batches[0].records[0].timestampMs).toBe(-1);
  });

  it("fails on a truncated answer instead of returning part of it", () => {
    const buf = brokerEncode({
      partitions: [
        {
          topic: "t",
          partition: 0,
          errorCode: "NONE",
          batches: [new WireBatch(batch)],
          nextFetchOffset: "44",
        },
      ],
    });
    expect(() => decode(buf.subarray(0, buf.byteLength - 5))).toThrow(/past the end/);
  });
});
