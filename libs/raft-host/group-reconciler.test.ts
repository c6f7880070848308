// The shared reconciler over a real single-node Raft host: it opens the groups placed on this
// node (going on past one that fails to open, which opens on a later pass), reports the
// leaderships metadata does not show, keeps a moved-away group until its removal is applied
// here, and drops the groups of a deleted topic (release before, discard after the host drops).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { silentLogger } from "../common/logger.js";
import { until } from "../common/poll.js";
import type { ClusterMetadata } from "../metadata/types.js";
import { RecordingStateMachine } from "../../test/integration/helpers/raft-recording-state-machine.js";
import { GroupReconciler, type GroupPlacement, type LeaderReport } from "./group-reconciler.js";
import { openRaftHost, type RaftHost } from "./host.js";

const logger = silentLogger();
let host: RaftHost;
let dir: string;
let reconciler: GroupReconciler<string>;
const reports: LeaderReport[] = [];
const events: string[] = [];
let failOpen = new Set<string>();

function view(topic: string | undefined, replicas: number[], leader = -1): ClusterMetadata {
  return {
    version: "1",
    controllerLeader: 0,
    nodes: [{ nodeId: 0, role: "broker", address: "127.0.0.1:1", alive: true, incarnation: "1" }],
    topics:
      topic === undefined
        ? []
        : [
            {
              name: topic,
              internal: false,
              role: "broker",
              config: {},
              partitions: [0, 1, 2].map((p) => ({
                topic,
                partition: p,
                replicas,
                leader,
                leaderTerm: 1,
              })),
            },
          ],
  };
}

function placements(m: ClusterMetadata): GroupPlacement[] {
  return m.topics.flatMap((t) =>
    t.partitions.map((p) => ({
      groupId: `${t.name}/${p.partition}`,
      topic: t.name,
      partition: p.partition,
      replicas: p.replicas,
      leader: p.leader,
      leaderTerm: p.leaderTerm,
    })),
  );
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "tern-group-reconciler-"));
  host = await openRaftHost({
    nodeId: 0,
    dataDir: dir,
    logger,
    tickMs: 10,
    electionTicks: 10,
    heartbeatTicks: 2,
    metrics: false,
  });
  reconciler = new GroupReconciler<string>({
    host,
    nodeId: 0,
    role: "broker",
    logger,
    nowMs: () => performance.now(),
    passIntervalMs: 60_000,
    reportLeaders: async (changes) => void reports.push(...changes),
    hooks: {
      placements,
      open: async (p) => {
        if (failOpen.has(p.groupId)) throw new Error(`cannot open ${p.groupId}`);
        await host.openGroup({
          groupId: p.groupId,
          initialVoters: [...p.replicas],
          stateMachine: new RecordingStateMachine(),
        });
        return p.groupId;
      },
      deleted: (m, groupId) => !m.topics.some((t) => groupId.startsWith(`${t.name}/`)),
      release: (entry) => events.push(`release ${entry} open=${host.group(entry) !== undefined}`),
      discard: (entry) => events.push(`discard ${entry} open=${host.group(entry) !== undefined}`),
    },
  });
}, 30_000);

afterAll(async () => {
  reconciler?.close();
  await host?.close();
  rmSync(dir, { recursive: true, force: true });
});

it("opens past a group that fails to open, and that group on a later pass", async () => {
  failOpen = new Set(["t/1"]);
  await reconciler.update(view("t", [0]));
  expect([reconciler.has("t/0"), reconciler.has("t/1"), reconciler.has("t/2")]).toEqual([
    true,
    false,
    true,
  ]);
  failOpen = new Set();
  await reconciler.update(view("t", [0]));
  expect([...reconciler.entries()].sort()).toEqual(["t/0", "t/1", "t/2"]);
});

it("reports the leaderships metadata does not show yet", async () => {
  await until(
    "every group led here",
    10_000,
    () => ["t/0", "t/1", "t/2"].every((g) => host.group(g)?.isLeader()) || undefined,
    { intervalMs: 10 },
  );
  await reconciler.update(view("t", [0]));
  await until(
    "all three reported",
    10_000,
    () => new Set(reports.map((r) => r.partition)).size === 3 || undefined,
    { intervalMs: 10 },
  );
  expect(reports.every((r) => r.topic === "t" && r.leader === 0 && r.term >= 1)).toBe(true);
});

it("keeps a moved-away group until this replica has applied its removal", async () => {
  await reconciler.update(view("t", [1], 0));
  expect(reconciler.has("t/0")).toBe(true);
  expect(events).toEqual([]);
});

it("drops the groups of a deleted topic: release while open, discard once dropped", async () => {
  await reconciler.update(view(undefined, []));
  expect([...reconciler.entries()]).toEqual([]);
  expect(host.group("t/0")).toBeUndefined();
  expect(events.filter((e) => e.endsWith("t/0 open=true") || e.endsWith("t/0 open=false"))).toEqual(
    ["release t/0 open=true", "discard t/0 open=false"],
  );
});

it("runs the timer's pass over every group only while a pass left work (a failed open)", async () => {
  let passes = 0;
  let failing = true;
  const timed = new GroupReconciler<string>({
    host,
    nodeId: 0,
    role: "broker",
    logger,
    nowMs: () => performance.now(),
    passIntervalMs: 20,
    reportLeaders: async () => undefined,
    hooks: {
      placements: (m) => {
        passes++;
        return placements(m);
      },
      open: async (p) => {
        if (failing && p.groupId === "u/2") throw new Error("cannot open u/2 yet");
        await host.openGroup({
          groupId: p.groupId,
          initialVoters: [...p.replicas],
          stateMachine: new RecordingStateMachine(),
        });
        return p.groupId;
      },
    },
  });
  try {
    await timed.update(view("u", [0]));
    expect(timed.has("u/2")).toBe(false);
    const before = passes;
    await until(
      "a timer pass retried the failed open",
      10_000,
      () => passes > before || undefined,
      {
        intervalMs: 10,
      },
    );
    failing = false;
    await until("u/2 opened by a timer pass", 10_000, () => timed.has("u/2") || undefined, {
      intervalMs: 10,
    });
    const settled = passes;
    // Ten pass intervals with nothing to retry: no pass over the placements.
    await new Promise((r) => setTimeout(r, 200));
    expect(passes).toBe(settled);
  } finally {
    timed.close();
  }
});
