// Compaction's topic configs (rules version 5): Kafka's keys and values accepted, alterable on
// an existing topic; older rule versions still refuse them (a replayed log decides as before).
import { describe, expect, it } from "vitest";
import { alteredConfig } from "./topic-alterations.js";
import { checkTopicConfig, TOPIC_CONFIG_RULES_VERSION } from "./topic-rules.js";

const check = (config: Record<string, string>, version = TOPIC_CONFIG_RULES_VERSION) =>
  checkTopicConfig(config, 3, version);

describe("compaction topic configs", () => {
  it("accepts every cleanup.policy Kafka does", () => {
    for (const p of ["delete", "compact", "compact,delete", "delete,compact"])
      expect(check({ "cleanup.policy": p })).toBeUndefined();
    expect(check({ "cleanup.policy": "compacted" })?.error).toBe("INVALID_CONFIG");
    expect(check({ "cleanup.policy": "" })?.error).toBe("INVALID_CONFIG");
  });

  it("checks the cleaner settings' values", () => {
    const ok = {
      "cleanup.policy": "compact",
      "min.cleanable.dirty.ratio": "0.01",
      "min.compaction.lag.ms": "0",
      "max.compaction.lag.ms": "9223372036854775807",
      "delete.retention.ms": "86400000",
      "segment.ms": "100",
      "segment.bytes": "1024",
    };
    expect(check(ok)).toBeUndefined();
    for (const r of ["0", "1", "0.5", ".25", "1.0"])
      expect(check({ "min.cleanable.dirty.ratio": r })).toBeUndefined();
    for (const r of ["1.5", "-0.1", "abc", "", "0.5x"])
      expect(check({ "min.cleanable.dirty.ratio": r })?.error).toBe("INVALID_CONFIG");
    expect(check({ "max.compaction.lag.ms": "0" })?.error).toBe("INVALID_CONFIG");
    expect(check({ "min.compaction.lag.ms": "-1" })?.error).toBe("INVALID_CONFIG");
    expect(check({ "delete.retention.ms": "9223372036854775808" })?.error).toBe("INVALID_CONFIG");
    expect(check({ "min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5" })?.message).toMatch(
      /min.compaction.lag.ms=10 is above max.compaction.lag.ms=5/,
    );
  });

  it("is refused under rules version 4 (what a replayed older entry was checked with)", () => {
    expect(check({ "cleanup.policy": "compact" }, 4)?.error).toBe("INVALID_CONFIG");
    expect(check({ "delete.retention.ms": "1" }, 4)?.error).toBe("INVALID_CONFIG");
  });

  it("alters a topic from delete to compact and back at run time", () => {
    const compacted = alteredConfig(
      { "retention.ms": "1000" },
      { name: "t", set: { "cleanup.policy": "compact", "delete.retention.ms": "5" }, delete: [] },
      3,
      TOPIC_CONFIG_RULES_VERSION,
    );
    expect(compacted).toEqual({
      config: { "retention.ms": "1000", "cleanup.policy": "compact", "delete.retention.ms": "5" },
    });
    const back = alteredConfig(
      (compacted as { config: Record<string, string> }).config,
      { name: "t", set: {}, delete: ["cleanup.policy", "delete.retention.ms"] },
      3,
      TOPIC_CONFIG_RULES_VERSION,
    );
    expect(back).toEqual({ config: { "retention.ms": "1000" } });
  });
});
