// What the cleaner needs to know of a segment record's payload, given by the log's owner (the
// partition's entries: services/broker/compaction-codec.ts). libs/storage keeps records as bytes;
// only the owner knows which of them are keyed records and how to rewrite an entry with fewer.
import type { LogRecord } from "./log-record.js";

/** A record inside an entry, as the cleaner weighs it. */
export interface KeyedRecord {
  readonly offset: bigint;
  /** null: no key (kept). */
  readonly key: Uint8Array | null;
  /** A null value: a delete (docs/storage.md, "Tombstones and delete.retention.ms"). */
  readonly tombstone: boolean;
}

export type CleanableContent =
  /** Nothing a clean removes (a tick, a configuration change, a record that took no offset, ...). */
  | { readonly kind: "other" }
  /** A transactional batch the owner cannot rewrite (an older build's format): the clean stops. */
  | { readonly kind: "transactional" }
  | {
      readonly kind: "records";
      readonly records: readonly KeyedRecord[];
      /** Set for a transactional batch (every one below the stable offset is decided). */
      readonly transaction?: { readonly producerId: bigint; readonly aborted: boolean };
      /** The entry's bytes with only the records where keep[i]; its offsets and state unchanged. */
      rewrite(keep: readonly boolean[]): Promise<Uint8Array>;
    }
  /** A transaction marker: it ends the producer's transaction (the batches before it). */
  | {
      readonly kind: "marker";
      readonly producerId: bigint;
      /** Already removed from reads by an earlier clean. */
      readonly removed: boolean;
      /** The entry as a removed marker: not read any more, the same at apply. */
      remove(): Promise<Uint8Array>;
    };

export interface CompactionCodec {
  content(r: LogRecord): Promise<CleanableContent>;
}
