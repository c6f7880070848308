// What the cleaner sees of a partition's entries (docs/storage.md, "Compaction"): a kafka-batch
// entry (cleaned before or not) is keyed records at its offsets, rewritten as a
// cleaned-kafka-batch entry with the same entry header and guard and the batch's kept records
// (libs/records/batch-filter.ts); a transactional one says whether its transaction was aborted
// (the aborted-transaction index); a marker can be rewritten as a removed marker (entry kind 7:
// applied the same, never read). Everything else is kept as it is: ticks, DeleteRecords,
// configuration changes, entries that took no offset, and batches an older build stored decoded
// (kind 1, read for ever and never rewritten: "Upgrade"; a transactional one stops the clean).
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

/** aborted: whether a transactional batch of the producer at that base offset was aborted. */
export function partitionCompactionCodec(
  aborted: (producerId: bigint, baseOffset: bigint) => boolean,
): CompactionCodec {
  return {
    async content(r: LogRecord): Promise<CleanableContent> {
      if (r.offsetCount === 0 || r.entryType !== EntryType.Normal || r.data.byteLength === 0)
        return OTHER;
      const entry = decodeEntry(r.data, true);
      if (entry.kind === "marker")
        return {
          kind: "marker",
          producerId: entry.producerId,
          removed: entry.removed === true,
          remove: () => Promise.resolve(encodeEntry({ ...entry, removed: true })),
        };
      if (entry.kind === "batch") return entry.isTransactional ? TRANSACTIONAL : OTHER;
      if (entry.kind !== "kafka-batch") return OTHER;
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
        ...(entry.isTransactional
          ? {
              transaction: {
                producerId: entry.producerId,
                aborted: aborted(entry.producerId, r.baseOffset),
              },
            }
          : {}),
        async rewrite(keep) {
          const cleaned = await filteredBatch(entry.batch, batch, keep);
          // The same header and guard: apply of the cleaned entry reaches the same state.
          return encodeEntry(kafkaBatchEntry(entry.header, cleaned, entry.txnGuard, true));
        },
      };
    },
  };
}
