// The consumer's hand-written Fetch decoder: for answers written by the generated encoder (and
// with the partition's fields in another order), the partition-level fields agree with the
// generated decoder and each Kafka record batch v2 reads back to the records it was built from
// (null apart from empty, headers, offsets from the batch's baseOffset, timestamps), in every
// codec; control batches and records before the fetch offset are left out; a damaged batch is
// refused naming its partition and offset; kept records do not pin the answer; a truncated
// answer fails whole.
import { describe, expect, it } from "vitest";
import { loadTernProto } from "../../common/proto.js";
import { buildBatch } from "../../records/batch-builder.js";
import {
  ATTR_CONTROL,
  AT_ATTRIBUTES,
  AT_CRC,
  patchBatchOffsets,
} from "../../records/batch-header.js";
import { CODECS, type CompressionCodec } from "../../records/compression.js";
import { crc32c } from "../../records/crc32c.js";
import type { SectionRecord } from "../../records/records-section.js";
import {
  fetchedRecords,
  fetchResponseDeserializer,
  type FetchedPartition,
  type FetchedRecord,
} from "./fetch-decoder.js";

const proto = loadTernProto();
type Codec = { serialize: (v: unknown) => Buffer; deserialize: (b: Buffer) => any };
const responseType = proto.packageDefinition["tern.v1.FetchResponse"] as unknown as Codec;
const partitionType = proto.packageDefinition["tern.v1.FetchPartitionResult"] as unknown as Codec;
const decode = fetchResponseDeserializer(partitionType.deserialize);

const bytes = (s: string): Buffer => Buffer.from(s);

const records: SectionRecord[] = [
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
  { key: bytes("k2"), value: Buffer.alloc(20_000, 7), headers: [], timestampMs: 2 ** 42 },
  { key: Buffer.alloc(0), value: Buffer.alloc(0), headers: [], timestampMs: 5 },
];

async function kafkaBatch(
  baseOffset: bigint,
  codec: CompressionCodec = "none",
  over: Partial<Parameters<typeof buildBatch>[0]> = {},
): Promise<Buffer> {
  const b = await buildBatch({
    codec,
    producerId: 7n,
    producerEpoch: 3,
    baseSequence: 12,
    isTransactional: true,
    records,
    ...over,
  });
  patchBatchOffsets(b, baseOffset, 1);
  return b;
}

/** A Kafka control batch (a transaction marker) at offset. */
async function controlBatch(offset: bigint): Promise<Buffer> {
  const b = await kafkaBatch(offset, "none", {
    records: [
      { key: Buffer.from([0, 0, 0, 1]), value: Buffer.alloc(6), headers: [], timestampMs: 1 },
    ],
  });
  b.writeInt16BE(b.readInt16BE(AT_ATTRIBUTES) | ATTR_CONTROL, AT_ATTRIBUTES);
  b.writeUInt32BE(crc32c(b.subarray(AT_ATTRIBUTES)), AT_CRC);
  return b;
}

/** What the records read back as, in the consumer's terms. */
function expectedRecords(topic: string, partition: number, baseOffset: bigint): FetchedRecord[] {
  return records.map((r, i) => ({
    topic,
    partition,
    offset: baseOffset + BigInt(i),
    key: r.key === null ? null : Buffer.from(r.key),
    value: r.value === null ? null : Buffer.from(r.value),
    headers: Object.fromEntries(
      r.headers.map((h) => [h.key, h.value === null ? Buffer.alloc(0) : Buffer.from(h.value)]),
    ),
    timestampMs: r.timestampMs,
  }));
}

/** The partition-level fields both decoders must agree on. */
function partitionView(p: any): unknown {
  return {
    topic: p.topic,
    partition: p.partition,
    errorCode: p.errorCode,
    errorMessage: p.errorMessage,
    nextFetchOffset: p.nextFetchOffset,
    highWatermark: p.highWatermark,
    lastStableOffset: p.lastStableOffset,
    leader: p.leader,
    batchCount: p.batches.length,
  };
}

const read = (p: FetchedPartition, from = 0n, checkCrcs = true): Promise<FetchedRecord[]> =>
  fetchedRecords(p, from, { checkCrcs });

