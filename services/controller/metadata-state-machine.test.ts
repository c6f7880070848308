import { describe, expect, it } from "vitest";
import { type Command, encodeCommand, type InternalTopicSpec } from "./command-codec.js";
import { type CommandResult, MetadataStateMachine } from "./metadata-state-machine.js";
import { TOPIC_CONFIG_RULES_VERSION } from "./topic-rules.js";
import { newTopicId } from "../../libs/metadata/topic-id.js";

const LEASE_MS = 5_000;

class Harness {
  readonly sm = new MetadataStateMachine();
  index = 0;
  apply(c: Command): CommandResult {
    this.index += 1;
    return this.sm.apply({ index: this.index, term: 1, data: encodeCommand(c) });
  }
  register(
    nodeId: number,
    role: "broker" | "coordinator" = "broker",
    nowMs = 1000,
    opts: { incarnation?: string; rack?: string } = {},
  ): CommandResult {
    return this.apply({
      type: "register",
      nodeId,
      role,
      address: `127.0.0.1:${9100 + nodeId}`,
      incarnation: opts.incarnation ?? `inc-${nodeId}`,
      nowMs,
      leaseMs: LEASE_MS,
      ...(opts.rack ? { rack: opts.rack } : {}),
    });
  }
  create(
    name: string,
    partitions = 3,
    replicationFactor = 3,
    config: Record<string, string> = {},
  ): CommandResult {
    return this.apply({
      type: "createTopics",
      topics: [{ name, partitions, replicationFactor, config }],
      validateOnly: false,
    });
  }
  tick(
    nowMs: number,
    replaceAfterMs = 10_000,
    internalTopics: InternalTopicSpec[] = [],
  ): CommandResult {
    return this.apply({ type: "tick", nowMs, expireLeases: true, replaceAfterMs, internalTopics });
  }
}

function firstError(r: CommandResult): string | undefined {
  if ("results" in r) return r.results[0]?.error?.error;
  return "error" in r ? r.error?.error : undefined;
}

function stateBytes(sm: MetadataStateMachine): string {
  return new TextDecoder().decode(sm.snapshot());
}

