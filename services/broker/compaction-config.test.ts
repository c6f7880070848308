// A topic's compaction settings as the broker reads them: Kafka's defaults, the policy list,
// and what the leader stamps for retention when the topic is compacted only.
import { describe, expect, it } from "vitest";
import { compactionConfig } from "./compaction-config.js";
import { TOPIC_CONFIG_DEFAULTS } from "./topic-config-defaults.js";
import { LocalPartition } from "./local-partition.js";
import { partitionForTest } from "./testing/partition-for-test.js";
import type { RaftGroup } from "../../libs/raft-host/api.js";

describe("compactionConfig", () => {
  it("has Kafka's defaults", () => {
    expect(compactionConfig({})).toEqual({
      compact: false,
      delete: true,
      minCleanableDirtyRatio: 0.5,
      minCompactionLagMs: 0,
      maxCompactionLagMs: Number.MAX_SAFE_INTEGER,
      deleteRetentionMs: 86_400_000,
    });
    expect(TOPIC_CONFIG_DEFAULTS.get("delete.retention.ms")).toBe("86400000");
    expect(TOPIC_CONFIG_DEFAULTS.get("max.compaction.lag.ms")).toBe("9223372036854775807");
    expect(TOPIC_CONFIG_DEFAULTS.get("min.cleanable.dirty.ratio")).toBe("0.5");
  });

  it("reads the policy list in either order", () => {
    expect(compactionConfig({ "cleanup.policy": "compact" })).toMatchObject({
      compact: true,
      delete: false,
    });
    for (const p of ["compact,delete", "delete,compact"])
      expect(compactionConfig({ "cleanup.policy": p })).toMatchObject({
        compact: true,
        delete: true,
      });
  });

  it("reads the settings", () => {
    expect(
      compactionConfig({
        "min.cleanable.dirty.ratio": "0.1",
        "min.compaction.lag.ms": "7",
        "max.compaction.lag.ms": "9",
        "delete.retention.ms": "0",
      }),
    ).toMatchObject({
      minCleanableDirtyRatio: 0.1,
      minCompactionLagMs: 7,
      maxCompactionLagMs: 9,
      deleteRetentionMs: 0,
    });
  });

  it("stamps no retention into entries of a topic compacted only", () => {
    // setConfig and entryHeader never touch the Raft group.
    const p = new LocalPartition(
      "c",
      0,
      undefined as unknown as RaftGroup,
      partitionForTest("c", 0),
    );
    const config = { "retention.ms": "1000", "retention.bytes": "2000" };
    p.setConfig({ ...config, "cleanup.policy": "compact" });
    expect(p.entryHeader(5)).toMatchObject({ retentionMs: -1, retentionBytes: -1 });
    p.setConfig({ ...config, "cleanup.policy": "compact,delete" });
    expect(p.entryHeader(5)).toMatchObject({ retentionMs: 1000, retentionBytes: 2000 });
    p.setConfig(config);
    expect(p.entryHeader(5)).toMatchObject({ retentionMs: 1000, retentionBytes: 2000 });
    expect(p.compaction().compact).toBe(false);
  });
});
