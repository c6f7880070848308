// Controller-only settings that ServiceConfig does not carry, from TERN_* environment
// variables, validated at start with one-line reasons (same style as libs/common/config.ts).
import { ConfigError } from "../../libs/common/config.js";
import { OFFSETS_PARTITIONS_DEFAULT, TXN_LOG_PARTITIONS_DEFAULT } from "../../libs/common/hash.js";
import type { InternalTopicSpec } from "./command-codec.js";
import { CONSUMER_OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC } from "../../libs/metadata/types.js";

export interface ControllerSettings {
  /** How long a node stays alive without a heartbeat. */
  readonly nodeLeaseMs: number;
  /** How long a node stays dead before its replicas move to live nodes. */
  readonly replaceDeadAfterMs: number;
  /** Period of the leader's liveness / bootstrap / re-placement check. */
  readonly livenessCheckMs: number;
  /** Keepalive period of WatchMetadata streams. */
  readonly watchKeepaliveMs: number;
  /** Upper bound on concurrent WatchMetadata streams per controller. */
  readonly watchSubscribersMax: number;
  /** Bound on a proposal's wait for commit. */
  readonly proposeTimeoutMs: number;
  readonly internalTopics: readonly InternalTopicSpec[];
}

function intFromEnv(
  env: NodeJS.ProcessEnv,
  name: string,
  fallback: number,
  min: number,
  max: number,
): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (!/^\d+$/.test(raw.trim()))
    throw new ConfigError(`${name}: expected an integer, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(`${name}: ${n} is outside ${min}..${max}`);
  return n;
}

export function loadControllerSettings(env: NodeJS.ProcessEnv = process.env): ControllerSettings {
  const nodeLeaseMs = intFromEnv(env, "TERN_NODE_LEASE_MS", 6_000, 500, 600_000);
  return {
    nodeLeaseMs,
    replaceDeadAfterMs: intFromEnv(env, "TERN_REPLACE_DEAD_AFTER_MS", 30_000, 0, 86_400_000),
    livenessCheckMs: intFromEnv(env, "TERN_LIVENESS_CHECK_MS", 500, 50, 60_000),
    watchKeepaliveMs: intFromEnv(env, "TERN_WATCH_KEEPALIVE_MS", 3_000, 100, 60_000),
    watchSubscribersMax: intFromEnv(env, "TERN_WATCH_SUBSCRIBERS_MAX", 1_000, 1, 100_000),
    proposeTimeoutMs: intFromEnv(env, "TERN_CONTROLLER_PROPOSE_TIMEOUT_MS", 5_000, 100, 120_000),
    internalTopics: [
      {
        name: TRANSACTION_STATE_TOPIC,
        role: "coordinator",
        partitions: intFromEnv(
          env,
          "TERN_TXN_STATE_PARTITIONS",
          TXN_LOG_PARTITIONS_DEFAULT,
          1,
          1000,
        ),
        replicationFactor: intFromEnv(env, "TERN_TXN_STATE_REPLICATION_FACTOR", 3, 1, 16),
      },
      {
        name: CONSUMER_OFFSETS_TOPIC,
        role: "broker",
        partitions: intFromEnv(env, "TERN_OFFSETS_PARTITIONS", OFFSETS_PARTITIONS_DEFAULT, 1, 1000),
        replicationFactor: intFromEnv(env, "TERN_OFFSETS_REPLICATION_FACTOR", 3, 1, 16),
      },
    ],
  };
}
