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
    producedRecords: new Counter({
      name: "tern_broker_produced_records_total",
      help: "Records appended by produce on partitions this broker leads.",
      labelNames: ["topic"],
      registers,
    }),
    producedBytes: new Counter({
      name: "tern_broker_produced_bytes_total",
      help: "Record bytes appended by produce on partitions this broker leads.",
      labelNames: ["topic"],
      registers,
    }),
    produceErrors: new Counter({
      name: "tern_broker_produce_errors_total",
      help: "Produce partition results with an error, by code.",
      labelNames: ["code"],
      registers,
    }),
    fetchedBytes: new Counter({
      name: "tern_broker_fetched_bytes_total",
      help: "Record bytes returned by fetch.",
      labelNames: ["isolation"],
      registers,
    }),
    fetchWaiters: new Gauge({
      name: "tern_broker_fetch_waiters",
      help: "Fetch requests parked in a long-poll.",
      registers,
    }),
    markersWritten: new Counter({
      name: "tern_broker_txn_markers_total",
      help: "Transaction markers handled, by control type and result code.",
      labelNames: ["type", "code"],
      registers,
    }),
  };
}

/** Registers counters whose value is read, when scraped, from a plain running total. */
export function counterReading(
  registry: Registry,
): (name: string, help: string, read: () => number) => void {
  return (name, help, read) => {
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        this.reset();
        this.inc(read());
      },
    });
  };
}

/** Segment-file figures, read from the storage's plain counters when scraped. */
export function storageMetrics(registry: Registry, stats: StorageStats, cache: RecordCache): void {
  const registers = [registry];
  const total = counterReading(registry);
  total(
    "tern_segment_fsyncs_total",
    "fdatasync calls on partition segment files.",
    () => stats.fsyncs,
  );
  total(
    "tern_segment_appended_bytes_total",
    "Bytes appended to partition segment files.",
    () => stats.appendedBytes,
  );
  total(
    "tern_segment_read_bytes_total",
    "Bytes read from partition segment files (older fetches, follower read-ahead).",
    () => stats.readBytes,
  );
  total(
    "tern_segment_removed_total",
    "Segments removed by retention.",
    () => stats.segmentsRemoved,
  );
  total(
    "tern_segment_damaged_total",
    "Segments found damaged (a record failing its checksum, or cut short) by a read or a scrub: never served.",
    () => stats.segmentsDamaged,
  );
  total(
    "tern_segment_repaired_total",
    "Damaged segments made whole again: rewritten from another replica's records, or (cut at open) applied again from the Raft log.",
    () => stats.segmentsRepaired,
  );
  new Gauge({
    name: "tern_record_cache_bytes",
    help: "Bytes held by the record cache (bounded by --record-cache-bytes).",
    registers,
    collect() {
      this.set(cache.usedBytes());
    },
  });
}

/** What the partition gauges read from each local replica. */
export interface PartitionGaugeSource {
  readonly topic: string;
  readonly partition: number;
  readonly group: { isLeader(): boolean };
  readonly stateMachine: {
    highWatermark(): bigint;
    lastStableOffset(): bigint;
    logStartOffset(): bigint;
  };
}

/**
 * Offsets of every partition this broker leads, read when scraped (labels topic and partition:
 * bounded by the partitions of the cluster, as Kafka's per-partition LogEndOffset is). Only the
 * leader reports a partition, so sum by (topic) counts each once; consumer lag is
 * high watermark minus committed offset, a hanging transaction is a high watermark minus LSO
 * gap that does not close.
 */
export function partitionMetrics(
  registry: Registry,
  locals: () => Iterable<PartitionGaugeSource>,
): void {
  const registers = [registry];
  const gauge = (
    name: string,
    help: string,
    read: (s: PartitionGaugeSource["stateMachine"]) => bigint,
  ): void => {
    new Gauge({
      name,
      help,
      labelNames: ["topic", "partition"],
      registers,
      collect() {
        this.reset();
        for (const p of locals())
          if (p.group.isLeader())
            this.set(
              { topic: p.topic, partition: String(p.partition) },
              Number(read(p.stateMachine)),
            );
      },
    });
  };
  gauge(
    "tern_partition_high_watermark",
    "Next offset to be written (the high watermark: every applied record is committed), on the partition's leader.",
    (s) => s.highWatermark(),
  );
  gauge(
    "tern_partition_last_stable_offset",
    "First offset of the earliest open transaction, or the high watermark, on the partition's leader.",
    (s) => s.lastStableOffset(),
  );
  gauge(
    "tern_partition_log_start_offset",
    "First offset still retained, on the partition's leader.",
    (s) => s.logStartOffset(),
  );
}

/** Free space of the data directory against --disk-reserve-bytes (the disk-reserve alert). */
export function diskMetrics(
  registry: Registry,
  disk: { readonly reserveBytes: number; free(): number; belowReserve(): boolean },
): void {
  const registers = [registry];
  new Gauge({
    name: "tern_broker_disk_free_bytes",
    help: "Free bytes in --data-dir at the last check (-1 before the first, or with the check off).",
    registers,
    collect() {
      const f = disk.free();
      this.set(Number.isFinite(f) ? f : -1);
    },
  });
  new Gauge({
    name: "tern_broker_disk_reserve_bytes",
    help: "--disk-reserve-bytes (0: the check is off).",
    registers,
    collect() {
      this.set(disk.reserveBytes);
    },
  });
  new Gauge({
    name: "tern_broker_disk_below_reserve",
    help: "1 while free space is below the reserve and produce is refused with KAFKA_STORAGE_ERROR.",
    registers,
    collect() {
      this.set(disk.belowReserve() ? 1 : 0);
    },
  });
}
