// Every topic config key a broker acts on, with the value a topic without it gets: what Kafka's
// DescribeConfigs answers as DEFAULT_CONFIG (services/kafka/topic-admin-api.ts).
import { TOPIC_DEFAULTS } from "./broker-limits.js";

export const TOPIC_CONFIG_DEFAULTS: ReadonlyMap<string, string> = new Map([
  ...Object.entries(TOPIC_DEFAULTS).map(([k, v]) => [k, String(v)] as const),
  ["cleanup.policy", "delete"],
  ["compression.type", "producer"],
]);
