import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { afterEach, describe, expect, it, vi } from "vitest";
import { isTernError } from "../common/errors.js";
import { silentLogger } from "../common/logger.js";
import { RecordingStateMachine } from "../../test/integration/helpers/raft-recording-state-machine.js";
import type { RaftGroup } from "./api.js";
import type { HostGroup } from "./host-group.js";
import { openRaftHost, type RaftHost } from "./host.js";
import type { RaftHostLimits } from "./limits.js";
import { until as poll } from "../common/poll.js";

interface Node {
  id: number;
  dir: string;
  port: number;
  host: RaftHost;
  server: grpc.Server;
  machines: Map<string, RecordingStateMachine>;
}

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** The shared bounded poll (libs/common/poll.ts) on a condition, every 10 ms. */
const until = (what: string, condition: () => boolean, timeoutMs = 10_000): Promise<true> =>
  poll(what, timeoutMs, () => condition() || undefined, { intervalMs: 10 });

async function startNode(
  id: number,
  dir: string,
  port: number,
  limits: Partial<RaftHostLimits> = {},
): Promise<Node> {
  const host = await openRaftHost({
    nodeId: id,
    dataDir: dir,
    logger: silentLogger(),
    tickMs: 10,
    electionTicks: 10,
    heartbeatTicks: 2,
    limits,
    metrics: false,
  });
  const server = new grpc.Server();
  const svc = host.grpcService();
  server.addService(svc.definition, svc.implementation);
  const bound = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  const node: Node = { id, dir, port: bound, host, server, machines: new Map() };
  return node;
}

async function stopNode(n: Node): Promise<void> {
  n.server.forceShutdown();
  await n.host.close();
}

async function cluster(groupIds: string[], limits: Partial<RaftHostLimits> = {}): Promise<Node[]> {
  const nodes: Node[] = [];
  for (const id of [1, 2, 3]) {
    const dir = mkdtempSync(join(tmpdir(), `raft-host-${id}-`));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    nodes.push(await startNode(id, dir, 0, limits));
  }
  cleanups.push(async () => {
    for (const n of nodes) await stopNode(n).catch(() => {});
  });
  await wire(nodes, groupIds);
  return nodes;
}

/** Opens the groups with RecordingStateMachines. */
async function wire(nodes: Node[], groupIds: string[]): Promise<void> {
  for (const n of nodes) {
    for (const m of nodes) if (m.id !== n.id) n.host.setPeerAddress(m.id, `127.0.0.1:${m.port}`);
    for (const g of groupIds) {
      if (n.host.group(g)) continue;
      const sm = new RecordingStateMachine();
      n.machines.set(g, sm);
      await n.host.openGroup({ groupId: g, initialVoters: [1, 2, 3], stateMachine: sm });
    }
  }
}

function leaderOf(nodes: Node[], groupId: string): RaftGroup | undefined {
  return nodes.map((n) => n.host.group(groupId)).find((g) => g?.isLeader());
}

async function proposeSomewhere(nodes: Node[], groupId: string, text: string): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const leader = leaderOf(nodes, groupId);
    if (leader) {
      try {
        await leader.propose(new TextEncoder().encode(text), { timeoutMs: 3_000 });
        return;
      } catch (err) {
        if (!isTernError(err) || !err.retriable) throw err;
      }
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`could not propose ${text} to ${groupId}`);
}

