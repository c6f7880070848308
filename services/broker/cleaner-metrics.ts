// The log cleaner's metrics (docs/storage.md, "Compaction"), read from its plain counters when
// scraped: bytes read and written, cleans and skips, the key map's fill and the cleaner lag.
import { Counter, Gauge, type Registry } from "prom-client";
import type { PartitionCleaner } from "./partition-cleaner.js";
import { counterReading } from "./broker-metrics.js";

export function cleanerMetrics(registry: Registry, cleaner: PartitionCleaner): void {
  const registers = [registry];
  const s = cleaner.stats;
  const total = counterReading(registry);
  total(
    "tern_log_cleaner_bytes_read_total",
    "Bytes of segments the log cleaner read (maps and rewrites).",
    () => s.bytesRead,
  );
  total(
    "tern_log_cleaner_bytes_written_total",
    "Bytes of cleaned segments and their indexes the log cleaner wrote.",
    () => s.bytesWritten,
  );
  total(
    "tern_log_cleaner_cleans_total",
    "Cleans of a partition replica completed.",
    () => s.cleans,
  );
  new Counter({
    name: "tern_log_cleaner_skipped_total",
    help: "Replicas the log cleaner chose and did not clean, by reason (transactional: an older build's transactional batch; map-full: one segment's keys overflow the key map; error: the clean failed).",
    labelNames: ["reason"],
    registers,
    collect() {
      this.reset();
      for (const [reason, n] of s.skipped) this.inc({ reason }, n);
    },
  });
  new Gauge({
    name: "tern_log_cleaner_map_utilisation",
    help: "How full the last clean left the key map (0-1 of its usable slots).",
    registers,
    collect() {
      this.set(s.mapUtilisation);
    },
  });
  new Gauge({
    name: "tern_log_cleaner_max_dirty_age_ms",
    help: "Cleaner lag: age of the oldest record not yet cleaned among compacted replicas (replicated clock).",
    registers,
    collect() {
      this.set(cleaner.maxDirtyAgeMs());
    },
  });
}
