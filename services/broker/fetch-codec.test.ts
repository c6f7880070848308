import { describe, expect, it } from "vitest";
import { loadTernProto, serviceDefinition } from "../../libs/common/proto.js";
import { fetchResponseSerializer, withFetchCodec, WireBatch } from "./fetch-codec.js";
import type { ReadBatch } from "./partition-state-machine.js";

const proto = loadTernProto();
type Codec = { serialize: (v: unknown) => Buffer; deserialize: (b: Buffer) => any };
const responseType = proto.packageDefinition["tern.v1.FetchResponse"] as unknown as Codec;
const partitionType = proto.packageDefinition["tern.v1.FetchPartitionResult"] as unknown as Codec;
const handWritten = fetchResponseSerializer(partitionType.serialize, responseType.serialize);

const bytes = (s: string): Uint8Array => new Uint8Array(Buffer.from(s));

function batch(over: Partial<ReadBatch> = {}): ReadBatch {
  return {
    baseOffset: 41n,
    producerId: -1n,
    producerEpoch: -1,
    baseSequence: -1,
    isTransactional: false,
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
      {
        key: bytes("k2"),
        value: new Uint8Array(20_000).fill(7),
        headers: [],
        timestampMs: 2 ** 52,
      },
    ],
    ...over,
  };
}

function response(batchesPerPartition: ReadBatch[][]): unknown {
  return {
    partitions: batchesPerPartition.map((batches, i) => ({
      topic: `t${i}`,
      partition: i,
      errorCode: "NONE",
      errorMessage: "",
      highWatermark: "99",
      lastStableOffset: "98",
      logStartOffset: "3",
      batches: batches.map((b) => new WireBatch(b)),
      nextFetchOffset: "44",
      leader: i === 1 ? { nodeId: 2, address: "127.0.0.1:9" } : null,
    })),
  };
}

/** What the generated serializer makes of the same answer (WireBatch turned into plain objects). */
function generated(value: any): Buffer {
  return responseType.serialize(
    JSON.parse(JSON.stringify(value), (_k, v) => (v?.type === "Buffer" ? Buffer.from(v.data) : v)),
  );
}

describe("fetch codec", () => {
  it("decodes to exactly what the generated serializer's bytes decode to", () => {
    const value = response([
      [
        batch(),
        batch({
          baseOffset: 44n,
          producerId: 12345678901234n,
          producerEpoch: 7,
          baseSequence: 2_147_483_000,
          isTransactional: true,
        }),
      ],
      [],
      [
        batch({
          baseOffset: 0n,
          producerId: 0n,
          producerEpoch: 0,
          baseSequence: 0,
          records: [{ key: null, value: null, headers: [], timestampMs: 0 }],
        }),
      ],
    ]);
    const mine = responseType.deserialize(handWritten(value));
    const theirs = responseType.deserialize(generated(value));
    expect(mine).toEqual(theirs);
    // The check above must be able to fail: the decoded answer carries the records.
    expect(mine.partitions[0].batches[1].records[2].value.length).toBe(20_000);
    expect(mine.partitions[0].batches[0].records.map((r: any) => r.offset)).toEqual([
      "41",
      "42",
      "43",
    ]);
    expect(mine.partitions[0].batches[0].producerId).toBe("-1");
    expect(mine.partitions[0].batches[1].records[1].headers[1].key).toBe("ünï");
    expect(mine.partitions[1].leader).toEqual({ nodeId: 2, address: "127.0.0.1:9" });
  });

  it("an answer without WireBatch batches goes to the generated serializer", () => {
    const plain = {
      partitions: [
        {
          topic: "t",
          partition: 0,
          errorCode: "NOT_LEADER_OR_FOLLOWER",
          batches: [{ producerId: "5", records: [{ value: Buffer.from("x"), offset: "9" }] }],
        },
      ],
    };
    expect(handWritten(plain).equals(responseType.serialize(plain))).toBe(true);
  });

  it("replaces only the Fetch serializer of the Broker service", () => {
    const def = serviceDefinition(proto, "tern.v1.Broker")!;
    const withCodec = withFetchCodec(def, proto.packageDefinition);
    expect(withCodec.Fetch!.responseSerialize).not.toBe(def.Fetch!.responseSerialize);
    expect(withCodec.Produce).toBe(def.Produce);
  });
});
