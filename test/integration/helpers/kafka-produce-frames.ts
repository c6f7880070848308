// Produce request frames built byte by byte for tests that attack the Kafka listener: a record
// batch v2 (optionally gzip-compressed, so the broker inflates it in the thread pool) inside a
// Produce v3 request, and the same request cut short.
import { compress, type CompressionCodec } from "../../../libs/records/compression.js";
import { KafkaWriter } from "../../../libs/records/kafka-codec.js";
import { encodeBatch, recordsSection } from "../../../services/kafka/record-batch.js";
import { kafkaRequest } from "./kafka-raw-client.js";

const PRODUCE = 0;
const PRODUCE_VERSION = 3;

/** One batch of `count` records of `valueBytes` bytes each (one letter repeated: they compress well), compressed with `codec`. */
export async function recordBatch(
  count: number,
  valueBytes: number,
  codec: CompressionCodec = "none",
): Promise<Buffer> {
  const now = Date.now();
  const batch = {
    baseOffset: 0n,
    producerId: -1n,
    producerEpoch: -1,
    baseSequence: -1,
    isTransactional: false,
    records: Array.from({ length: count }, (_, i) => ({
      key: Buffer.from(`k${i}`),
      value: Buffer.alloc(valueBytes, 0x61 + (i % 26)),
      headers: [],
      timestampMs: now,
    })),
  };
  const w = new KafkaWriter(1024);
  if (codec === "none") encodeBatch(w, batch);
  else encodeBatch(w, batch, { codec, section: await compress(codec, recordsSection(batch)) });
  return Buffer.from(w.finish());
}

/** A Produce v3 request (acks 1) of one batch to topic/partition 0. */
export function produceRequest(correlationId: number, topic: string, batch: Buffer): Buffer {
  return kafkaRequest(PRODUCE, PRODUCE_VERSION, correlationId, (w: KafkaWriter) => {
    w.nullableString(null).int16(1).int32(10_000);
    w.int32(1).string(topic);
    w.int32(1).int32(0).int32(batch.byteLength).raw(batch);
  });
}

/**
 * The same request with its body cut `cut` bytes short, the frame's size prefix fixed to
 * match: a well-framed request whose body ends early (the decoder's "frame ends N bytes early").
 */
export function truncatedRequest(frame: Buffer, cut: number): Buffer {
  const out = Buffer.from(frame.subarray(0, frame.byteLength - cut));
  out.writeInt32BE(out.byteLength - 4, 0);
  return out;
}

/** A batch whose records section is `section` as given (a codec's stream, valid or not), declaring `count` records. */
export function batchWithSection(codec: CompressionCodec, section: Buffer, count = 1): Buffer {
  const w = new KafkaWriter(section.byteLength + 128);
  encodeBatch(
    w,
    {
      baseOffset: 0n,
      producerId: -1n,
      producerEpoch: -1,
      baseSequence: -1,
      isTransactional: false,
      records: Array.from({ length: count }, () => ({
        key: null,
        value: null,
        headers: [],
        timestampMs: Date.now(),
      })),
    },
    { codec, section },
  );
  return Buffer.from(w.finish());
}
