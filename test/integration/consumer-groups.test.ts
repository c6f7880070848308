// Consumer groups (KIP-848) with real processes (build first: `npx tsc -p tsconfig.json`): a
// local cluster whose brokers use a 3 s group session timeout, and subscribed consumers each
// in its own process (helpers/group-consumer-process.ts) reporting assignments on stdout.
// Three members split a 6-partition topic; one leaves (SIGTERM), one is SIGKILLed (its
// partitions move after the session timeout), one joins (only what it takes is revoked); with
// auto-commit a consumer restarted after a SIGKILL re-reads only what it had not committed;
// the group coordinator SIGKILLed during a rebalance loses no member and the group settles; a
// static member restarted within its session gets its partitions back with no rebalance; a
// member that stops polling for maxPollIntervalMs leaves and rejoins on its next poll.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Admin, Consumer, Producer } from "../../libs/client/index.js";
import { until } from "../../libs/common/poll.js";
import { distRoot } from "../../scripts/cluster/process-control.js";
import { startCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";
import { isBalancedSplit } from "../../scripts/bench/_balanced-split.js";

const SESSION_TIMEOUT_MS = 3_000;
const TOPIC = "events";
const ALL = Array.from({ length: 6 }, (_, p) => `${TOPIC}-${p}`);

let cluster: ProcessCluster;
let dataDir: string;
let bootstrap: string;
const children = new Set<ChildProcess>();

interface Event {
  readonly event: string;
  readonly partitions?: string[];
  readonly tp?: string;
  readonly offset?: string;
  readonly atMs: number;
}

interface Member {
  readonly name: string;
  readonly child: ChildProcess;
  readonly events: Event[];
  owned(): string[];
  exited: Promise<number | string | null>;
}

function startMember(name: string, group: string, topics: string, extra: string[] = []): Member {
  const child = spawn(
    process.execPath,
    [
      join(distRoot(), "test", "integration", "helpers", "group-consumer-process.js"),
      "--bootstrap",
      bootstrap,
      "--group",
      group,
      "--topics",
      topics,
      ...extra,
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  children.add(child);
  const events: Event[] = [];
  let partial = "";
  child.stdout!.on("data", (d: Buffer) => {
    const lines = (partial + d.toString()).split("\n");
    partial = lines.pop()!;
    for (const line of lines)
      if (line.trim())
        events.push({ ...(JSON.parse(line) as Omit<Event, "atMs">), atMs: Date.now() });
  });
  let err = "";
  child.stderr!.on("data", (d: Buffer) => (err = (err + d.toString()).slice(-4000)));
  const exited = new Promise<number | string | null>((r) =>
    child.once("exit", (code, signal) => {
      children.delete(child);
      if (code !== 0 && code !== null)
        process.stderr.write(`member ${name} exited ${code}: ${err}\n`);
      r(code ?? signal);
    }),
  );
  return {
    name,
    child,
    events,
    exited,
    owned: () => [...events].reverse().find((e) => e.event === "owned")?.partitions ?? [],
  };
}

/** True when the members' latest reports are a balanced split of the topic (scripts/bench/_balanced-split.ts). */
const splitAmong = (members: readonly Member[]): boolean =>
  isBalancedSplit(
    members.map((m) => m.owned()),
    ALL,
  );

const settle = (what: string, members: readonly Member[], timeoutMs = 60_000): Promise<true> =>
  until(what, timeoutMs, () => (splitAmong(members) ? true : undefined), { intervalMs: 100 });

function eventsOf(m: Member, kind: string, sinceMs = 0): string[] {
  return m.events
    .filter((e) => e.event === kind && e.atMs >= sinceMs)
    .flatMap((e) => e.partitions ?? [])
    .sort();
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "tern-groups-"));
  cluster = await startCluster({
    dataDir,
    basePort: await freeBasePort(),
    healthTimeoutMs: 120_000,
    env: {
      TERN_LOG_LEVEL: "warn",
      TERN_GROUP_SESSION_TIMEOUT_MS: String(SESSION_TIMEOUT_MS),
      TERN_GROUP_HEARTBEAT_INTERVAL_MS: "300",
    },
  });
  bootstrap = cluster.addresses("controller").join(",");
  const admin = new Admin({ bootstrap });
  for (const r of await admin.createTopics([
    { name: TOPIC, partitions: 6, replicationFactor: 3 },
    { name: "ac", partitions: 2, replicationFactor: 3 },
  ]))
    if (r.error) throw r.error;
  await admin.waitForLeaders([TOPIC, "ac"]);
  await admin.close();
}, 240_000);

