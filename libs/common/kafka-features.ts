// The Kafka features (KIP-584) the Kafka listeners support and finalize, one row each: ApiVersions
// v3+ answers the ranges as SupportedFeatures and the levels as FinalizedFeatures
// (services/kafka/api-versions.ts), and a Java client picks protocols by the finalized levels
// (transaction.version 2: transactions V2). A feature is added here with the levels tern serves
// completely; `--kafka-features NAME=LEVEL,...` (given alike to every process of the cluster,
// docs/decisions.md) finalizes a lower level than the default.
export interface KafkaFeature {
  /** Kafka's feature name. */
  readonly name: string;
  /** The supported range (SupportedFeatures); a level outside it cannot be finalized. */
  readonly minVersion: number;
  readonly maxVersion: number;
  /** The level finalized when the cluster's settings name none. */
  readonly defaultLevel: number;
}

export const KAFKA_FEATURES: readonly KafkaFeature[] = [
  // KIP-890: 1 = part 1 (produce verification, which tern always does), 2 = transactions V2
  // (EndTxn v5 bumps the epoch, Produce v12 and TxnOffsetCommit v5 add implicitly).
  { name: "transaction.version", minVersion: 0, maxVersion: 2, defaultLevel: 2 },
];

/** Feature name → finalized level, for every row of KAFKA_FEATURES. */
export type KafkaFeatureLevels = ReadonlyMap<string, number>;

export function defaultKafkaFeatureLevels(): KafkaFeatureLevels {
  return new Map(KAFKA_FEATURES.map((f) => [f.name, f.defaultLevel]));
}

/** `NAME=LEVEL,...` over the defaults; an unknown name or a level out of range: the reason. */
export function parseKafkaFeatureLevels(value: string): KafkaFeatureLevels | { error: string } {
  const levels = new Map(defaultKafkaFeatureLevels());
  for (const item of value.split(",").map((x) => x.trim())) {
    if (item === "") continue;
    const m = /^([a-z][a-z0-9._-]*)=(\d+)$/.exec(item);
    if (m === null) return { error: `expected NAME=LEVEL, got "${item}"` };
    const feature = KAFKA_FEATURES.find((f) => f.name === m[1]);
    if (feature === undefined)
      return {
        error: `unknown feature "${m[1]}" (known: ${KAFKA_FEATURES.map((f) => f.name).join(", ")})`,
      };
    const level = Number(m[2]);
    if (level < feature.minVersion || level > feature.maxVersion)
      return {
        error: `${feature.name}=${level} is outside ${feature.minVersion}..${feature.maxVersion}`,
      };
    levels.set(feature.name, level);
  }
  return levels;
}
