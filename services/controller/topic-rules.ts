// Validation of topic names and topic configuration (pure). Kafka's rules for names; a small
// table of the configuration keys tern understands, each with a value check.
import type { ErrorName } from "../../libs/common/errors.js";

export const TOPIC_NAME_LENGTH_MAX = 249;
export const PARTITIONS_MAX = 10_000;
export const REPLICATION_FACTOR_MAX = 16;
export const TOPIC_CONFIG_ENTRIES_MAX = 64;
const TOPIC_NAME_PATTERN = /^[a-zA-Z0-9._-]+$/;

export interface RuleViolation {
  readonly error: ErrorName;
  readonly message: string;
}

/** Rules for any topic name; `internal` allows the reserved "__" prefix. */
export function checkTopicName(name: unknown, internal = false): RuleViolation | undefined {
  if (typeof name !== "string" || name.length === 0)
    return { error: "INVALID_TOPIC_EXCEPTION", message: "topic name is empty" };
  if (name.length > TOPIC_NAME_LENGTH_MAX) {
    return {
      error: "INVALID_TOPIC_EXCEPTION",
      message: `topic name is ${name.length} characters long; the limit is ${TOPIC_NAME_LENGTH_MAX}`,
    };
  }
  if (name === "." || name === "..")
    return { error: "INVALID_TOPIC_EXCEPTION", message: `topic name "${name}" is not allowed` };
  if (!TOPIC_NAME_PATTERN.test(name)) {
    return {
      error: "INVALID_TOPIC_EXCEPTION",
      message: `topic name "${name}" has characters outside [a-zA-Z0-9._-]`,
    };
  }
  if (!internal && name.startsWith("__")) {
    return {
      error: "INVALID_TOPIC_EXCEPTION",
      message: `topic name "${name}" starts with "__", which is reserved for internal topics`,
    };
  }
  return undefined;
}

const nonNegativeOrMinusOne = (v: string): boolean =>
  /^-?\d{1,19}$/.test(v) && (BigInt(v) >= 0n || v === "-1");
const positiveInt = (v: string): boolean =>
  /^\d{1,10}$/.test(v) && Number(v) >= 1 && Number(v) <= 2 ** 31 - 1;

type ConfigRule = { check: (v: string) => boolean; expect: string };

/** The configuration keys a topic may carry and what their values must look like (rules version 1). */
const CONFIG_RULES_V1: ReadonlyMap<string, ConfigRule> = new Map([
  [
    "retention.ms",
    { check: nonNegativeOrMinusOne, expect: "milliseconds >= 0, or -1 for unlimited" },
  ],
  ["retention.bytes", { check: nonNegativeOrMinusOne, expect: "bytes >= 0, or -1 for unlimited" }],
  ["max.message.bytes", { check: positiveInt, expect: "a positive integer" }],
  ["min.insync.replicas", { check: positiveInt, expect: "a positive integer" }],
  ["segment.ms", { check: positiveInt, expect: "a positive integer" }],
  [
    "cleanup.policy",
    { check: (v) => v === "delete", expect: '"delete" (compaction is not supported)' },
  ],
]);

/**
 * Version 2 adds producer.id.expiration.ms (the broker reads it: an idle producer's state is
 * dropped after this long) and bounds min.insync.replicas by the Raft majority.
 */
const CONFIG_RULES_V2: ReadonlyMap<string, ConfigRule> = new Map([
  ...CONFIG_RULES_V1,
  ["producer.id.expiration.ms", { check: positiveInt, expect: "milliseconds >= 1" }],
]);

/** Version 3 adds segment.bytes (records live in segment files; docs/storage.md). */
const segmentBytes = (v: string): boolean =>
  /^\d{1,10}$/.test(v) && Number(v) >= 1024 && Number(v) <= 2 ** 31 - 1;
const CONFIG_RULES_V3: ReadonlyMap<string, ConfigRule> = new Map([
  ...CONFIG_RULES_V2,
  ["segment.bytes", { check: segmentBytes, expect: "bytes from 1024 to 2147483647" }],
]);

/**
 * Version 4 adds compression.type (Kafka's values; what the Kafka listener answers fetches with,
 * docs/kafka-protocol.md).
 */
export const COMPRESSION_TYPES = [
  "producer",
  "uncompressed",
  "gzip",
  "snappy",
  "lz4",
  "zstd",
] as const;
const CONFIG_RULES_V4: ReadonlyMap<string, ConfigRule> = new Map([
  ...CONFIG_RULES_V3,
  [
    "compression.type",
    {
      check: (v) => (COMPRESSION_TYPES as readonly string[]).includes(v),
      expect: COMPRESSION_TYPES.join(", "),
    },
  ],
]);

/**
 * Version 5 adds compaction (docs/storage.md, "Compaction"): cleanup.policy takes compact and
 * compact,delete (Kafka's list, either order), with Kafka's cleaner settings.
 */
export const CLEANUP_POLICIES = ["delete", "compact", "compact,delete", "delete,compact"] as const;
const nonNegativeLong = (v: string): boolean => /^\d{1,19}$/.test(v) && BigInt(v) <= 2n ** 63n - 1n;
const positiveLong = (v: string): boolean => nonNegativeLong(v) && BigInt(v) >= 1n;
const ratio = (v: string): boolean =>
  /^(\d{1,3}(\.\d{0,15})?|\.\d{1,15})$/.test(v) && Number(v) <= 1;