describe("MetadataStateMachine: nodes", () => {
  it("registers nodes and shows them alive", () => {
    const h = new Harness();
    expect(firstError(h.register(1))).toBeUndefined();
    expect(firstError(h.register(1, "coordinator"))).toBeUndefined();
    const m = h.sm.metadata();
    expect(m.nodes.map((n) => `${n.role}:${n.nodeId}:${n.alive}`)).toEqual([
      "broker:1:true",
      "coordinator:1:true",
    ]);
    expect(BigInt(m.version)).toBe(2n);
  });

  it("refuses a second live claimant with another incarnation and changes nothing", () => {
    const h = new Harness();
    h.register(1, "broker", 1000, { incarnation: "a" });
    const before = stateBytes(h.sm);
    const r = h.register(1, "broker", 2000, { incarnation: "b" });
    expect(firstError(r)).toBe("DUPLICATE_BROKER_REGISTRATION");
    expect("error" in r && r.error?.message).toMatch(/live incarnation a/);
    // Only the controller clock may move (a refused command carries the leader's time).
    expect(h.sm.node("broker", 1)!.incarnation).toBe("a");
    expect(JSON.parse(stateBytes(h.sm)).nodes).toEqual(JSON.parse(before).nodes);
  });

  it("accepts a new incarnation once the old lease expired, and re-registration is idempotent", () => {
    const h = new Harness();
    h.register(1, "broker", 1000, { incarnation: "a" });
    expect(
      firstError(h.register(1, "broker", 1000 + LEASE_MS + 1, { incarnation: "b" })),
    ).toBeUndefined();
    const v = h.sm.version();
    expect(firstError(h.register(1, "broker", 7000, { incarnation: "b" }))).toBeUndefined();
    expect(h.sm.version()).toBe(v);
  });

  it("extends leases by heartbeat, expires them by tick, and revives on a late heartbeat", () => {
    const h = new Harness();
    h.register(1, "broker", 1000);
    h.apply({
      type: "heartbeat",
      nodeId: 1,
      role: "broker",
      incarnation: "inc-1",
      nowMs: 5000,
      leaseMs: LEASE_MS,
    });
    expect(h.tick(9000)).toMatchObject({ expired: 0 });
    expect(h.sm.node("broker", 1)!.alive).toBe(true);
    expect(h.tick(10_001)).toMatchObject({ expired: 1 });
    expect(h.sm.node("broker", 1)!.alive).toBe(false);
    expect(
      firstError(
        h.apply({
          type: "heartbeat",
          nodeId: 1,
          role: "broker",
          incarnation: "inc-1",
          nowMs: 11_000,
          leaseMs: LEASE_MS,
        }),
      ),
    ).toBeUndefined();
    expect(h.sm.node("broker", 1)!.alive).toBe(true);
  });

  it("writes a heartbeat only to revive, to refuse, or once half of the lease is gone", () => {
    const h = new Harness();
    const beat = (nowMs: number, incarnation = "inc-1") => ({
      nodeId: 1,
      role: "broker" as const,
      incarnation,
      nowMs,
      leaseMs: LEASE_MS,
    });
    expect(h.sm.heartbeatNeedsWrite(beat(1000))).toBe(true); // not registered
    h.register(1, "broker", 1000); // lease until 6000
    expect(h.sm.heartbeatNeedsWrite(beat(1000))).toBe(false);
    expect(h.sm.heartbeatNeedsWrite(beat(3500))).toBe(false); // exactly half left
    expect(h.sm.heartbeatNeedsWrite(beat(3501))).toBe(true);
    expect(h.sm.heartbeatNeedsWrite(beat(1000, "other"))).toBe(true);
    expect(h.sm.heartbeatNeedsWrite({ ...beat(1000), leaseMs: -1 })).toBe(true);
    h.apply({ type: "heartbeat", ...beat(3501) }); // lease until 8501
    expect(h.sm.heartbeatNeedsWrite(beat(6000))).toBe(false);
    expect(h.tick(9000)).toMatchObject({ expired: 1 });
    expect(h.sm.heartbeatNeedsWrite(beat(9000))).toBe(true); // dead: the heartbeat revives it
    h.apply({ type: "heartbeat", ...beat(9000) }); // revived, lease until 14000
    expect(h.sm.heartbeatNeedsWrite(beat(9500))).toBe(false);
    // The state machine's clock only moves forward: a caller clock behind it hides no lapse.
    h.tick(12_000);
    expect(h.sm.heartbeatNeedsWrite(beat(9500))).toBe(true);
  });

  it("answers UNKNOWN_NODE to a heartbeat of an unknown node or incarnation", () => {
    const h = new Harness();
    expect(
      firstError(
        h.apply({
          type: "heartbeat",
          nodeId: 9,
          role: "broker",
          incarnation: "x",
          nowMs: 1,
          leaseMs: LEASE_MS,
        }),
      ),
    ).toBe("UNKNOWN_NODE");
    h.register(9);
    expect(
      firstError(
        h.apply({
          type: "heartbeat",
          nodeId: 9,
          role: "broker",
          incarnation: "other",
          nowMs: 1,
          leaseMs: LEASE_MS,
        }),
      ),
    ).toBe("UNKNOWN_NODE");
  });

  it("refuses malformed registrations", () => {
    const h = new Harness();
    const base = {
      type: "register" as const,
      nodeId: 1,
      role: "broker" as const,
      address: "h:1",
      incarnation: "i",
      nowMs: 1,
      leaseMs: LEASE_MS,
    };
    expect(firstError(h.apply({ ...base, nodeId: -1 }))).toBe("INVALID_REQUEST");
    expect(firstError(h.apply({ ...base, role: "controller" as never }))).toBe("INVALID_REQUEST");
    expect(firstError(h.apply({ ...base, address: "nohost" }))).toBe("INVALID_REQUEST");
    expect(firstError(h.apply({ ...base, incarnation: "" }))).toBe("INVALID_REQUEST");
    expect(firstError(h.apply({ ...base, leaseMs: 0 }))).toBe("INVALID_REQUEST");
    expect(h.sm.metadata().nodes).toEqual([]);
  });

  it("never moves its clock backwards", () => {
    const h = new Harness();
    h.register(1, "broker", 50_000);
    h.register(2, "broker", 10_000);
    expect(h.sm.nowMs()).toBe(50_000);
    expect(h.sm.node("broker", 2)!.leaseDeadlineMs).toBe(50_000 + LEASE_MS);
  });
});

