// The v2 batch a partition stores for a batch whose producer did not build one (gRPC's simple
// form, simple-batch.ts; a Kafka batch too large to keep as sent): built once, at propose,
// when the entry's append time is known.
import type { RecordData } from "../partition-entry.js";
import { batchBytes, type CompressedSection } from "../../kafka/record-batch.js";

/** What a batch built here is stored with: its producer fields (checked by produce.ts) and records. */
export interface RecordsToStore {
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly baseSequence: number;
  readonly isTransactional: boolean;
  readonly records: readonly RecordData[];
  /** The records section as it came compressed (gRPC's compressed_records), stored so. */
  readonly compressed?: CompressedSection | undefined;
}

/**
 * The v2 batch records are stored as. Records the producer left without a timestamp
 * get the entry's append time now, since the stored batch carries every timestamp (a compressed
 * section with such a record is stored re-encoded, uncompressed). A plain producer's epoch and
 * sequence are kept when the batch format can hold them.
 */
export function batchToStore(b: RecordsToStore, appendTimeMs: number): Buffer {
  const unstamped = b.records.some((r) => !(r.timestampMs > 0));
  const records = unstamped
    ? b.records.map((r) => (r.timestampMs > 0 ? r : { ...r, timestampMs: appendTimeMs }))
    : b.records;
  const epoch = b.producerEpoch >= -32768 && b.producerEpoch <= 32767 ? b.producerEpoch : -1;
  return batchBytes(
    {
      producerId: b.producerId,
      producerEpoch: epoch,
      baseSequence: b.baseSequence,
      isTransactional: b.isTransactional,
      records,
    },
    unstamped ? undefined : b.compressed,
  );
}
