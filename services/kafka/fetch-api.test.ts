// The Kafka Fetch answer's batches: a batch stored as sent goes out as stored (baseOffset and
// leader epoch patched, CRC untouched) when compression.type is `producer` or its own codec,
// with an empty batch covering offsets filtered after it; otherwise it is inflated and encoded
// in the topic's codec. Driven through fetchResponse with the Broker handler's answer faked.
import { describe, expect, it } from "vitest";
import { fetchResponse } from "./fetch-api.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { decodeBatches, encodeBatch, recordsSection } from "./record-batch.js";
import { KafkaReader, KafkaWriter, type KafkaBody } from "../../libs/records/kafka-codec.js";
import { compress, type CompressionCodec } from "../../libs/records/compression.js";
import { readBatchHeader } from "../../libs/records/batch-header.js";
import type { RecordData } from "../broker/partition-entry.js";
import type { ReadBatch } from "../broker/partition-state-machine.js";

const recs: RecordData[] = [0, 1, 2].map((i) => ({
  key: i === 0 ? null : Buffer.alloc(0),
  value: Buffer.from(`v${i}`),
  headers: [],
  timestampMs: 1_700_000_000_000 + i,
}));

async function sentBatch(codec: CompressionCodec, records = recs): Promise<Buffer> {
  const w = new KafkaWriter(64);
  const b = {
    baseOffset: 0n,
    producerId: 3n,
    producerEpoch: 1,
    baseSequence: 0,
    isTransactional: false,
    records,
  };
  encodeBatch(
    w,
    b,
    codec === "none" ? undefined : { codec, section: await compress(codec, recordsSection(b)) },
  );
  return Buffer.from(w.finish());
}

/** The last answer fetchOf got, as the connection writes it (one buffer, or its pieces). */
let lastBody: KafkaBody | undefined;

/** Fetch v4 of t/0 from offset 0 against a partition service read of `batches` up to nextFetchOffset. */
async function fetchOf(
  compressionType: string | undefined,
  batches: ReadBatch[],
  nextFetchOffset: bigint,
): Promise<Buffer> {
  const deps = {
    metadata: () => ({
      topics: [
        {
          name: "t",
          config: compressionType === undefined ? {} : { "compression.type": compressionType },
        },
      ],
    }),
    fetch: async () => [
      {
        topic: "t",
        partition: 0,
        fetchOffset: 0n,
        error: "NONE",
        message: "",
        read: {
          error: "NONE",
          highWatermark: 20n,
          lastStableOffset: 20n,
          logStartOffset: 0n,
          nextFetchOffset,
          batches,
          bytes: 0,
        },
      },
    ],
  } as unknown as KafkaDeps;
  const w = new KafkaWriter(64);
  w.int32(-1)
    .int32(0)
    .int32(1)
    .int32(1 << 20)
    .int8(0);
  w.array(
    ["t"],
    (x, t) =>
      void x.string(t).array(
        [0],
        (y) =>
          void y
            .int32(0)
            .int64(0n)
            .int32(1 << 20),
      ),
  );
  const body = await fetchResponse(deps, 4, new KafkaReader(Buffer.from(w.finish())));
  lastBody = body;
  const answer = Buffer.isBuffer(body) ? body : Buffer.concat(body);
  const r = new KafkaReader(answer);
  r.int32(); // throttle
  r.int32(); // topics
  r.string();
  r.int32(); // partitions
  r.int32();
  expect(r.int16()).toBe(0);
  r.int64();
  r.int64();
  r.array((x) => [x.int64(), x.int64()]);
  const n = r.int32();
  return answer.subarray(r.pos, r.pos + n);
}

function stored(bytes: Buffer, codec: CompressionCodec, baseOffset: bigint): ReadBatch {
  return {
    baseOffset,
    producerId: 3n,
    producerEpoch: 1,
    baseSequence: 0,
    isTransactional: false,
    records: [],
    asSent: { batch: bytes, codec, recordCount: 3, offsetCount: 3, cleaned: false },
  };
}

