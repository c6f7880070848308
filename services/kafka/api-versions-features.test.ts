// ApiVersions v3+ features (KIP-584): SupportedFeatures, FinalizedFeaturesEpoch and
// FinalizedFeatures as tagged fields 0, 1 and 2, read back as a Java client reads them; v3 omits
// a supported feature whose min version is 0 (KAFKA-17011), a level 0 is not finalized; and the
// --kafka-features setting that lowers a level.
import { describe, expect, it } from "vitest";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { apiVersionsResponse, SUPPORTED } from "./api-versions.js";
import {
  defaultKafkaFeatureLevels,
  KAFKA_FEATURES,
  parseKafkaFeatureLevels,
} from "../../libs/common/kafka-features.js";
import { ConfigError, loadServiceConfig } from "../../libs/common/config.js";

interface Features {
  supported: Array<[string, number, number]>;
  epoch: bigint | undefined;
  finalized: Array<[string, number, number]>;
}

function answer(version: number, levels: ReadonlyMap<string, number>, epoch: bigint): Features {
  const req = new KafkaWriter(32)
    .compactNullableString("apache-kafka-java")
    .compactNullableString("4.4.0")
    .noTaggedFields()
    .finish();
  const r = new KafkaReader(
    apiVersionsResponse(version, new KafkaReader(req), SUPPORTED, { levels, epoch }),
  );
  expect(r.int16()).toBe(0);
  const table = r.compactArray((x) => {
    const e = [x.int16(), x.int16(), x.int16()];
    x.taggedFields();
    return e;
  });
  expect(table.length).toBe(SUPPORTED.size);
  expect(r.int32()).toBe(0);
  const out: Features = { supported: [], epoch: undefined, finalized: [] };
  const tags = r.uvarint();
  for (let i = 0; i < tags; i++) {
    const tag = r.uvarint();
    const f = new KafkaReader(r.bytesOf(r.uvarint()));
    if (tag === 0)
      out.supported = f.compactArray((x) => {
        const e: [string, number, number] = [x.compactString(), x.int16(), x.int16()];
        x.taggedFields();
        return e;
      });
    else if (tag === 1) out.epoch = f.int64();
    else if (tag === 2)
      out.finalized = f.compactArray((x) => {
        // Name, MaxVersionLevel, MinVersionLevel.
        const e: [string, number, number] = [x.compactString(), x.int16(), x.int16()];
        x.taggedFields();
        return e;
      });
    expect(f.remaining()).toBe(0);
  }
  expect(r.remaining()).toBe(0);
  return out;
}

describe("ApiVersions features", () => {
  it("v4 answers every supported feature and the finalized levels under the epoch", () => {
    const levels = new Map([["transaction.version", 2]]);
    const a = answer(4, levels, 42n);
    expect(a.supported).toEqual(KAFKA_FEATURES.map((f) => [f.name, f.minVersion, f.maxVersion]));
    expect(a.supported).toContainEqual(["transaction.version", 0, 2]);
    expect(a.epoch).toBe(42n);
    expect(a.finalized).toEqual([["transaction.version", 2, 2]]);
  });

  it("v3 omits supported features whose min version is 0, not the finalized ones", () => {
    const a = answer(3, new Map([["transaction.version", 2]]), 7n);
    expect(a.supported.find(([name]) => name === "transaction.version")).toBeUndefined();
    expect(a.finalized).toEqual([["transaction.version", 2, 2]]);
  });

  it("a level 0 is not finalized; an unknown metadata version answers epoch 0, never -1", () => {
    const a = answer(4, new Map([["transaction.version", 0]]), -1n);
    expect(a.finalized).toEqual([]);
    expect(a.epoch).toBe(0n);
  });

  it("--kafka-features lowers a level; unknown names and levels out of range stop the process", () => {
    expect(defaultKafkaFeatureLevels().get("transaction.version")).toBe(
      KAFKA_FEATURES.find((f) => f.name === "transaction.version")!.defaultLevel,
    );
    expect(parseKafkaFeatureLevels("transaction.version=1")).toEqual(
      new Map([...defaultKafkaFeatureLevels(), ["transaction.version", 1]]),
    );
    const c = loadServiceConfig("broker", ["--node-id", "1"], {
      TERN_KAFKA_FEATURES: "transaction.version=0",
    });
    expect(c.kafkaFeatureLevels.get("transaction.version")).toBe(0);
    expect(loadServiceConfig("coordinator", ["--node-id", "1"], {}).kafkaFeatureLevels).toEqual(
      defaultKafkaFeatureLevels(),
    );
    for (const bad of ["transaction.version=3", "no.such.feature=1", "transaction.version"])
      expect(() =>
        loadServiceConfig("broker", ["--node-id", "1", "--kafka-features", bad], {}),
      ).toThrow(ConfigError);
  });
});
