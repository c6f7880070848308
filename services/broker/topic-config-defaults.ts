// Every topic config key a broker acts on, with the value a topic without it gets: what Kafka's
// DescribeConfigs answers as DEFAULT_CONFIG (services/kafka/topic-admin-api.ts).
import { TOPIC_DEFAULTS } from "./broker-limits.js";
import { COMPACTION_CONFIG_DEFAULTS } from "./compaction-config.js";

export const TOPIC_CONFIG_DEFAULTS: ReadonlyMap<string, string> = new Map([
  ...Object.entries(TOPIC_DEFAULTS).map(([k, v]) => [k, String(v)] as const),
  ...Object.entries(COMPACTION_CONFIG_DEFAULTS),
  ["cleanup.policy", "delete"],
  ["compression.type", "producer"],
  ["message.timestamp.type", "CreateTime"],
]);
