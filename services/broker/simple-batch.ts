// The gRPC edge of the one stored format. A partition stores every data batch as a Kafka record
// batch v2 (partition-entry.ts, kind "kafka-batch"); a gRPC producer that does not build batches
// itself sends the simple form (RecordBatch.records, or compressed_records: Kafka's records
// section compressed, with record_count and base_timestamp_ms), read here into the partition
// service's records (partition-service/produce.ts), which builds the v2 batch once, at propose
// (partition-service/batch-to-store.ts). A compressed section is inflated off the event loop
// (bounded) to be checked, and then stored as it came, inside a v2 header built around it.
import type { RecordData } from "./partition-entry.js";
import { decompress, isCodec, type CompressionCodec } from "../../libs/records/compression.js";
import { decodeRecordsSection, type SectionShape } from "../../libs/records/records-section.js";
import { KafkaReader } from "../../libs/records/kafka-codec.js";
import type { CompressedSection } from "../kafka/record-batch.js";
import { BROKER_LIMITS, INFLATED_BYTES_MAX } from "./broker-limits.js";
import type { RecordBatch__Output } from "../../libs/common/proto-types/index.js";
import { isDecodeError } from "../../libs/common/decode-error.js";

/** The codec of a wire batch's records, or "none" (proto-loader gives enum names). */
export function wireCompression(
  raw: Partial<RecordBatch__Output> | null | undefined,
): CompressionCodec | "unknown" {
  const c: unknown = raw?.compression;
  if (c === undefined || c === null || c === "COMPRESSION_NONE" || c === 0) return "none";
  if (typeof c !== "string" || !c.startsWith("COMPRESSION_")) return "unknown";
  const name = c.slice("COMPRESSION_".length).toLowerCase();
  return isCodec(name) ? name : "unknown";
}

/** compressed_records inflated: the records, and the section to store when it can stay compressed. */
export interface InflatedSection {
  readonly records: RecordData[];
  /** Undefined when the section's offset deltas are not 0, 1, ...: the records are stored re-encoded. */
  readonly section: CompressedSection | undefined;
}

/** The batch's records, or why they cannot be read (Kafka's error names). */
export async function inflateRecords(
  raw: Partial<RecordBatch__Output> | null | undefined,
  codec: CompressionCodec,
): Promise<
  | InflatedSection
  | { error: "CORRUPT_MESSAGE" | "INVALID_RECORD" | "RECORD_LIST_TOO_LARGE"; message: string }
> {
  const count = Number(raw?.recordCount ?? 0);
  const baseTimestamp = Number(raw?.baseTimestampMs ?? 0);
  const bytes: unknown = raw?.compressedRecords;
  if (!Buffer.isBuffer(bytes))
    return { error: "CORRUPT_MESSAGE", message: "compressed_records is not bytes" };
  if (!Number.isSafeInteger(count) || count <= 0)
    return { error: "INVALID_RECORD", message: `record_count ${count} of a compressed batch` };
  if (count > BROKER_LIMITS.recordsPerBatchMax)
    return {
      error: "RECORD_LIST_TOO_LARGE",
      message: `${count} records in one batch (max ${BROKER_LIMITS.recordsPerBatchMax})`,
    };
  if (!Number.isSafeInteger(baseTimestamp) || baseTimestamp < 0)
    return { error: "INVALID_RECORD", message: `base_timestamp_ms ${baseTimestamp}` };
  try {
    const plain = await decompress(codec, bytes, INFLATED_BYTES_MAX);
    const shape: SectionShape = { offsetDeltasInOrder: true };
    const records = decodeRecordsSection(new KafkaReader(plain), count, baseTimestamp, shape);
    return {
      records,
      section: shape.offsetDeltasInOrder
        ? { codec, section: bytes, baseTimestampMs: baseTimestamp }
        : undefined,
    };
  } catch (e) {
    if (isDecodeError(e, "compression") || isDecodeError(e, "kafka"))
      return { error: "CORRUPT_MESSAGE", message: `${codec} compressed_records: ${e.message}` };
    throw e;
  }
}
