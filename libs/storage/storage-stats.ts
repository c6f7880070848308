// Counters of the segment files of one process, read by the broker's metrics at scrape time
// (plain numbers: no metrics library in the storage code, no cost on the append path).
export class StorageStats {
  /** fdatasync calls on segment files (at snapshots and segment rolls). */
  fsyncs = 0;
  /** Record bytes appended to segment files. */
  appendedBytes = 0;
  /** Bytes read from segment files (fetches of older data, read-ahead for followers). */
  readBytes = 0;
  /** Segments removed by retention. */
  segmentsRemoved = 0;
  /** Segments found damaged (a record failing its checksum, or cut short), by a read or a scrub. */
  segmentsDamaged = 0;
  /** Damaged segments rewritten from a sound replica's records. */
  segmentsRepaired = 0;
}