const CONFIG_RULES_V5: ReadonlyMap<string, ConfigRule> = new Map([
  ...CONFIG_RULES_V4,
  [
    "cleanup.policy",
    {
      check: (v) => (CLEANUP_POLICIES as readonly string[]).includes(v),
      expect: CLEANUP_POLICIES.join(", "),
    },
  ],
  ["min.cleanable.dirty.ratio", { check: ratio, expect: "a number from 0 to 1" }],
  ["min.compaction.lag.ms", { check: nonNegativeLong, expect: "milliseconds >= 0" }],
  ["max.compaction.lag.ms", { check: positiveLong, expect: "milliseconds >= 1" }],
  ["delete.retention.ms", { check: nonNegativeLong, expect: "milliseconds >= 0" }],
]);

/**
 * Version 6 adds message.timestamp.type, which Kafka Streams sets on every internal topic it
 * creates. Only CreateTime: a broker keeps each batch's producer timestamps and never stamps
 * its own (LogAppendTime is refused rather than silently ignored).
 */
const CONFIG_RULES_V6: ReadonlyMap<string, ConfigRule> = new Map([
  ...CONFIG_RULES_V5,
  [
    "message.timestamp.type",
    { check: (v) => v === "CreateTime", expect: '"CreateTime" (LogAppendTime is not supported)' },
  ],
]);

function rulesOf(version: number): ReadonlyMap<string, ConfigRule> {
  return version >= 6
    ? CONFIG_RULES_V6
    : version >= 5
      ? CONFIG_RULES_V5
      : version >= 4
        ? CONFIG_RULES_V4
        : version >= 3
          ? CONFIG_RULES_V3
          : version >= 2
            ? CONFIG_RULES_V2
            : CONFIG_RULES_V1;
}

/**
 * The rules a leader checks new CreateTopics with. The version travels in the command, and
 * apply() checks each entry with the rules it was proposed under: a log replayed by a newer
 * controller decides exactly as it did when it was written.
 */
export const TOPIC_CONFIG_RULES_VERSION = 6;

/** Whether key is a topic config key under these rules (for deletes, which carry no value). */
export function knownTopicConfigKeys(
  rulesVersion: number = TOPIC_CONFIG_RULES_VERSION,
): readonly string[] {
  return [...rulesOf(rulesVersion).keys()];
}

export function checkTopicConfig(
  config: Record<string, string>,
  replicationFactor: number,
  rulesVersion: number = TOPIC_CONFIG_RULES_VERSION,
): RuleViolation | undefined {
  const rules = rulesOf(rulesVersion);
  const entries = Object.entries(config);
  if (entries.length > TOPIC_CONFIG_ENTRIES_MAX) {
    return {
      error: "INVALID_CONFIG",
      message: `${entries.length} config entries; the limit is ${TOPIC_CONFIG_ENTRIES_MAX}`,
    };
  }
  for (const [key, value] of entries) {
    const rule = rules.get(key);
    if (!rule)
      return {
        error: "INVALID_CONFIG",
        message: `unknown topic config "${key}"; known: ${[...rules.keys()].join(", ")}`,
      };
    if (typeof value !== "string" || !rule.check(value)) {
      return {
        error: "INVALID_CONFIG",
        message: `topic config ${key}="${String(value)}" is invalid: expected ${rule.expect}`,
      };
    }
  }
  const minLag = config["min.compaction.lag.ms"];
  const maxLag = config["max.compaction.lag.ms"];
  if (minLag !== undefined && maxLag !== undefined && BigInt(minLag) > BigInt(maxLag))
    return {
      error: "INVALID_CONFIG",
      message: `min.compaction.lag.ms=${minLag} is above max.compaction.lag.ms=${maxLag}`,
    };
  const minIsr = config["min.insync.replicas"];
  if (minIsr === undefined) return undefined;
  if (rulesVersion < 2) {
    return Number(minIsr) > replicationFactor
      ? {
          error: "INVALID_CONFIG",
          message: `min.insync.replicas=${minIsr} exceeds the replication factor ${replicationFactor}`,
        }
      : undefined;
  }
  // Every acks=all write commits on a Raft majority, so min.insync.replicas up to the majority
  // always holds; more than that cannot be promised (Raft does not wait for more): refuse it.
  const majority = raftMajority(replicationFactor);
  if (Number(minIsr) > majority) {
    return {
      error: "INVALID_CONFIG",
      message: `min.insync.replicas=${minIsr} cannot be honoured with replication factor ${replicationFactor}: an acks=all write commits once a Raft majority of ${majority} replica(s) has it, so the most it can be is ${majority}`,
    };
  }
  return undefined;
}

/** The replicas an acks=all write is on when it commits: a majority of the partition's Raft group. */
export function raftMajority(replicationFactor: number): number {
  return Math.floor(replicationFactor / 2) + 1;
}

export function checkPartitionCount(partitions: unknown): RuleViolation | undefined {
  if (
    typeof partitions !== "number" ||
    !Number.isInteger(partitions) ||
    partitions < 1 ||
    partitions > PARTITIONS_MAX
  ) {
    return {
      error: "INVALID_PARTITIONS",
      message: `partition count ${String(partitions)} is invalid: it must be 1..${PARTITIONS_MAX}`,
    };
  }
  return undefined;
}

export function checkReplicationFactor(
  rf: unknown,
  liveNodes: number,
  role: string,
): RuleViolation | undefined {
  if (typeof rf !== "number" || !Number.isInteger(rf) || rf < 1 || rf > REPLICATION_FACTOR_MAX) {
    return {
      error: "INVALID_REPLICATION_FACTOR",
      message: `replication factor ${String(rf)} is invalid: it must be 1..${REPLICATION_FACTOR_MAX}`,
    };
  }
  if (rf > liveNodes) {
    return {
      error: "INVALID_REPLICATION_FACTOR",
      message: `replication factor ${rf} exceeds the ${liveNodes} live ${role} node(s)`,
    };
  }
  return undefined;
}
