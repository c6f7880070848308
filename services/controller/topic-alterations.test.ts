// Alter topic configs (incremental, validated, all or nothing per topic) and add partitions,
// through the metadata state machine that applies them on every controller.
import { describe, expect, it } from "vitest";
import { type Command, encodeCommand } from "./command-codec.js";
import { type CommandResult, MetadataStateMachine } from "./metadata-state-machine.js";
import { TOPIC_CONFIG_RULES_VERSION } from "./topic-rules.js";

class Harness {
  readonly sm = new MetadataStateMachine();
  index = 0;
  apply(c: Command): CommandResult {
    this.index += 1;
    return this.sm.apply({ index: this.index, term: 1, data: encodeCommand(c) });
  }
  constructor() {
    for (const id of [0, 1, 2])
      this.apply({
        type: "register",
        nodeId: id,
        role: "broker",
        address: `h:${id}`,
        incarnation: `i${id}`,
        nowMs: 1_000,
        leaseMs: 60_000,
      });
    this.apply({
      type: "createTopics",
      topics: [
        {
          name: "t",
          partitions: 2,
          replicationFactor: 3,
          config: { "retention.ms": "1000", "segment.bytes": "4096" },
        },
      ],
      validateOnly: false,
      configRules: TOPIC_CONFIG_RULES_VERSION,
    });
  }
  alter(
    set: Record<string, string>,
    del: string[] = [],
    name = "t",
    validateOnly = false,
  ): CommandResult {
    return this.apply({
      type: "alterConfigs",
      topics: [{ name, set, delete: del }],
      validateOnly,
      configRules: TOPIC_CONFIG_RULES_VERSION,
    });
  }
  grow(totalCount: number, name = "t", validateOnly = false): CommandResult {
    return this.apply({ type: "createPartitions", topics: [{ name, totalCount }], validateOnly });
  }
  topic() {
    return this.sm.metadata().topics.find((t) => t.name === "t")!;
  }
}

const errorOf = (r: CommandResult): string | undefined =>
  "results" in r ? r.results[0]?.error?.error : undefined;

describe("alterConfigs", () => {
  it("sets and deletes keys incrementally, keeping the others, and bumps the metadata version", () => {
    const h = new Harness();
    const before = BigInt(h.sm.metadata().version);
    expect(errorOf(h.alter({ "retention.bytes": "2048" }, ["retention.ms"]))).toBe("NONE");
    expect(h.topic().config).toEqual({ "segment.bytes": "4096", "retention.bytes": "2048" });
    expect(BigInt(h.sm.metadata().version)).toBeGreaterThan(before);
  });

  it("refuses an invalid value, an unknown key (set or delete), a key both set and deleted, an empty change; nothing changes", () => {
    const h = new Harness();
    const config = { ...h.topic().config };
    expect(errorOf(h.alter({ "retention.ms": "soon" }))).toBe("INVALID_CONFIG");
    expect(errorOf(h.alter({ "retention.ms": "5", "no.such": "1" }))).toBe("INVALID_CONFIG");
    expect(errorOf(h.alter({}, ["no.such"]))).toBe("INVALID_CONFIG");
    expect(errorOf(h.alter({ "retention.ms": "5" }, ["retention.ms"]))).toBe("INVALID_REQUEST");
    expect(errorOf(h.alter({}))).toBe("INVALID_REQUEST");
    expect(errorOf(h.alter({ "min.insync.replicas": "3" }))).toBe("INVALID_CONFIG");
    expect(h.topic().config).toEqual(config);
  });

  it("unknown and internal topics are refused; validate-only changes nothing", () => {
    const h = new Harness();
    expect(errorOf(h.alter({ "retention.ms": "5" }, [], "nope"))).toBe(
      "UNKNOWN_TOPIC_OR_PARTITION",
    );
    const r = h.alter({ "retention.ms": "5" }, [], "t", true);
    expect(errorOf(r)).toBe("NONE");
    expect("results" in r && r.results[0]?.topic?.config["retention.ms"]).toBe("5");
    expect(h.topic().config["retention.ms"]).toBe("1000");
  });
});

describe("createPartitions", () => {
  it("adds partitions numbered after the existing ones, placed on the live brokers with the topic's replication factor", () => {
    const h = new Harness();
    expect(errorOf(h.grow(5))).toBe("NONE");
    const t = h.topic();
    expect(t.partitions.map((p) => p.partition)).toEqual([0, 1, 2, 3, 4]);
    for (const p of t.partitions) expect([...p.replicas].sort()).toEqual([0, 1, 2]);
    expect(t.partitions[4]!.leader).toBe(-1);
  });

  it("refuses the same or a smaller count, and validate-only changes nothing", () => {
    const h = new Harness();
    expect(errorOf(h.grow(2))).toBe("INVALID_PARTITIONS");
    expect(errorOf(h.grow(1))).toBe("INVALID_PARTITIONS");
    expect(errorOf(h.grow(4, "t", true))).toBe("NONE");
    expect(h.topic().partitions).toHaveLength(2);
  });
});
