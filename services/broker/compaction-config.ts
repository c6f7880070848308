// A topic's compaction settings (Kafka's names, meanings and defaults; docs/storage.md,
// "Compaction"), parsed once per config change. The controller checked the values
// (services/controller/topic-rules.ts, rules version 5); a value that does not parse here falls
// back to its default.

/** Kafka's defaults for the compaction keys, as DescribeConfigs shows them. */
export const COMPACTION_CONFIG_DEFAULTS = {
  "min.cleanable.dirty.ratio": "0.5",
  "min.compaction.lag.ms": "0",
  "max.compaction.lag.ms": "9223372036854775807",
  "delete.retention.ms": String(24 * 3600 * 1000),
} as const;

export interface CompactionConfig {
  /** cleanup.policy holds compact: the cleaner keeps the latest record per key. */
  readonly compact: boolean;
  /** cleanup.policy holds delete: retention.ms and retention.bytes apply. */
  readonly delete: boolean;
  readonly minCleanableDirtyRatio: number;
  readonly minCompactionLagMs: number;
  /** Number.MAX_SAFE_INTEGER when unlimited (Kafka's Long.MAX_VALUE). */
  readonly maxCompactionLagMs: number;
  readonly deleteRetentionMs: number;
}

export function compactionConfig(config: Record<string, string> | undefined): CompactionConfig {
  const policies = (config?.["cleanup.policy"] ?? "delete").split(",").map((p) => p.trim());
  const number = (key: keyof typeof COMPACTION_CONFIG_DEFAULTS, integer: boolean): number => {
    const raw = config?.[key];
    const parsed = raw === undefined ? NaN : Number(raw);
    const value =
      Number.isFinite(parsed) && parsed >= 0 && (!integer || Number.isInteger(parsed))
        ? parsed
        : Number(COMPACTION_CONFIG_DEFAULTS[key]);
    return Math.min(value, Number.MAX_SAFE_INTEGER);
  };
  return {
    compact: policies.includes("compact"),
    delete: policies.includes("delete"),
    minCleanableDirtyRatio: number("min.cleanable.dirty.ratio", false),
    minCompactionLagMs: number("min.compaction.lag.ms", true),
    maxCompactionLagMs: number("max.compaction.lag.ms", true),
    deleteRetentionMs: number("delete.retention.ms", true),
  };
}