describe("MetadataStateMachine: topics", () => {
  const withBrokers = (n: number): Harness => {
    const h = new Harness();
    for (let i = 0; i < n; i++) h.register(i);
    return h;
  };

  it("creates a topic with placement over live brokers", () => {
    const h = withBrokers(3);
    const r = h.create("orders", 6, 3, { "retention.ms": "60000" });
    expect(r.type).toBe("createTopics");
    const t = h.sm.metadata().topics.find((x) => x.name === "orders")!;
    expect(t.partitions).toHaveLength(6);
    expect(t.config).toEqual({ "retention.ms": "60000" });
    for (const p of t.partitions) {
      expect(new Set(p.replicas).size).toBe(3);
      expect(p.leader).toBe(-1);
    }
    expect(new Set(t.partitions.map((p) => p.replicas[0])).size).toBe(3);
  });

  const invalid: Array<[string, Parameters<Harness["create"]>, string]> = [
    ["empty name", ["", 1, 1], "INVALID_TOPIC_EXCEPTION"],
    ["illegal characters", ["a b", 1, 1], "INVALID_TOPIC_EXCEPTION"],
    ["name too long", ["x".repeat(250), 1, 1], "INVALID_TOPIC_EXCEPTION"],
    ["dot", [".", 1, 1], "INVALID_TOPIC_EXCEPTION"],
    ["reserved prefix", ["__mine", 1, 1], "INVALID_TOPIC_EXCEPTION"],
    ["zero partitions", ["t", 0, 1], "INVALID_PARTITIONS"],
    ["fractional partitions", ["t", 1.5, 1], "INVALID_PARTITIONS"],
    ["zero replication", ["t", 1, 0], "INVALID_REPLICATION_FACTOR"],
    ["replication above live brokers", ["t", 1, 4], "INVALID_REPLICATION_FACTOR"],
    ["unknown config", ["t", 1, 1, { "bogus.key": "1" }], "INVALID_CONFIG"],
    ["bad config value", ["t", 1, 1, { "retention.ms": "soon" }], "INVALID_CONFIG"],
  ];
  for (const [what, args, code] of invalid) {
    it(`refuses ${what} with ${code} and a message, changing nothing`, () => {
      const h = withBrokers(3);
      const before = stateBytes(h.sm);
      const r = h.create(...args);
      expect(r.type).toBe("createTopics");
      const result = (r as Extract<CommandResult, { type: "createTopics" }>).results[0]!;
      expect(result.error?.error).toBe(code);
      expect(result.error?.message.length).toBeGreaterThan(5);
      expect(stateBytes(h.sm)).toBe(before.replace(/"applied":\d+/, `"applied":${h.index}`));
    });
  }

  it("refuses a duplicate topic and a name twice in one request", () => {
    const h = withBrokers(3);
    h.create("t");
    expect(firstError(h.create("t"))).toBe("TOPIC_ALREADY_EXISTS");
    const r = h.apply({
      type: "createTopics",
      validateOnly: false,
      topics: [
        { name: "u", partitions: 1, replicationFactor: 1, config: {} },
        { name: "u", partitions: 1, replicationFactor: 1, config: {} },
      ],
    }) as Extract<CommandResult, { type: "createTopics" }>;
    expect(r.results.map((x) => x.error?.error)).toEqual(["INVALID_REQUEST", "INVALID_REQUEST"]);
    expect(h.sm.metadata().topics.map((t) => t.name)).toEqual(["t"]);
  });

  it("topic config rules v2: producer.id.expiration.ms is accepted (the broker reads it), min.insync.replicas is bounded by the Raft majority", () => {
    const h = withBrokers(3);
    const create = (name: string, rf: number, config: Record<string, string>) =>
      h.apply({
        type: "createTopics",
        validateOnly: false,
        configRules: TOPIC_CONFIG_RULES_VERSION,
        topics: [{ name, partitions: 1, replicationFactor: rf, config }],
      }) as Extract<CommandResult, { type: "createTopics" }>;
    expect(create("p", 3, { "producer.id.expiration.ms": "60000" }).results[0]!.error.error).toBe(
      "NONE",
    );
    expect(h.sm.metadata().topics.find((t) => t.name === "p")?.config).toEqual({
      "producer.id.expiration.ms": "60000",
    });
    expect(create("p0", 3, { "producer.id.expiration.ms": "0" }).results[0]!.error?.error).toBe(
      "INVALID_CONFIG",
    );
    expect(create("m2", 3, { "min.insync.replicas": "2" }).results[0]!.error.error).toBe("NONE");
    const refused = create("m3", 3, { "min.insync.replicas": "3" }).results[0]!.error;
    expect(refused?.error).toBe("INVALID_CONFIG");
    expect(refused?.message).toMatch(
      /cannot be honoured with replication factor 3: .*Raft majority of 2/,
    );
    expect(create("m1", 1, { "min.insync.replicas": "1" }).results[0]!.error.error).toBe("NONE");
  });

  it("topic config rules v4: compression.type takes Kafka's values; an entry proposed under v3 refuses it on replay", () => {
    const h = withBrokers(3);
    const create = (
      name: string,
      config: Record<string, string>,
      configRules = TOPIC_CONFIG_RULES_VERSION,
    ) =>
      h.apply({
        type: "createTopics",
        validateOnly: false,
        configRules,
        topics: [{ name, partitions: 1, replicationFactor: 3, config }],
      }) as Extract<CommandResult, { type: "createTopics" }>;
    for (const v of ["producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"])
      expect(create(`c-${v}`, { "compression.type": v }).results[0]!.error.error).toBe("NONE");
    expect(h.sm.metadata().topics.find((t) => t.name === "c-zstd")?.config).toEqual({
      "compression.type": "zstd",
    });
    const refused = create("c-bad", { "compression.type": "brotli" }).results[0]!.error;
    expect(refused?.error).toBe("INVALID_CONFIG");
    expect(refused?.message).toMatch(/producer, uncompressed, gzip, snappy, lz4, zstd/);
    expect(create("c-v3", { "compression.type": "lz4" }, 3).results[0]!.error?.error).toBe(
      "INVALID_CONFIG",
    );
  });

  it("an entry proposed before rules v2 (no configRules) is decided by the old rules on replay", () => {
    const h = withBrokers(3);
    expect(firstError(h.create("old-p", 1, 3, { "producer.id.expiration.ms": "60000" }))).toBe(
      "INVALID_CONFIG",
    );
    expect(firstError(h.create("old-m", 1, 3, { "min.insync.replicas": "3" }))).toBe("NONE");
  });

  it("records each controller's data-directory id once; another id is refused; removal forgets it; snapshots keep it", () => {
    const h = new Harness();
    const d1 = "11111111-1111-4111-8111-111111111111";
    const d2 = "22222222-2222-4222-8222-222222222222";
    expect(
      firstError(h.apply({ type: "setControllerDirectory", nodeId: 2, directoryId: d1 })),
    ).toBeUndefined();
    expect(
      firstError(h.apply({ type: "setControllerDirectory", nodeId: 2, directoryId: d1 })),
    ).toBeUndefined();
    const refused = h.apply({ type: "setControllerDirectory", nodeId: 2, directoryId: d2 });
    expect(firstError(refused)).toBe("INVALID_REQUEST");
    expect("error" in refused && refused.error?.message).toMatch(
      /recorded with data directory 1111.*\(lost or replaced disk\)/,
    );
    expect(
      firstError(h.apply({ type: "setControllerDirectory", nodeId: 2, directoryId: "nope" })),
    ).toBe("INVALID_REQUEST");
    const copy = new MetadataStateMachine();
    copy.restore(h.sm.snapshot(), h.index);
    expect(copy.controllerDirectory(2)).toBe(d1);
    h.apply({ type: "removeController", nodeId: 2 });
    expect(h.sm.controllerDirectory(2)).toBeUndefined();
    expect(
      firstError(h.apply({ type: "setControllerDirectory", nodeId: 2, directoryId: d2 })),
    ).toBeUndefined();
  });

  it("counts only live brokers for the replication factor", () => {
    const h = withBrokers(3);
    h.apply({ type: "markDead", nodeId: 2, role: "broker", nowMs: 2000 });
    expect(firstError(h.create("t", 1, 3))).toBe("INVALID_REPLICATION_FACTOR");
    expect(firstError(h.create("t", 1, 2))).toBe("NONE");
  });

  it("validateOnly answers the placement without creating", () => {
    const h = withBrokers(3);
    const r = h.apply({
      type: "createTopics",
      validateOnly: true,
      topics: [{ name: "v", partitions: 2, replicationFactor: 2, config: {} }],
    });
    expect(
      (r as Extract<CommandResult, { type: "createTopics" }>).results[0]!.topic?.partitions,
    ).toHaveLength(2);
    expect(h.sm.metadata().topics).toEqual([]);
  });

  it("deletes topics; unknown and internal ones are refused", () => {
    const h = withBrokers(3);
    h.create("t");
    h.tick(1500, 10_000, [
      { name: "__consumer_offsets", role: "broker", partitions: 5, replicationFactor: 3 },
    ]);
    const r = h.apply({
      type: "deleteTopics",
      names: ["t", "nope", "__consumer_offsets"],
    }) as Extract<CommandResult, { type: "deleteTopics" }>;
    expect(r.results.map((x) => x.error?.error)).toEqual([
      "NONE",
      "UNKNOWN_TOPIC_OR_PARTITION",
      "INVALID_TOPIC_EXCEPTION",
    ]);
    expect(h.sm.metadata().topics.map((t) => t.name)).toEqual(["__consumer_offsets"]);
  });

  it("keeps the leader report with the highest term", () => {
    const h = withBrokers(3);
    h.create("t", 1, 3);
    const report = (leader: number, term: number) =>
      h.apply({
        type: "reportLeaders",
        nodeId: leader,
        changes: [{ topic: "t", partition: 0, leader, term }],
      });
    report(1, 5);
    report(2, 4);
    expect(h.sm.metadata().topics[0]!.partitions[0]).toMatchObject({ leader: 1, leaderTerm: 5 });
    report(2, 6);
    expect(h.sm.metadata().topics[0]!.partitions[0]).toMatchObject({ leader: 2, leaderTerm: 6 });
    h.apply({
      type: "reportLeaders",
      nodeId: 1,
      changes: [{ topic: "gone", partition: 0, leader: 1, term: 9 }],
    });
    expect(h.sm.metadata().topics[0]!.partitions[0]).toMatchObject({ leader: 2, leaderTerm: 6 });
  });
});

