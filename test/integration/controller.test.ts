// Real controller processes (built JS under dist/): a 3-controller quorum elects, survives
// SIGKILL of its leader during topic creation and producer-id allocation without losing an
// acknowledged change or reusing a producer id, refuses invalid requests without changing
// anything, and re-places a dead broker's replicas. Brokers here are registrations made by
// this test through libs/metadata/node-membership (the controller only sees registrations and
// heartbeats); that a real broker then moves its Raft replicas is the broker's own test.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { parsePeers, type PeerAddress } from "../../libs/common/config.js";
import { isTernError } from "../../libs/common/errors.js";
import { silentLogger } from "../../libs/common/logger.js";
import * as grpc from "@grpc/grpc-js";
import { fromGrpcError } from "../../libs/common/grpc-errors.js";
import { ControllerClient } from "../../libs/metadata/controller-client.js";
import { controllerProto } from "../../libs/metadata/controller-proto.js";
import { startNodeMembership, type NodeMembership } from "../../libs/metadata/node-membership.js";
import type { ClusterMetadata } from "../../libs/metadata/types.js";
import { systemRuntime } from "../../libs/runtime/system-runtime.js";
import { startCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";
import { sleep, until } from "../../libs/common/poll.js";

const LEASE_MS = 2_000;
const REPLACE_AFTER_MS = 2_000;
/** Bound on "metadata is served again" after the leader is killed. */
const RECOVERY_MS_MAX = 15_000;
const POLL_MS = 100;
/** The pid allocator of the failover test runs at most this long / this many calls. */
const ALLOCATOR_MS_MAX = 120_000;
const ALLOCATIONS_MAX = 200_000;

let cluster: ProcessCluster;
let client: ControllerClient;
let controllers: PeerAddress[];
let dataDir: string;
/** Broker 0 stays registered and heartbeating for the whole file (topics need a live broker). */
let broker0: NodeMembership;
const logger = silentLogger();
let failures = 0;

const waitFor = <T>(
  what: string,
  timeoutMs: number,
  probe: () => Promise<T | undefined>,
): Promise<T> => until(what, timeoutMs, probe, { intervalMs: POLL_MS });

/** The leader every live controller agrees on. */
async function agreedLeader(exclude: number[] = [], timeoutMs = RECOVERY_MS_MAX): Promise<number> {
  return waitFor("an agreed controller leader", timeoutMs, async () => {
    const live = controllers.filter((c) => !exclude.includes(c.id));
    const views = await Promise.all(live.map((c) => client.describeCluster(c.id)));
    const leader = views[0]!.leader;
    return leader >= 0 && !exclude.includes(leader) && views.every((v) => v.leader === leader)
      ? leader
      : undefined;
  });
}

async function killAndRestartLeader(
  afterKill?: () => Promise<void>,
): Promise<{ oldLeader: number; newLeader: number; recoveryMs: number }> {
  const oldLeader = await agreedLeader();
  cluster.kill("controller", oldLeader, "SIGKILL");
  expect(await cluster.waitForExit("controller", oldLeader, 5_000)).toBe(true);
  const killedAt = Date.now();
  await afterKill?.();
  // Metadata served again: a linearizable read (leader + read barrier) succeeds.
  await waitFor(
    "linearizable metadata after the kill",
    RECOVERY_MS_MAX,
    async () => (await client.metadata({ linearizable: true })).version,
  );
  const recoveryMs = Date.now() - killedAt;
  console.info(
    `controller ${oldLeader} SIGKILLed: linearizable metadata served again after ${recoveryMs} ms`,
  );
  const newLeader = await agreedLeader([oldLeader]);
  cluster.start("controller", oldLeader);
  await cluster.waitForHealth({ timeoutMs: 30_000, only: [{ role: "controller", id: oldLeader }] });
  return { oldLeader, newLeader, recoveryMs };
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "tern-controller-it-"));
  const basePort = await freeBasePort({ controllers: 4, brokers: 0, coordinators: 0 });
  cluster = await startCluster({
    dataDir,
    controllers: 3,
    brokers: 0,
    coordinators: 0,
    basePort,
    healthTimeoutMs: 60_000,
    env: {
      TERN_LOG_LEVEL: "warn",
      TERN_NODE_LEASE_MS: String(LEASE_MS),
      TERN_REPLACE_DEAD_AFTER_MS: String(REPLACE_AFTER_MS),
      TERN_LIVENESS_CHECK_MS: "200",
      TERN_WATCH_KEEPALIVE_MS: "500",
      TERN_OFFSETS_PARTITIONS: "10",
    },
  });
  controllers = parsePeers(cluster.controllers, "controllers");
  client = new ControllerClient({ controllers, logger, requestTimeoutMs: 3_000, attemptsMax: 20 });
  broker0 = startNodeMembership({
    client,
    nodeId: 0,
    role: "broker",
    address: "127.0.0.1:1",
    logger,
    heartbeatIntervalMs: 300,
    scheduler: systemRuntime().clock,
    random: systemRuntime().random,
  });
  await waitFor("broker 0 registered", 30_000, async () =>
    broker0.registered() ? true : undefined,
  );
});

