// What the cleaner sees of a partition's entries (docs/storage.md, "Compaction"): a kafka-batch
// entry (cleaned before or not) is keyed records at its offsets, rewritten as a
// cleaned-kafka-batch entry with the same entry header and guard and the batch's kept records
// (libs/records/batch-filter.ts); a transactional batch or a marker stops the clean (this build
// does not clean transactions); everything else is kept as it is: ticks, DeleteRecords,
// configuration changes, entries that took no offset, and batches an older build stored decoded
// (kind 1, read for ever and never rewritten: "Upgrade").
import { EntryType } from "../../libs/raft/types.js";
import { filterableBatch, filteredBatch } from "../../libs/records/batch-filter.js";
import { INFLATED_BYTES_MAX } from "../../libs/records/batch-reader.js";
import { isDecodeError } from "../../libs/common/decode-error.js";
import { TernError } from "../../libs/common/errors.js";
import type { CleanableContent, CompactionCodec } from "../../libs/storage/compaction-codec.js";
import type { LogRecord } from "../../libs/storage/log-record.js";
import { decodeEntry, encodeEntry, kafkaBatchEntry } from "./partition-entry.js";

const OTHER: CleanableContent = { kind: "other" };
const TRANSACTIONAL: CleanableContent = { kind: "transactional" };

export const PARTITION_COMPACTION_CODEC: CompactionCodec = {
  async content(r: LogRecord): Promise<CleanableContent> {
    if (r.offsetCount === 0 || r.entryType !== EntryType.Normal || r.data.byteLength === 0)
      return OTHER;
    const entry = decodeEntry(r.data, true);
    if (entry.kind === "marker") return TRANSACTIONAL;
    if (entry.kind !== "kafka-batch") return OTHER;
    if (entry.isTransactional) return TRANSACTIONAL;
    let batch;
    try {
      batch = await filterableBatch(entry.batch, INFLATED_BYTES_MAX);
    } catch (e) {
      // The leader checked these bytes before proposing them: damage, never served or rewritten.
      if (isDecodeError(e))
        throw new TernError(
          "CORRUPT_MESSAGE",
          `entry ${r.index}: stored Kafka batch: ${e.message}`,
        );
      throw e;
    }
    return {
      kind: "records",
      records: batch.records.map((rec) => ({
        offset: r.baseOffset + BigInt(rec.offsetDelta),
        key: rec.key,
        tombstone: rec.tombstone,
      })),
      async rewrite(keep) {
        const cleaned = await filteredBatch(entry.batch, batch, keep);
        // The same header and guard: apply of the cleaned entry reaches the same state.
        return encodeEntry(kafkaBatchEntry(entry.header, cleaned, entry.txnGuard, true));
      },
    };
  },
};