describe("MetadataStateMachine: bootstrap, re-placement, producer ids, snapshots", () => {
  const internal: InternalTopicSpec[] = [
    { name: "__transaction_state", role: "coordinator", partitions: 50, replicationFactor: 3 },
    { name: "__consumer_offsets", role: "broker", partitions: 50, replicationFactor: 3 },
  ];

  it("creates each internal topic once enough nodes of its role are live, and only once", () => {
    const h = new Harness();
    for (let i = 0; i < 3; i++) h.register(i, "broker");
    h.register(0, "coordinator");
    expect(
      h.sm.tickWouldChange({
        nowMs: 1000,
        expireLeases: true,
        replaceAfterMs: 10_000,
        internalTopics: internal,
      }),
    ).toBe(true);
    h.tick(1000, 10_000, internal);
    expect(h.sm.metadata().topics.map((t) => t.name)).toEqual(["__consumer_offsets"]);
    h.register(1, "coordinator");
    h.register(2, "coordinator");
    h.tick(1000, 10_000, internal);
    const tx = h.sm.metadata().topics.find((t) => t.name === "__transaction_state")!;
    expect(tx).toMatchObject({ internal: true, role: "coordinator" });
    expect(tx.partitions).toHaveLength(50);
    expect(tx.partitions.every((p) => p.replicas.length === 3)).toBe(true);
    const counts = [0, 1, 2].map((id) => tx.partitions.filter((p) => p.replicas[0] === id).length);
    expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
    // Counts are fixed once created: other settings later change nothing.
    const later = internal.map((s) => ({ ...s, partitions: 10 }));
    expect(
      h.sm.tickWouldChange({
        nowMs: 1000,
        expireLeases: true,
        replaceAfterMs: 10_000,
        internalTopics: later,
      }),
    ).toBe(false);
  });

  it("re-places a dead broker's replicas after the configured time onto the remaining brokers", () => {
    const h = new Harness();
    for (let i = 0; i < 4; i++) h.register(i, "broker", 1000);
    h.create("orders", 8, 3);
    const hosted = (id: number) =>
      h.sm.metadata().topics[0]!.partitions.filter((p) => p.replicas.includes(id)).length;
    expect(hosted(3)).toBeGreaterThan(0);
    for (const id of [0, 1, 2])
      h.apply({
        type: "heartbeat",
        nodeId: id,
        role: "broker",
        incarnation: `inc-${id}`,
        nowMs: 1000,
        leaseMs: 60_000,
      });
    h.tick(7000, 10_000);
    expect(h.sm.node("broker", 3)!.alive).toBe(false);
    expect(hosted(3)).toBeGreaterThan(0); // not yet: dead for less than replaceAfterMs
    expect(
      h.sm.tickWouldChange({
        nowMs: 16_000,
        expireLeases: true,
        replaceAfterMs: 10_000,
        internalTopics: [],
      }),
    ).toBe(false);
    const toMove = hosted(3);
    expect(h.tick(17_000, 10_000)).toMatchObject({ moved: toMove });
    expect(hosted(3)).toBe(0);
    for (const p of h.sm.metadata().topics[0]!.partitions) {
      expect(new Set(p.replicas).size).toBe(3);
      expect(p.replicas.every((id) => id < 3)).toBe(true);
    }
    expect(
      h.sm.tickWouldChange({
        nowMs: 30_000,
        expireLeases: false,
        replaceAfterMs: 10_000,
        internalTopics: [],
      }),
    ).toBe(false);
  });

  it("hands out producer-id blocks of 1000 that never overlap, across snapshot and restore", () => {
    const h = new Harness();
    const seen: bigint[] = [];
    for (let i = 0; i < 5; i++) {
      const r = h.apply({ type: "allocateProducerIds", nodeId: 1 }) as Extract<
        CommandResult,
        { type: "allocateProducerIds" }
      >;
      expect(r.count).toBe(1000);
      seen.push(r.firstProducerId!);
    }
    expect(seen).toEqual([0n, 1000n, 2000n, 3000n, 4000n]);
    const copy = new MetadataStateMachine();
    copy.restore(h.sm.snapshot(), h.index);
    const r = copy.apply({
      index: h.index + 1,
      term: 2,
      data: encodeCommand({ type: "allocateProducerIds", nodeId: 2 }),
    });
    expect(r).toMatchObject({ firstProducerId: 5000n, count: 1000 });
  });

  it("restores to an identical state and stays identical under the same entries", () => {
    const h = new Harness();
    for (let i = 0; i < 4; i++) h.register(i, "broker", 1000, { rack: i % 2 ? "a" : "b" });
    for (let i = 0; i < 3; i++) h.register(i, "coordinator", 1000);
    h.tick(1000, 10_000, internal);
    h.create("orders", 4, 2, { "retention.ms": "1000" });
    const copy = new MetadataStateMachine();
    copy.restore(h.sm.snapshot(), h.index);
    expect(stateBytes(copy)).toBe(stateBytes(h.sm));
    expect(copy.metadata()).toEqual(h.sm.metadata());
    const next: Command = {
      type: "createTopics",
      validateOnly: false,
      topics: [{ name: "more", partitions: 7, replicationFactor: 3, config: {} }],
    };
    copy.apply({ index: h.index + 1, term: 1, data: encodeCommand(next) });
    h.apply(next);
    expect(stateBytes(copy)).toBe(stateBytes(h.sm));
  });

  it("answers a malformed entry with INVALID_REQUEST and ignores the leader's empty no-op", () => {
    const sm = new MetadataStateMachine();
    expect(sm.apply({ index: 1, term: 1, data: new Uint8Array() })).toEqual({ type: "noop" });
    expect(sm.apply({ index: 2, term: 1, data: new Uint8Array([1, 123, 125]) })).toMatchObject({
      type: "invalid",
      error: { error: "INVALID_REQUEST" },
    });
    expect(sm.apply({ index: 3, term: 1, data: new Uint8Array([9, 9, 9]) })).toMatchObject({
      type: "invalid",
    });
    expect(sm.appliedIndex()).toBe(3);
  });

  it("notifies listeners only when the visible version changes", () => {
    const h = new Harness();
    const versions: bigint[] = [];
    h.sm.onChange((v) => versions.push(v));
    h.register(1);
    h.apply({
      type: "heartbeat",
      nodeId: 1,
      role: "broker",
      incarnation: "inc-1",
      nowMs: 2000,
      leaseMs: LEASE_MS,
    });
    h.apply({ type: "allocateProducerIds", nodeId: 1 });
    expect(versions).toEqual([1n]);
  });

  it("applies controller quorum changes on top of the configuration, and snapshots them", () => {
    const h = new Harness();
    const configured = [
      { id: 0, host: "h", port: 1 },
      { id: 1, host: "h", port: 2 },
      { id: 2, host: "h", port: 3 },
    ];
    h.apply({ type: "removeController", nodeId: 2 });
    h.apply({ type: "setController", nodeId: 3, address: "h:4" });
    expect(firstError(h.apply({ type: "setController", nodeId: 4, address: "nope" }))).toBe(
      "INVALID_REQUEST",
    );
    expect(h.sm.controllers(configured).map((c) => `${c.id}@${c.host}:${c.port}`)).toEqual([
      "0@h:1",
      "1@h:2",
      "3@h:4",
    ]);
    const copy = new MetadataStateMachine();
    copy.restore(h.sm.snapshot(), h.index);
    expect(copy.controllers(configured)).toEqual(h.sm.controllers(configured));
  });

  it("re-places only with a live majority, one replica per tick, for coordinators too", () => {
    const h = new Harness();
    for (let i = 0; i < 6; i++) h.register(i, "coordinator", 1000);
    h.register(0, "broker", 1000);
    h.create("single", 1, 1);
    h.tick(1000, 10_000, [
      { name: "__transaction_state", role: "coordinator", partitions: 6, replicationFactor: 3 },
    ]);
    const tx = () => h.sm.metadata().topics.find((t) => t.name === "__transaction_state")!;
    const p0 = tx().partitions[0]!.replicas;
    const originals = tx().partitions.map((p) => [...p.replicas]);
    // Kill two replicas of partition 0 (no majority left there), one node elsewhere, and the lone broker.
    const other = [0, 1, 2, 3, 4, 5].find((id) => !p0.includes(id))!;
    for (const id of [p0[0]!, p0[1]!, other])
      h.apply({ type: "markDead", nodeId: id, role: "coordinator", nowMs: 2000 });
    h.apply({ type: "markDead", nodeId: 0, role: "broker", nowMs: 2000 });
    for (let i = 0; i < 6; i++) {
      if (i !== p0[0] && i !== p0[1] && i !== other)
        h.apply({
          type: "heartbeat",
          nodeId: i,
          role: "coordinator",
          incarnation: `inc-${i}`,
          nowMs: 2000,
          leaseMs: 600_000,
        });
    }
    h.tick(20_000, 10_000);
    expect(tx().partitions[0]!.replicas).toEqual(p0); // no majority: untouched
    expect(
      h.sm.metadata().topics.find((t) => t.name === "single")!.partitions[0]!.replicas,
    ).toEqual([0]); // RF 1: never moved to an empty node
    const isDead = (id: number) => id === p0[0] || id === p0[1] || id === other;
    tx().partitions.forEach((p, i) => {
      const before = originals[i]!;
      const deadBefore = before.filter(isDead).length;
      if (deadBefore === 1) {
        expect(p.replicas.filter(isDead)).toEqual([]); // replaced
        expect(new Set(p.replicas).size).toBe(3);
        expect(p.replicas.slice(0, 2)).toEqual(before.filter((id) => !isDead(id))); // survivors keep their order
      } else if (deadBefore >= 2) {
        expect(p.replicas).toEqual(before); // no live majority: untouched
      } else {
        expect(p.replicas).toEqual(before); // nothing dead
      }
    });
    expect(originals.some((r) => r.filter(isDead).length === 1)).toBe(true);
  });
});