describe("RaftHost (3 hosts in one process)", () => {
  it("elects leaders, replicates proposals and applies the same sequence everywhere", async () => {
    const groups = ["a", "b/0", "b/1"];
    const nodes = await cluster(groups);
    await until("leaders", () => groups.every((g) => leaderOf(nodes, g)));
    for (let i = 0; i < 20; i++)
      await Promise.all(groups.map((g) => proposeSomewhere(nodes, g, `${g}-${i}`)));
    const leader = leaderOf(nodes, "a")!;
    const r = await leader.propose<number>(new TextEncoder().encode("last"));
    expect(r.result).toBe(21);
    await leader.readBarrier();
    for (const g of groups) {
      await until(`all replicas of ${g} applied`, () =>
        nodes.every((n) => n.machines.get(g)!.count === (g === "a" ? 21 : 20)),
      );
      const expected = nodes[0]!.machines.get(g)!.applied;
      for (const n of nodes) expect(n.machines.get(g)!.applied).toEqual(expected);
    }
    expect(nodes[0]!.machines.get("b/1")!.applied.slice(0, 3)).toEqual(["b/1-0", "b/1-1", "b/1-2"]);
  });

  it("commits many groups' appends in shared batches (group commit)", async () => {
    const groups = Array.from({ length: 20 }, (_, i) => `g/${i}`);
    const nodes = await cluster(groups);
    await until("leaders", () => groups.every((g) => leaderOf(nodes, g)));
    const before = nodes.map((n) => ({ ...n.host.turnStats }));
    await Promise.all(
      groups.flatMap((g) =>
        Array.from({ length: 5 }, (_, i) => proposeSomewhere(nodes, g, `${g}-${i}`)),
      ),
    );
    const readies = nodes.reduce(
      (s, n, i) => s + n.host.turnStats.readiesPersisted - before[i]!.readiesPersisted,
      0,
    );
    const writes = nodes.reduce((s, n, i) => s + n.host.turnStats.writes - before[i]!.writes, 0);
    // 100 proposals over 20 groups: each write must carry the Readies of several groups.
    expect(writes).toBeGreaterThan(0);
    expect(readies / writes).toBeGreaterThan(3);
  });

  it("recovers a restarted node from disk and catches it up", async () => {
    const groups = ["r/0", "r/1"];
    const nodes = await cluster(groups);
    await until("leaders", () => groups.every((g) => leaderOf(nodes, g)));
    for (let i = 0; i < 10; i++)
      for (const g of groups) await proposeSomewhere(nodes, g, `${g}-${i}`);
    await until("replicated", () =>
      nodes.every((n) => groups.every((g) => n.machines.get(g)!.count === 10)),
    );
    const victim = nodes[2]!;
    const port = victim.port;
    await stopNode(victim);
    for (let i = 10; i < 15; i++)
      for (const g of groups) await proposeSomewhere(nodes.slice(0, 2), g, `${g}-${i}`);
    const back = await startNode(3, victim.dir, port);
    nodes[2] = back;
    await wire(nodes, groups);
    await until(
      "restarted node caught up",
      () => groups.every((g) => back.machines.get(g)!.count === 15),
      15_000,
    );
    for (const g of groups)
      expect(back.machines.get(g)!.applied).toEqual(nodes[0]!.machines.get(g)!.applied);
  });

  it("snapshots, compacts, and sends a snapshot to a follower that fell behind the log", async () => {
    const limits = { snapshotEntriesInterval: 20, compactionMarginEntries: 5 };
    const nodes = await cluster(["s"], limits);
    await until("leader", () => leaderOf(nodes, "s") !== undefined);
    const victim = nodes.find((n) => !n.host.group("s")!.isLeader())!;
    const idx = nodes.indexOf(victim);
    const port = victim.port;
    await stopNode(victim);
    const live = nodes.filter((n) => n !== victim);
    for (let i = 0; i < 60; i++) await proposeSomewhere(live, "s", `s-${i}`);
    const leader = leaderOf(live, "s")!;
    expect(leader.firstIndex()).toBeGreaterThan(20);
    const back = await startNode(victim.id, victim.dir, port, limits);
    nodes[idx] = back;
    await wire(nodes, ["s"]);
    await until(
      "snapshot installed and caught up",
      () => back.machines.get("s")!.count === 60,
      15_000,
    );
    expect(back.machines.get("s")!.restores).toBeGreaterThan(0);
    expect(back.machines.get("s")!.applied).toEqual(live[0]!.machines.get("s")!.applied);
  });

  it("compacts to applied - compactionMarginEntries and restores the installed snapshot, then its own, after restarts", async () => {
    const limits = { snapshotEntriesInterval: 20, compactionMarginEntries: 5 };
    const nodes = await cluster(["w"], limits);
    await until("leader", () => leaderOf(nodes, "w") !== undefined);
    const victim = nodes.find((n) => !n.host.group("w")!.isLeader())!;
    const idx = nodes.indexOf(victim);
    await stopNode(victim);
    const live = nodes.filter((n) => n !== victim);
    for (let i = 0; i < 100; i++) await proposeSomewhere(live, "w", `w-${i}`);
    const leaderNode = live.find((n) => n.host.group("w")!.isLeader())!;
    const leader = leaderNode.host.group("w")!;
    // Compacted past the follower's log, keeping the margin below the last snapshot (taken at
    // most a snapshot interval, plus an apply batch, ago).
    expect(leader.firstIndex()).toBeGreaterThan(20);
    expect(leader.appliedIndex() - leader.firstIndex()).toBeGreaterThanOrEqual(5 - 1);
    expect(leader.appliedIndex() - leader.firstIndex()).toBeLessThan(20 + 5 + 1);
    const applied = (n: Node): string[] => n.machines.get("w")!.applied;
    expect(applied(leaderNode).at(-1)).toBe("w-99");

    const restart = async (i: number): Promise<Node> => {
      const old = nodes[i]!;
      await stopNode(old);
      const back = await startNode(old.id, old.dir, old.port, limits);
      nodes[i] = back;
      await wire(nodes, ["w"]);
      return back;
    };
    let back = await startNode(victim.id, victim.dir, victim.port, limits);
    nodes[idx] = back;
    await wire(nodes, ["w"]);
    await until(
      "snapshot installed and caught up",
      () => back.machines.get("w")!.lastIndex >= leader.appliedIndex(),
      15_000,
    );
    expect(back.machines.get("w")!.restores).toBeGreaterThan(0);
    expect(applied(back)).toEqual(applied(leaderNode));
    // Restarted before a snapshot of its own: it restores the installed one from disk.
    back = await restart(idx);
    expect(back.machines.get("w")!.restores).toBe(1);
    const installedAt = back.machines.get("w")!.lastIndex;
    await until(
      "caught up after restart",
      () => back.machines.get("w")!.lastIndex >= leader.appliedIndex(),
      15_000,
    );
    expect(applied(back)).toEqual(applied(leaderNode));
    // 25 more entries: it takes a snapshot of its own, and restores that one after a restart.
    for (let i = 100; i < 125; i++) await proposeSomewhere(nodes, "w", `w-${i}`);
    await until(
      "follower applied",
      () => back.machines.get("w")!.lastIndex >= leader.appliedIndex(),
      15_000,
    );
    back = await restart(idx);
    expect(back.machines.get("w")!.restores).toBe(1);
    expect(back.machines.get("w")!.lastIndex).toBeGreaterThan(installedAt);
    await until(
      "caught up after second restart",
      () => back.machines.get("w")!.lastIndex >= leader.appliedIndex(),
      15_000,
    );
    expect(applied(back)).toEqual(applied(leaderNode));
    expect(applied(back).at(-1)).toBe("w-124");
  });

  it("moves leaderships away on transferAllLeaderships", async () => {
    const groups = ["t/0", "t/1", "t/2", "t/3"];
    const nodes = await cluster(groups);
    await until("leaders", () => groups.every((g) => leaderOf(nodes, g)));
    const n = nodes.find((x) => groups.some((g) => x.host.group(g)!.isLeader()))!;
    await n.host.transferAllLeaderships(5_000);
    expect(groups.filter((g) => n.host.group(g)!.isLeader())).toEqual([]);
    await until("new leaders", () => groups.every((g) => leaderOf(nodes, g)));
  });

  it("rejects proposals on a follower with NOT_LEADER_OR_FOLLOWER and the leader hint", async () => {
    const nodes = await cluster(["f"]);
    await until("leader", () => leaderOf(nodes, "f") !== undefined);
    const leaderId = nodes.find((n) => n.host.group("f")!.isLeader())!.id;
    await until("followers know the leader", () =>
      nodes.every((n) => n.host.group("f")!.leader() === leaderId),
    );
    const follower = nodes.find((n) => n.id !== leaderId)!;
    const err = await follower.host
      .group("f")!
      .propose(new Uint8Array([1]))
      .catch((e) => e);
    expect(isTernError(err, "NOT_LEADER_OR_FOLLOWER")).toBe(true);
    expect(err.details.leader).toBe(leaderId);
  });

  it("read barriers asked together share one read index (one heartbeat round)", async () => {
    const nodes = await cluster(["r"]);
    await until("leader", () => leaderOf(nodes, "r") !== undefined);
    const leader = leaderOf(nodes, "r") as HostGroup;
    await leader.propose(new TextEncoder().encode("x"));
    const asked = vi.spyOn(leader.node, "readIndex");
    await Promise.all(Array.from({ length: 50 }, () => leader.readBarrier({ timeoutMs: 5_000 })));
    expect(asked).toHaveBeenCalledTimes(1);
    await leader.readBarrier({ timeoutMs: 5_000 });
    expect(asked).toHaveBeenCalledTimes(2);
  });

  it("a leader cut off from both peers confirms no read barrier", async () => {
    const nodes = await cluster(["c"]);
    await until("leader", () => leaderOf(nodes, "c") !== undefined);
    const leaderNode = nodes.find((n) => n.host.group("c")!.isLeader())!;
    const leader = leaderNode.host.group("c")!;
    await leader.propose(new TextEncoder().encode("x"));
    for (const n of nodes) if (n !== leaderNode) n.server.forceShutdown();
    const reads = Array.from({ length: 3 }, () =>
      leader.readBarrier({ timeoutMs: 300 }).then(
        () => "confirmed",
        (e: unknown) => (isTernError(e) ? e.errorName : String(e)),
      ),
    );
    // Timed out, or refused when check-quorum made it step down first.
    for (const answer of await Promise.all(reads))
      expect(["REQUEST_TIMED_OUT", "NOT_LEADER_OR_FOLLOWER"]).toContain(answer);
  });
});
