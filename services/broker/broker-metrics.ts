// Prometheus metrics of the broker data plane (registered in the process registry).
import { Counter, Gauge, type Registry } from "prom-client";
import type { RecordCache } from "../../libs/storage/record-cache.js";
import type { StorageStats } from "../../libs/storage/storage-stats.js";

export interface BrokerMetrics {
  readonly producedRecords: Counter<"topic">;
  readonly producedBytes: Counter<"topic">;
  readonly produceErrors: Counter<"code">;
  readonly fetchedBytes: Counter<"isolation">;
  readonly fetchWaiters: Gauge;
  readonly markersWritten: Counter<"type" | "code">;
}

export function brokerMetrics(registry: Registry): BrokerMetrics {
  const registers = [registry];
  return {
    producedRecords: new Counter({ name: "tern_broker_produced_records_total", help: "Records appended by produce on partitions this broker leads.", labelNames: ["topic"], registers }),
    producedBytes: new Counter({ name: "tern_broker_produced_bytes_total", help: "Record bytes appended by produce on partitions this broker leads.", labelNames: ["topic"], registers }),
    produceErrors: new Counter({ name: "tern_broker_produce_errors_total", help: "Produce partition results with an error, by code.", labelNames: ["code"], registers }),
    fetchedBytes: new Counter({ name: "tern_broker_fetched_bytes_total", help: "Record bytes returned by fetch.", labelNames: ["isolation"], registers }),
    fetchWaiters: new Gauge({ name: "tern_broker_fetch_waiters", help: "Fetch requests parked in a long-poll.", registers }),
    markersWritten: new Counter({ name: "tern_broker_txn_markers_total", help: "Transaction markers handled, by control type and result code.", labelNames: ["type", "code"], registers }),
  };
}

/** Segment-file figures, read from the storage's plain counters when scraped. */
export function storageMetrics(registry: Registry, stats: StorageStats, cache: RecordCache): void {
  const registers = [registry];
  const total = (name: string, help: string, read: () => number): void => {
    new Counter({ name, help, registers, collect() { this.reset(); this.inc(read()); } });
  };
  total("tern_segment_fsyncs_total", "fdatasync calls on partition segment files.", () => stats.fsyncs);
  total("tern_segment_appended_bytes_total", "Bytes appended to partition segment files.", () => stats.appendedBytes);
  total("tern_segment_read_bytes_total", "Bytes read from partition segment files (older fetches, follower read-ahead).", () => stats.readBytes);
  total("tern_segment_removed_total", "Segments removed by retention.", () => stats.segmentsRemoved);
  new Gauge({ name: "tern_record_cache_bytes", help: "Bytes held by the record cache (bounded by --record-cache-bytes).", registers, collect() { this.set(cache.usedBytes()); } });
}