describe("MetadataStateMachine: topic ids", () => {
  const ID_A = newTopicId();
  const ID_B = newTopicId();
  const brokers = (h: Harness): void => {
    for (const id of [1, 2, 3]) h.register(id);
  };

  it("keeps the id the proposer put in the entry; a snapshot keeps it; a malformed or reused id is refused", () => {
    const h = new Harness();
    brokers(h);
    const created = h.apply({
      type: "createTopics",
      topics: [{ name: "a", partitions: 1, replicationFactor: 1, config: {}, id: ID_A }],
      validateOnly: false,
    });
    expect(firstError(created)).toBe("NONE");
    expect(h.sm.metadata().topics.find((t) => t.name === "a")?.id).toBe(ID_A);
    for (const id of [ID_A, "not-an-id", "AAAAAAAAAAAAAAAAAAAAAA"]) {
      const r = h.apply({
        type: "createTopics",
        topics: [{ name: `b-${id}`, partitions: 1, replicationFactor: 1, config: {}, id }],
        validateOnly: false,
      });
      expect(firstError(r)).toBe("INVALID_REQUEST");
    }
    const copy = new MetadataStateMachine();
    copy.restore(h.sm.snapshot(), h.index);
    expect(copy.metadata().topics.find((t) => t.name === "a")?.id).toBe(ID_A);
  });

  it("a topic from an entry or snapshot without ids gets the id a later tick carries, once, the same on every replica", () => {
    const h = new Harness();
    brokers(h);
    h.create("old"); // an entry written before ids: no id in it
    expect(h.sm.metadata().topics[0]!.id).toBeUndefined();
    // A snapshot written before ids has no id field at all.
    const body = JSON.parse(stateBytes(h.sm)) as { topics: Array<Record<string, unknown>> };
    for (const t of body.topics) delete t.id;
    const restored = new MetadataStateMachine();
    restored.restore(new TextEncoder().encode(JSON.stringify(body)), h.index);
    expect(restored.topicsWithoutIds([])).toEqual(["old"]);
    const tick: Omit<Extract<Command, { type: "tick" }>, "type"> = {
      nowMs: 1000,
      expireLeases: false,
      replaceAfterMs: 10_000,
      internalTopics: [],
      topicIds: [{ name: "old", id: ID_B }],
    };
    expect(h.sm.tickWouldChange(tick)).toBe(true);
    const entry = encodeCommand({ type: "tick", ...tick });
    h.index += 1;
    h.sm.apply({ index: h.index, term: 1, data: entry });
    restored.apply({ index: h.index, term: 1, data: entry });
    expect(h.sm.metadata().topics[0]!.id).toBe(ID_B);
    expect(stateBytes(restored)).toBe(stateBytes(h.sm));
    expect(h.sm.topicsWithoutIds([])).toEqual([]);
    // A second assignment changes nothing: the first id stays.
    expect(h.sm.tickWouldChange({ ...tick, topicIds: [{ name: "old", id: ID_A }] })).toBe(false);
  });

  it("an internal topic a tick creates takes its id from the entry", () => {
    const h = new Harness();
    brokers(h);
    const internalTopics: InternalTopicSpec[] = [
      { name: "__consumer_offsets", role: "broker", partitions: 2, replicationFactor: 3 },
    ];
    expect(h.sm.topicsWithoutIds(internalTopics)).toEqual(["__consumer_offsets"]);
    h.apply({
      type: "tick",
      nowMs: 1000,
      expireLeases: false,
      replaceAfterMs: 10_000,
      internalTopics,
      topicIds: [{ name: "__consumer_offsets", id: ID_A }],
    });
    expect(h.sm.metadata().topics[0]).toMatchObject({ name: "__consumer_offsets", id: ID_A });
  });
});
