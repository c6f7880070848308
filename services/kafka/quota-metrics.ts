// Throttling metrics of the Kafka listener's client quotas (quota-manager.ts): how often and how
// long requests were throttled, by quota type and principal. The principal label is bounded:
// the first PRINCIPAL_SERIES_MAX principals throttled get their own series, any later one is
// counted as "other" (a client cannot grow the registry by inventing users or client ids).
import { Histogram, type Registry } from "prom-client";
import type { QuotaType } from "./quota-type.js";

export const PRINCIPAL_SERIES_MAX = 100;

export interface QuotaMetrics {
  throttled(type: QuotaType, principal: string, throttleMs: number): void;
}

export function quotaMetrics(registry: Registry | undefined): QuotaMetrics | undefined {
  if (registry === undefined) return undefined;
  const existing = registry.getSingleMetric("tern_kafka_quota_throttle_ms");
  const histogram =
    (existing as Histogram<"quota" | "principal"> | undefined) ??
    new Histogram({
      name: "tern_kafka_quota_throttle_ms",
      help: "Throttle times of requests over a client quota (ms), by quota (produce, fetch, request) and principal (bounded; later ones are 'other').",
      labelNames: ["quota", "principal"],
      buckets: [1, 10, 50, 100, 500, 1_000, 5_000, 30_000],
      registers: [registry],
    });
  const named = new Set<string>();
  return {
    throttled(type, principal, throttleMs) {
      let label = principal;
      if (!named.has(principal)) {
        if (named.size < PRINCIPAL_SERIES_MAX) named.add(principal);
        else label = "other";
      }
      histogram.observe({ quota: type, principal: label }, throttleMs);
    },
  };
}