afterEach((ctx) => {
  if (ctx.task.result?.state === "fail") failures += 1;
});

afterAll(async () => {
  broker0?.stop();
  client?.close();
  await cluster?.stop({ termTimeoutMs: 5_000 });
  // Kept on failure: the process logs are under <dataDir>/logs.
  if (dataDir && failures === 0) rmSync(dataDir, { recursive: true, force: true });
  else if (dataDir) console.error(`controller test data and logs kept in ${dataDir}`);
});

describe("controller quorum (real processes)", () => {
  it("elects one leader that every controller agrees on, and serves metadata from any of them", async () => {
    const leader = await agreedLeader();
    expect(controllers.map((c) => c.id)).toContain(leader);
    for (const c of controllers) {
      const s = await client.describeCluster(c.id);
      expect(s.voters.filter((v) => v.voter).map((v) => v.nodeId)).toEqual([0, 1, 2]);
    }
    const m = await client.metadata();
    expect(m.controllerLeader).toBe(leader);
    expect(m.controllers?.map((c) => c.id)).toEqual([0, 1, 2]);
  });

  it("answers each invalid request with its code and a message, changing nothing", async () => {
    const registration = {
      nodeId: 0,
      role: "broker" as const,
      address: "127.0.0.1:1",
      incarnation: "not-the-live-one",
    };
    const before = await client.metadata({ linearizable: true });
    const bad = await client.createTopics([
      { name: "", partitions: 1, replicationFactor: 1 },
      { name: "has space", partitions: 1, replicationFactor: 1 },
      { name: "zero", partitions: 0, replicationFactor: 1 },
      { name: "too-many-replicas", partitions: 1, replicationFactor: 2 },
      {
        name: "bad-config",
        partitions: 1,
        replicationFactor: 1,
        config: { "retention.ms": "forever" },
      },
    ]);
    expect(bad.map((r) => r.error?.errorName)).toEqual([
      "INVALID_TOPIC_EXCEPTION",
      "INVALID_TOPIC_EXCEPTION",
      "INVALID_PARTITIONS",
      "INVALID_REPLICATION_FACTOR",
      "INVALID_CONFIG",
    ]);
    for (const r of bad) expect(r.error!.message.length).toBeGreaterThan(10);
    const deleted = await client.deleteTopics(["no-such-topic"]);
    expect(deleted[0]!.error?.errorName).toBe("UNKNOWN_TOPIC_OR_PARTITION");
    const dup = await client.registerNode(registration).catch((e: unknown) => e);
    expect(isTernError(dup, "DUPLICATE_BROKER_REGISTRATION")).toBe(true);
    const after = await client.metadata({ linearizable: true });
    expect(after.version).toBe(before.version);
    expect(after.topics).toEqual(before.topics);
    // An existing topic is refused as a duplicate.
    expect(
      (await client.createTopics([{ name: "dup", partitions: 1, replicationFactor: 1 }]))[0]!.error,
    ).toBeUndefined();
    expect(
      (await client.createTopics([{ name: "dup", partitions: 1, replicationFactor: 1 }]))[0]!.error
        ?.errorName,
    ).toBe("TOPIC_ALREADY_EXISTS");
  });

  it("sees its own writes in admin reads, serves Metadata on a follower, names the leader in NOT_CONTROLLER", async () => {
    const leader = await agreedLeader();
    const follower = controllers.find((c) => c.id !== leader)!;
    expect(
      (await client.createTopics([{ name: "visible", partitions: 2, replicationFactor: 1 }]))[0]!
        .error,
    ).toBeUndefined();
    const described = await client.describeTopics(["visible", "missing"]);
    expect(described[0]!.topic?.partitions).toHaveLength(2);
    expect(described[1]!.error?.errorName).toBe("UNKNOWN_TOPIC_OR_PARTITION");
    expect(await client.listTopics()).toContain("visible");
    const { client: Ctor } = controllerProto();
    const raw = new Ctor(
      `${follower.host}:${follower.port}`,
      grpc.credentials.createInsecure(),
    ) as any;
    try {
      // A request already forwarded once is never forwarded again: the follower refuses it.
      const md = new grpc.Metadata();
      md.set("tern-forwarded", "99");
      const err = await new Promise<grpc.ServiceError>((resolve, reject) =>
        raw.AllocateProducerIds(
          { nodeId: 1 },
          md,
          { deadline: Date.now() + 5_000 },
          (e: grpc.ServiceError | null) => (e ? resolve(e) : reject(new Error("accepted"))),
        ),
      );
      expect(fromGrpcError(err).errorName).toBe("NOT_CONTROLLER");
      expect(err.metadata.get("tern-controller-leader-id")[0]).toBe(String(leader));
      const leaderPeer = controllers.find((c) => c.id === leader)!;
      expect(err.metadata.get("tern-controller-leader-address")[0]).toBe(
        `${leaderPeer.host}:${leaderPeer.port}`,
      );
      // Without the header the follower forwards and the write succeeds.
      const ok = await new Promise<any>((resolve, reject) =>
        raw.AllocateProducerIds(
          { nodeId: 1 },
          new grpc.Metadata(),
          { deadline: Date.now() + 5_000 },
          (e: unknown, res: unknown) => (e ? reject(e) : resolve(res)),
        ),
      );
      expect(ok.error.code).toBe("NONE");
      expect(ok.count).toBe(1000);
      // Metadata is answered by the follower itself, with the leader it follows.
      const view = await new Promise<any>((resolve, reject) =>
        raw.Metadata(
          { linearizable: false },
          md,
          { deadline: Date.now() + 5_000 },
          (e: unknown, res: unknown) => (e ? reject(e) : resolve(res)),
        ),
      );
      expect(view.metadata.controllerLeader).toBe(leader);
    } finally {
      raw.close();
    }
  });

  it("hands leadership over on SIGTERM of the leader and exits 0", async () => {
    const leader = await agreedLeader();
    const versionBefore = (await client.metadata({ linearizable: true })).version;
    cluster.kill("controller", leader, "SIGTERM");
    expect(await cluster.waitForExit("controller", leader, 15_000)).toBe(true);
    const exit = await waitFor(
      "the exit code",
      5_000,
      async () => cluster.processes().find((p) => p.role === "controller" && p.id === leader)?.exit,
    );
    expect(exit).toBe(0);
    const next = await agreedLeader([leader], 10_000);
    expect(next).not.toBe(leader);
    expect(
      BigInt((await client.metadata({ linearizable: true })).version) >= BigInt(versionBefore),
    ).toBe(true);
    cluster.start("controller", leader);
    await cluster.waitForHealth({ timeoutMs: 30_000, only: [{ role: "controller", id: leader }] });
  });

  it("keeps every acknowledged topic when the leader is SIGKILLed during creation", async () => {
    const acknowledged: string[] = [];
    let running = true;
    const creator = (async () => {
      for (let i = 0; running && i < 200; i++) {
        const name = `t-${i}`;
        try {
          const [r] = await client.createTopics([{ name, partitions: 1, replicationFactor: 1 }]);
          if (!r!.error || r!.error.errorName === "TOPIC_ALREADY_EXISTS") acknowledged.push(name);
        } catch {
          // not acknowledged: may or may not exist
        }
      }
    })();
    await waitFor("some topics created", 10_000, async () =>
      acknowledged.length >= 5 ? true : undefined,
    );
    const { recoveryMs } = await killAndRestartLeader();
    await waitFor("more topics after failover", 20_000, async () =>
      acknowledged.length >= 15 ? true : undefined,
    );
    running = false;
    await creator;
    expect(recoveryMs).toBeLessThan(RECOVERY_MS_MAX);
    const m = await client.metadata({ linearizable: true });
    const names = new Set(m.topics.map((t) => t.name));
    expect(acknowledged.filter((n) => !names.has(n))).toEqual([]);
    // Every controller (including the restarted one) converges on the same view.
    const version = m.version;
    for (const c of controllers) {
      await waitFor(`controller ${c.id} applied version ${version}`, 15_000, async () =>
        BigInt((await client.describeCluster(c.id)).metadataVersion) >= BigInt(version)
          ? true
          : undefined,
      );
    }
  });

  it("never hands out a producer id twice across repeated leader failovers", async () => {
    const blocks: Array<{ first: bigint; count: number }> = [];
    let running = true;
    // Bounded by time, not by a small count: a fast quorum used up 2,000 calls before the last
    // failover, and the test then waited for allocations that could no longer come.
    const allocatorDeadline = Date.now() + ALLOCATOR_MS_MAX;
    const allocator = (async () => {
      for (let i = 0; running && i < ALLOCATIONS_MAX && Date.now() < allocatorDeadline; i++) {
        try {
          const b = await client.allocateProducerIds(7);
          blocks.push({ first: b.firstProducerId, count: b.count });
        } catch {
          // not acknowledged
          await sleep(POLL_MS);
        }
      }
    })();
    const FAILOVERS = 3;
    for (let f = 0; f < FAILOVERS; f++) {
      const seen = blocks.length;
      await waitFor("allocations between failovers", 20_000, async () =>
        blocks.length >= seen + 3 ? true : undefined,
      );
      await killAndRestartLeader();
    }
    const seen = blocks.length;
    await waitFor("allocations after the last failover", 20_000, async () =>
      blocks.length >= seen + 3 ? true : undefined,
    );
    running = false;
    await allocator;
    process.stdout.write(
      `producer-id blocks allocated across ${FAILOVERS} failovers: ${blocks.length}\n`,
    );
    expect(blocks.length).toBeGreaterThan(FAILOVERS * 3);
    const sorted = [...blocks].sort((a, b) => (a.first < b.first ? -1 : 1));
    for (let i = 1; i < sorted.length; i++) {
      expect(sorted[i]!.first >= sorted[i - 1]!.first + BigInt(sorted[i - 1]!.count)).toBe(true);
    }
    for (const b of blocks) expect(b.count).toBe(1000);
  });

  it("re-places a dead broker's replicas on the remaining brokers and pushes it to watchers", async () => {
    const members: NodeMembership[] = [];
    for (let id = 0; id < 4; id++) {
      members.push(
        startNodeMembership({
          client,
          nodeId: 10 + id,
          role: "broker",
          address: `127.0.0.1:${5000 + id}`,
          logger,
          heartbeatIntervalMs: 300,
          scheduler: systemRuntime().clock,
          random: systemRuntime().random,
        }),
      );
    }
    const views: ClusterMetadata[] = [];
    const stopWatch = client.watchMetadata((m) => views.push(m));
    try {
      const live = (m: ClusterMetadata) =>
        m.nodes.filter((n) => n.role === "broker" && n.alive && n.nodeId >= 10).length;
      await waitFor("4 live brokers", 15_000, async () =>
        live(await client.metadata()) === 4 ? true : undefined,
      );
      const [created] = await client.createTopics([
        { name: "replicated", partitions: 8, replicationFactor: 3 },
      ]);
      expect(created!.error).toBeUndefined();
      // The first of our brokers hosting something; stop its heartbeats: it dies.
      const hosts = (m: ClusterMetadata, id: number) =>
        m.topics
          .filter((t) => t.role === "broker")
          .flatMap((t) => t.partitions)
          .filter((p) => p.replicas.includes(id));
      const victim = 13;
      expect(hosts(await client.metadata({ linearizable: true }), victim).length).toBeGreaterThan(
        0,
      );
      members[3]!.stop();
      const final = await waitFor("the dead broker's replicas re-placed", 30_000, async () => {
        const m = await client.metadata({ linearizable: true });
        const dead = m.nodes.find((n) => n.role === "broker" && n.nodeId === victim);
        return dead && !dead.alive && hosts(m, victim).length === 0 ? m : undefined;
      });
      const topic = final.topics.find((t) => t.name === "replicated")!;
      for (const p of topic.partitions) {
        expect(new Set(p.replicas).size).toBe(3);
        expect(p.replicas.every((id) => [0, 10, 11, 12].includes(id))).toBe(true);
      }
      await waitFor("a watcher sees the re-placement", 10_000, async () =>
        views.some(
          (v) => v.topics.some((t) => t.name === "replicated") && hosts(v, victim).length === 0,
        )
          ? true
          : undefined,
      );
    } finally {
      stopWatch();
      for (const m of members) m.stop();
    }
  });
});