describe("consumer fetch decoder", () => {
  it("agrees with the generated decoder and reads each batch back to its records", async () => {
    const [b41, b40] = [await kafkaBatch(41n), await kafkaBatch(2n ** 40n)];
    const answer = responseType.serialize({
      partitions: [0, 1].map((i) => ({
        topic: `t${i}`,
        partition: i,
        errorCode: "NONE",
        errorMessage: "",
        highWatermark: "99",
        lastStableOffset: "98",
        logStartOffset: "3",
        batches: [{ kafkaBatch: b41 }, { kafkaBatch: b40 }],
        nextFetchOffset: "44",
        leader: i === 1 ? { nodeId: 2, address: "127.0.0.1:9" } : null,
      })),
    });
    const got = decode(answer).partitions as FetchedPartition[];
    expect(got.map(partitionView)).toEqual(
      responseType.deserialize(answer).partitions.map(partitionView),
    );
    for (const p of got) {
      expect(await read(p)).toEqual([
        ...expectedRecords(p.topic, p.partition, 41n),
        ...expectedRecords(p.topic, p.partition, 2n ** 40n),
      ]);
    }
    // Batches are views into the answer; kept records are copies.
    expect(got[0]!.batches[0]!.kafkaBatch.buffer).toBe(answer.buffer);
    const kept = (await read(got[0]!))[2]!;
    expect(kept.value!.buffer).not.toBe(answer.buffer);
  });

  it("reads partition fields in another order, skips control batches, errors carry no batches", async () => {
    const head = partitionType.serialize({
      topic: "a",
      partition: 3,
      errorCode: "NONE",
      highWatermark: "10",
      nextFetchOffset: "10",
    });
    const batches = partitionType.serialize({
      batches: [{ kafkaBatch: await controlBatch(5n) }, { kafkaBatch: await kafkaBatch(6n) }],
    });
    // Field 1 (partitions) of FetchResponse, length-delimited: its batches before its topic.
    const body = Buffer.concat([batches, head]);
    const answer = Buffer.concat([
      Buffer.from([0x0a]),
      varint(body.byteLength),
      body,
      responseType.serialize({
        partitions: [
          {
            topic: "b",
            partition: 0,
            errorCode: "NOT_LEADER_OR_FOLLOWER",
            errorMessage: "moved",
            leader: { nodeId: 1, address: "127.0.0.1:1" },
          },
        ],
      }),
    ]);
    const got = decode(answer).partitions as FetchedPartition[];
    expect(got.map(partitionView)).toEqual(
      responseType.deserialize(answer).partitions.map(partitionView),
    );
    expect(await read(got[0]!)).toEqual(expectedRecords("a", 3, 6n));
    expect(got[1]!.batches).toEqual([]);
  });

  it.each(CODECS)(
    "reads a %s batch, leaving out records before the fetch offset",
    async (codec) => {
      const answer = responseType.serialize({
        partitions: [
          {
            topic: "t",
            partition: 0,
            errorCode: "NONE",
            batches: [{ kafkaBatch: await kafkaBatch(100n, codec) }],
          },
        ],
      });
      const [p] = decode(answer).partitions as FetchedPartition[];
      expect(await read(p!, 102n)).toEqual(expectedRecords("t", 0, 100n).slice(2));
      expect(await read(p!, 104n)).toEqual([]);
    },
  );

  it("refuses a damaged batch, naming its partition and offset (unless CRCs are not checked)", async () => {
    const b = await kafkaBatch(77n);
    b[b.byteLength - 2] ^= 1; // inside the last record's value
    const answer = responseType.serialize({
      partitions: [{ topic: "t", partition: 2, errorCode: "NONE", batches: [{ kafkaBatch: b }] }],
    });
    const [p] = decode(answer).partitions as FetchedPartition[];
    await expect(read(p!)).rejects.toThrow(/record batch of t\/2 at offset 77: .*CRC-32C mismatch/);
    expect(await read(p!, 0n, false)).toHaveLength(records.length);
  });

  it("refuses an answer whose batches are proto records (a broker older than the client)", () => {
    const answer = responseType.serialize({
      partitions: [
        {
          topic: "t",
          partition: 0,
          errorCode: "NONE",
          batches: [{ records: [{ value: Buffer.from("v"), offset: "0" }] }],
        },
      ],
    });
    expect(() => decode(answer)).toThrow(/without kafka_batch/);
  });

  it("fails on a truncated answer instead of returning part of it", async () => {
    const answer = responseType.serialize({
      partitions: [
        {
          topic: "t",
          partition: 0,
          errorCode: "NONE",
          batches: [{ kafkaBatch: await kafkaBatch(0n) }],
          nextFetchOffset: "44",
        },
      ],
    });
    expect(() => decode(answer.subarray(0, answer.byteLength - 5))).toThrow(/past the end/);
  });
});

function varint(n: number): Buffer {
  const out: number[] = [];
  while (n >= 128) {
    out.push((n & 127) | 128);
    n >>>= 7;
  }
  out.push(n);
  return Buffer.from(out);
}
