// message.timestamp.type (rules version 6), which Kafka Streams sets on every internal topic:
// CreateTime is what a broker does (it keeps producer timestamps), LogAppendTime is refused;
// older rule versions still refuse the key (a replayed log decides as before).
import { describe, expect, it } from "vitest";
import { alteredConfig } from "./topic-alterations.js";
import { checkTopicConfig, TOPIC_CONFIG_RULES_VERSION } from "./topic-rules.js";

describe("message.timestamp.type", () => {
  it("accepts CreateTime with the settings Kafka Streams gives its repartition and changelog topics", () => {
    const repartition = {
      "cleanup.policy": "delete",
      "segment.bytes": "52428800",
      "retention.ms": "-1",
      "message.timestamp.type": "CreateTime",
    };
    const changelog = { "cleanup.policy": "compact", "message.timestamp.type": "CreateTime" };
    expect(checkTopicConfig(repartition, 3, TOPIC_CONFIG_RULES_VERSION)).toBeUndefined();
    expect(checkTopicConfig(changelog, 3, TOPIC_CONFIG_RULES_VERSION)).toBeUndefined();
  });

  it("refuses LogAppendTime and other values, naming what is supported", () => {
    for (const v of ["LogAppendTime", "createtime", ""]) {
      const violation = checkTopicConfig({ "message.timestamp.type": v }, 3);
      expect(violation?.error).toBe("INVALID_CONFIG");
      expect(violation?.message).toMatch(/CreateTime/);
    }
  });

  it("is unknown under rules version 5", () => {
    expect(checkTopicConfig({ "message.timestamp.type": "CreateTime" }, 3, 5)?.message).toMatch(
      /unknown topic config "message.timestamp.type"/,
    );
  });

  it("can be set and deleted on an existing topic", () => {
    const set = alteredConfig(
      { "cleanup.policy": "compact" },
      { name: "t", set: { "message.timestamp.type": "CreateTime" }, delete: [] },
      3,
      TOPIC_CONFIG_RULES_VERSION,
    );
    expect(set).toEqual({
      config: { "cleanup.policy": "compact", "message.timestamp.type": "CreateTime" },
    });
    const deleted = alteredConfig(
      (set as { config: Record<string, string> }).config,
      { name: "t", set: {}, delete: ["message.timestamp.type"] },
      3,
      TOPIC_CONFIG_RULES_VERSION,
    );
    expect(deleted).toEqual({ config: { "cleanup.policy": "compact" } });
  });
});