afterAll(async () => {
  for (const c of children) c.kill("SIGKILL");
  await cluster?.stop({ termTimeoutMs: 5_000 });
  rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

describe("consumer groups with real processes", () => {
  it("splits 6 partitions over 3 members; moves partitions on leave, SIGKILL (after the session timeout) and join", async () => {
    const a = startMember("a", "g1", TOPIC);
    const b = startMember("b", "g1", TOPIC);
    const c = startMember("c", "g1", TOPIC);
    await settle("a, b and c to split the partitions", [a, b, c]);
    expect([a, b, c].map((m) => m.owned().length)).toEqual([2, 2, 2]);

    // b leaves cleanly: it revokes its partitions, a and c take them.
    const bHad = b.owned();
    b.child.kill("SIGTERM");
    expect(await b.exited).toBe(0);
    expect(eventsOf(b, "revoked")).toEqual(expect.arrayContaining(bHad));
    await settle("a and c to take b's partitions", [a, c]);
    expect(eventsOf(a, "lost").length + eventsOf(c, "lost").length).toBe(0);

    // c is SIGKILLed: its partitions wait for its session to time out, then go to a.
    const cHad = c.owned();
    const killedAt = Date.now();
    c.child.kill("SIGKILL");
    await c.exited;
    await settle("a to take c's partitions after c's session timeout", [a], 60_000);
    const movedAfterMs = Date.now() - killedAt;
    expect(movedAfterMs).toBeGreaterThanOrEqual(SESSION_TIMEOUT_MS - 500);
    expect(a.owned()).toEqual(expect.arrayContaining(cHad));

    // d joins: a gives up exactly what d takes, and only after a revoked it.
    const joinedAt = Date.now();
    const d = startMember("d", "g1", TOPIC);
    await settle("a and d to split the partitions", [a, d]);
    const revokedByA = eventsOf(a, "revoked", joinedAt);
    const assignedToD = eventsOf(d, "assigned");
    expect(revokedByA).toEqual(assignedToD);
    expect(assignedToD.length).toBe(3);
    for (const p of assignedToD) {
      const revokedAt = a.events.find(
        (e) => e.event === "revoked" && e.atMs >= joinedAt && e.partitions!.includes(p),
      )!.atMs;
      const assignedAt = d.events.find(
        (e) => e.event === "assigned" && e.partitions!.includes(p),
      )!.atMs;
      expect(assignedAt).toBeGreaterThanOrEqual(revokedAt);
    }
    process.stderr.write(
      `partitions of a SIGKILLed member moved after ${movedAfterMs} ms (session timeout ${SESSION_TIMEOUT_MS} ms)\n`,
    );
    for (const m of [a, d]) m.child.kill("SIGTERM");
    expect(await Promise.all([a.exited, d.exited])).toEqual([0, 0]);
  }, 240_000);

  it("with auto-commit, a consumer restarted after a SIGKILL re-reads only what it had not committed", async () => {
    const producer = new Producer({ bootstrap, lingerMs: 5 });
    await Promise.all(
      Array.from({ length: 400 }, (_, i) =>
        producer.send({ topic: "ac", partition: i % 2, value: `v${i}` }),
      ),
    );
    await producer.close();
    const slow = ["--max-poll-records", "10", "--poll-delay-ms", "20"];
    const first = startMember("e1", "g2", "ac", [
      "--auto-commit-ms",
      "100",
      "--print-records",
      ...slow,
    ]);
    await until(
      "e1 to read some records",
      60_000,
      () => (first.events.filter((e) => e.event === "record").length >= 150 ? true : undefined),
      { intervalMs: 20 },
    );
    first.child.kill("SIGKILL");
    await first.exited;
    const read = new Map<string, bigint[]>();
    for (const e of first.events)
      if (e.event === "record") read.set(e.tp!, [...(read.get(e.tp!) ?? []), BigInt(e.offset!)]);
    // The dead member's commits are over once its session has timed out (an auto-commit sent
    // just before the kill may still be applying until then): read the group's offsets now.
    const admin = new Admin({ bootstrap });
    try {
      await until("e1's session to time out", 60_000, async () =>
        (await admin.describeGroup("g2")).members.length === 0 ? true : undefined,
      );
    } finally {
      await admin.close();
    }
    const reader = new Consumer({ bootstrap, groupId: "g2" });
    const committed = new Map(
      (
        await reader.committed([
          { topic: "ac", partition: 0 },
          { topic: "ac", partition: 1 },
        ])
      ).map((c) => [`ac-${c.partition}`, c.offset ?? 0n]),
    );
    await reader.close();
    // Auto-commit did commit (part of) what was read.
    expect([...committed.values()].some((o) => o > 0n)).toBe(true);
    for (const [tp, offset] of committed) {
      const seen = read.get(tp) ?? [];
      // Committed only what was returned by poll(): never past the last record read.
      expect(offset).toBeLessThanOrEqual((seen.length > 0 ? seen[seen.length - 1]! : -1n) + 1n);
    }
    const second = startMember("e2", "g2", "ac", ["--auto-commit-ms", "100", "--print-records"]);
    await until(
      "e2 to read to the end",
      90_000,
      () => {
        const last = new Map<string, bigint>();
        for (const e of second.events) if (e.event === "record") last.set(e.tp!, BigInt(e.offset!));
        return last.get("ac-0") === 199n && last.get("ac-1") === 199n ? true : undefined;
      },
      { intervalMs: 50 },
    );
    for (const tp of ["ac-0", "ac-1"]) {
      const again = second.events
        .filter((e) => e.event === "record" && e.tp === tp)
        .map((e) => BigInt(e.offset!));
      // It starts exactly at the committed offset: what it re-reads is what e1 had not committed.
      expect(again[0]).toBe(committed.get(tp));
      const reRead = again.filter((o) => (read.get(tp) ?? []).includes(o)).length;
      const uncommitted = (read.get(tp) ?? []).filter((o) => o >= committed.get(tp)!).length;
      expect(reRead).toBe(uncommitted);
      process.stderr.write(
        `${tp}: e1 read ${(read.get(tp) ?? []).length}, committed ${committed.get(tp)}, e2 re-read ${reRead}\n`,
      );
    }
    second.child.kill("SIGTERM");
    expect(await second.exited).toBe(0);
    const check = new Consumer({ bootstrap, groupId: "g2" });
    const final = await check.committed([
      { topic: "ac", partition: 0 },
      { topic: "ac", partition: 1 },
    ]);
    await check.close();
    // Closing commits what it read, before it leaves.
    expect(final.map((f) => f.offset)).toEqual([200n, 200n]);
  }, 240_000);

  it("settles after the group coordinator is SIGKILLed during a rebalance, losing no member or epoch", async () => {
    const x = startMember("x", "g3", TOPIC);
    const y = startMember("y", "g3", TOPIC);
    await settle("x and y to split the partitions", [x, y]);
    const admin = new Admin({ bootstrap });
    try {
      const before = await admin.describeGroup("g3");
      const coordinator = before.coordinator;
      // A join starts a rebalance; the coordinator dies while x and y are revoking.
      const z = startMember("z", "g3", TOPIC);
      await until(
        "the rebalance to start",
        30_000,
        async () =>
          (await admin.describeGroup("g3")).groupEpoch > before.groupEpoch ? true : undefined,
        { intervalMs: 20 },
      );
      expect(cluster.kill("broker", coordinator, "SIGKILL")).toBe(true);
      await cluster.waitForExit("broker", coordinator, 10_000);
      await settle(
        "x, y and z to split the partitions under the new coordinator",
        [x, y, z],
        90_000,
      );
      const after = await until("the new coordinator to describe the group", 60_000, async () => {
        const d = await admin.describeGroup("g3");
        return d.coordinator !== coordinator && d.state === "STABLE" ? d : undefined;
      });
      expect(after.members.length).toBe(3);
      expect(after.groupEpoch).toBeGreaterThan(before.groupEpoch);
      // Nobody was fenced: the members, their ids and epochs survived in the Raft log.
      for (const m of [x, y, z]) expect(eventsOf(m, "lost")).toEqual([]);
      for (const m of before.members)
        expect(after.members.map((a) => a.memberId)).toContain(m.memberId);
      cluster.start("broker", coordinator);
      await cluster.waitForHealth({
        timeoutMs: 60_000,
        only: [{ role: "broker", id: coordinator }],
      });
      for (const m of [x, y, z]) m.child.kill("SIGTERM");
      expect(await Promise.all([x.exited, y.exited, z.exited])).toEqual([0, 0, 0]);
    } finally {
      await admin.close();
    }
  }, 240_000);

  it("a static member restarted within its session timeout gets its partitions back without a rebalance", async () => {
    const a = startMember("sa", "g4", TOPIC);
    const s1 = startMember("s1", "g4", TOPIC, ["--instance-id", "instance-1"]);
    await settle("a dynamic and a static member to split the partitions", [a, s1]);
    const had = s1.owned();
    // Everything a did for the first split happened before s1 could hold its partitions.
    const quietFrom = Date.now();
    const admin = new Admin({ bootstrap });
    try {
      const epochBefore = (await admin.describeGroup("g4")).groupEpoch;
      s1.child.kill("SIGTERM");
      expect(await s1.exited).toBe(0);
      const s2 = startMember("s2", "g4", TOPIC, ["--instance-id", "instance-1"]);
      await settle("the restarted static member to hold its partitions again", [a, s2], 30_000);
      expect(s2.owned()).toEqual(had);
      // The dynamic member saw nothing: no revocation, no assignment, and no group epoch bump.
      expect(eventsOf(a, "revoked", quietFrom)).toEqual([]);
      expect(eventsOf(a, "assigned", quietFrom)).toEqual([]);
      // The static member's place waited for it (its session runs from its leave): no rebalance.
      const after = await admin.describeGroup("g4");
      expect(after.groupEpoch).toBe(epochBefore);
      expect(after.members.find((m) => m.instanceId === "instance-1")?.memberEpoch).toBe(
        epochBefore,
      );
      for (const m of [a, s2]) m.child.kill("SIGTERM");
      expect(await Promise.all([a.exited, s2.exited])).toEqual([0, 0]);
    } finally {
      await admin.close();
    }
  }, 120_000);

  it("a member that does not poll within maxPollIntervalMs leaves; its partitions move; it rejoins when it polls", async () => {
    const a = startMember("pa", "g5", TOPIC);
    const slow = startMember("slow", "g5", TOPIC, [
      "--max-poll-interval-ms",
      "1500",
      "--poll-delay-ms",
      "4000",
    ]);
    await until(
      "the slow member to leave and a to hold every partition",
      60_000,
      () => (a.owned().length === 6 && eventsOf(slow, "lost").length > 0 ? true : undefined),
      { intervalMs: 100 },
    );
    // Its next poll rejoins it (then it leaves again: it keeps polling too slowly).
    const admin = new Admin({ bootstrap });
    try {
      await until(
        "the slow member to rejoin",
        60_000,
        async () => ((await admin.describeGroup("g5")).members.length === 2 ? true : undefined),
        { intervalMs: 50 },
      );
    } finally {
      await admin.close();
    }
    for (const m of [a, slow]) m.child.kill("SIGKILL");
    await Promise.all([a.exited, slow.exited]);
  }, 120_000);
});
