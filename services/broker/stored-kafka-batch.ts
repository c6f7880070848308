// The records of a stored v2 batch (partition-entry.ts, kind "kafka-batch"), for the readers
// that want records rather than the batch's bytes: a gRPC Fetch with decode_records (the gRPC
// edge's simple form) and ListOffsets by time. A compressed batch is inflated in the thread
// pool, bounded as the produce path bounds it; the leader decoded these same bytes before
// proposing them, so a failure here means the stored bytes were damaged (CORRUPT_MESSAGE, never
// served).
import { TernError } from "../../libs/common/errors.js";
import { AT_BASE_TIMESTAMP, BATCH_HEADER_BYTES } from "../../libs/records/batch-header.js";
import { decompress } from "../../libs/records/compression.js";
import { KafkaReader } from "../../libs/records/kafka-codec.js";
import { decodeRecordsSection } from "../../libs/records/records-section.js";
import { INFLATED_BYTES_MAX } from "./broker-limits.js";
import type { KafkaBatchEntry, RecordData } from "./partition-entry.js";
import { isDecodeError } from "../../libs/common/decode-error.js";

/** offsetDeltas, when given, gets each record's offset delta (a cleaned batch has gaps). */
export async function storedBatchRecords(
  e: Pick<KafkaBatchEntry, "batch" | "codec" | "recordCount">,
  offsetDeltas?: number[],
): Promise<RecordData[]> {
  const bytes = Buffer.from(e.batch.buffer, e.batch.byteOffset, e.batch.byteLength);
  const baseTimestamp = Number(bytes.readBigInt64BE(AT_BASE_TIMESTAMP));
  try {
    const section =
      e.codec === "none"
        ? new KafkaReader(bytes, BATCH_HEADER_BYTES)
        : new KafkaReader(
            await decompress(e.codec, bytes.subarray(BATCH_HEADER_BYTES), INFLATED_BYTES_MAX),
          );
    return decodeRecordsSection(section, e.recordCount, baseTimestamp, undefined, offsetDeltas);
  } catch (err) {
    if (isDecodeError(err, "compression") || isDecodeError(err, "kafka"))
      throw new TernError("CORRUPT_MESSAGE", `stored ${e.codec} Kafka batch: ${err.message}`);
    throw err;
  }
}
