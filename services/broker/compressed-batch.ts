// A produced batch whose records came compressed (RecordBatch.compression, set by a TypeScript
// Producer with its `compression` option): inflated off the event loop and decoded from
// Kafka's record layout into the same records an uncompressed batch carries, so everything
// after (validation, the entry, fetch) sees one form. Inflation is bounded.
import type { RecordData } from "./partition-entry.js";
import { decompress, isCodec, type CompressionCodec } from "../../libs/records/compression.js";
import { decodeRecordsSection } from "../../libs/records/records-section.js";
import { KafkaReader } from "../../libs/records/kafka-codec.js";
import { BROKER_LIMITS } from "./broker-limits.js";
import type { RecordBatch__Output } from "../../libs/common/proto-types/index.js";
import { isDecodeError } from "../../libs/common/decode-error.js";

/**
 * Inflated records may take at most this: twice the largest batch, room for the record framing
 * of Kafka's layout; validation then applies the real limits to the decoded records.
 */
export const INFLATED_BYTES_MAX = 2 * BROKER_LIMITS.batchBytesMax;

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

/** The batch's records, or why they cannot be read (Kafka's error names). */
export async function inflateRecords(
  raw: Partial<RecordBatch__Output> | null | undefined,
  codec: CompressionCodec,
): Promise<
  | RecordData[]
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
    return decodeRecordsSection(new KafkaReader(plain), count, baseTimestamp);
  } catch (e) {
    if (isDecodeError(e, "compression") || isDecodeError(e, "kafka"))
      return { error: "CORRUPT_MESSAGE", message: `${codec} compressed_records: ${e.message}` };
    throw e;
  }
}
