// Changes to an existing topic (pure): an incremental config change (Kafka's
// IncrementalAlterConfigs with SET and DELETE ops) and a partition-count increase (Kafka's
// CreatePartitions). Both are checked here, then applied by the metadata state machine; the
// brokers pick them up from metadata on every replica (docs/operations.md, "Topic administration").
import {
  checkPartitionCount,
  checkTopicConfig,
  knownTopicConfigKeys,
  type RuleViolation,
} from "./topic-rules.js";

/** Config keys changed per request at most (set + delete). */
export const CONFIG_OPS_PER_TOPIC_MAX = 64;

export interface ConfigAlteration {
  readonly name: string;
  /** key -> new value. */
  readonly set: Record<string, string>;
  /** Keys to remove (back to the broker default). */
  readonly delete: readonly string[];
}

export interface PartitionIncrease {
  readonly name: string;
  /** The partition count wanted, larger than today's. */
  readonly totalCount: number;
}

/** The topic's config after the change, or why it is refused (the whole change, never part of it). */
export function alteredConfig(
  current: Record<string, string>,
  change: ConfigAlteration,
  replicationFactor: number,
  rulesVersion: number,
): { config: Record<string, string> } | { violation: RuleViolation } {
  const set = typeof change.set === "object" && change.set !== null ? change.set : {};
  const del = Array.isArray(change.delete) ? change.delete : [];
  const ops = Object.keys(set).length + del.length;
  if (ops === 0)
    return {
      violation: {
        error: "INVALID_REQUEST",
        message: "no config change given (set or delete at least one key)",
      },
    };
  if (ops > CONFIG_OPS_PER_TOPIC_MAX)
    return {
      violation: {
        error: "INVALID_REQUEST",
        message: `${ops} config changes in one request; the limit is ${CONFIG_OPS_PER_TOPIC_MAX}`,
      },
    };
  const both = del.filter((k) => Object.hasOwn(set, k));
  if (both.length > 0)
    return {
      violation: {
        error: "INVALID_REQUEST",
        message: `config key ${both[0]} is both set and deleted`,
      },
    };
  const config: Record<string, string> = { ...current };
  for (const [k, v] of Object.entries(set)) config[k] = v;
  for (const k of del) delete config[k];
  // Deleting a key the topic does not carry is a no-op (as in Kafka); an unknown key is not.
  const known = knownTopicConfigKeys(rulesVersion);
  const unknown = del.find((k) => typeof k !== "string" || !known.includes(k));
  if (unknown !== undefined)
    return {
      violation: {
        error: "INVALID_CONFIG",
        message: `unknown topic config "${String(unknown)}"; known: ${known.join(", ")}`,
      },
    };
  const violation = checkTopicConfig(config, replicationFactor, rulesVersion);
  return violation ? { violation } : { config };
}

export function checkPartitionIncrease(
  currentCount: number,
  totalCount: unknown,
): RuleViolation | undefined {
  const bad = checkPartitionCount(totalCount);
  if (bad) return bad;
  if ((totalCount as number) <= currentCount) {
    return {
      error: "INVALID_PARTITIONS",
      message: `the topic has ${currentCount} partitions; the new count must be larger (partitions cannot be removed)`,
    };
  }
  return undefined;
}
