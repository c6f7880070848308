// Prometheus metrics of the broker data plane (registered in the process registry).
import { Counter, Gauge, type Registry } from "prom-client";

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