/** The batches of a records field: [baseOffset, lastOffsetDelta, codec bits, bytes]. */
function split(records: Buffer): Array<[bigint, number, number, Buffer]> {
  const out: Array<[bigint, number, number, Buffer]> = [];
  for (let at = 0; at < records.length; at += 12 + records.readInt32BE(at + 8)) {
    const b = records.subarray(at, at + 12 + records.readInt32BE(at + 8));
    out.push([b.readBigInt64BE(0), b.readInt32BE(23), b.readInt16BE(21) & 7, b]);
  }
  return out;
}

describe("Kafka Fetch of batches stored as sent", () => {
  it("sends the stored bytes with baseOffset and leader epoch patched, and covers filtered offsets after them with an empty batch", async () => {
    const lz4 = await sentBatch("lz4");
    const got = split(await fetchOf(undefined, [stored(lz4, "lz4", 10n)], 15n));
    expect(got.map(([o, d, c]) => [o, d, c])).toEqual([
      [10n, 2, 3],
      [13n, 1, 0],
    ]);
    const [, , , bytes] = got[0]!;
    expect(bytes.subarray(16).equals(lz4.subarray(16))).toBe(true); // from magic on: as sent, CRC included
    expect(bytes.readInt32BE(12)).toBe(-1);
    expect(readBatchHeader(bytes).recordCount).toBe(3);
    expect(
      (await decodeBatches(bytes))[0]!.records.map(
        (r) => r.value && Buffer.from(r.value).toString(),
      ),
    ).toEqual(["v0", "v1", "v2"]);
  });

  it("re-encodes in the topic's codec when it names another one, and plain for uncompressed; keeps a batch already in it", async () => {
    const gzip = await sentBatch("gzip");
    const asZstd = split(await fetchOf("zstd", [stored(gzip, "gzip", 0n)], 3n));
    expect(asZstd.map(([o, d, c]) => [o, d, c])).toEqual([[0n, 2, 4]]);
    const decoded = (await decodeBatches(asZstd[0]![3]))[0]!;
    expect(decoded.records.map((r) => [r.key && r.key.byteLength, r.timestampMs])).toEqual([
      [null, recs[0]!.timestampMs],
      [0, recs[1]!.timestampMs],
      [0, recs[2]!.timestampMs],
    ]);
    expect(split(await fetchOf("uncompressed", [stored(gzip, "gzip", 0n)], 3n))[0]![2]).toBe(0);
    const kept = split(await fetchOf("gzip", [stored(gzip, "gzip", 0n)], 3n));
    expect(kept[0]![3].subarray(16).equals(gzip.subarray(16))).toBe(true);
  });

  it("sends a large stored batch by reference: the socket gets its bytes as read, the stored copy is not patched", async () => {
    const big = recs.map((r) => ({ ...r, value: Buffer.alloc(3 * 1024, 7) }));
    const none = await sentBatch("none", big);
    const before = Buffer.from(none);
    const got = split(await fetchOf(undefined, [stored(none, "none", 10n)], 13n));
    expect(got.map(([o, d, c]) => [o, d, c])).toEqual([[10n, 2, 0]]);
    expect(got[0]![3].equals(Buffer.concat([got[0]![3].subarray(0, 16), none.subarray(16)]))).toBe(
      true,
    );
    const pieces = lastBody!;
    expect(Buffer.isBuffer(pieces)).toBe(false);
    const byReference = (pieces as readonly Uint8Array[]).filter(
      (p) => p.buffer === none.buffer && p.byteOffset === none.byteOffset + 16,
    );
    expect(byReference).toHaveLength(1);
    expect(none.equals(before)).toBe(true); // base offset 10 went into a copy of the head
    expect((await decodeBatches(got[0]![3]))[0]!.records).toHaveLength(3);
  });
});
