// Quiescence with real processes: 3 raft-node-process processes, 12 groups. Once idle, every
// group quiesces (no Raft work at all: the hosts' turn counters stop). A proposal to a quiesced
// group commits promptly; then the process leading the most groups is SIGKILLed, and the
// quiesced followers (election clocks stopped) must elect new leaders for all of its groups
// within a bound, woken only by node-level liveness (its beats stop). Restarted, it rejoins and
// every group quiesces again with one leader in every node's view.
// Needs the build: npx tsc -p tsconfig.json (the test runs dist/test/integration/helpers/raft-node-process.js).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { until } from "../../libs/common/poll.js";
import { RaftProcessCluster } from "./helpers/raft-cluster.js";

const GROUPS = 12;
const GROUP_IDS = Array.from({ length: GROUPS }, (_, i) => `g/${i}`);
const TICK_MS = 50;
const ELECTION_TICKS = 20; // 1 s
const ELECTION_MS = TICK_MS * ELECTION_TICKS;
/** Quiet for this long (several idle heartbeat intervals) means no group heartbeats any more. */
const QUIET_MS = 3 * ELECTION_MS;
/**
 * Kill -> new leaders everywhere: liveness lapse (1 election timeout) + campaign (< 1) + pre-vote
 * and vote rounds, with ample slack for a loaded 2-core machine.
 */
const FAILOVER_BOUND_MS = 12 * ELECTION_MS;
/** A proposal to a quiesced group: one fsync on a majority (~10-300 ms here), with slack for a loaded machine. */
const PROPOSE_BOUND_MS = 5 * ELECTION_MS;

const baseDir = mkdtempSync(join(tmpdir(), "raft-quiesce-it-"));
let cluster: RaftProcessCluster | undefined;

afterAll(async () => {
  await cluster?.stop();
  rmSync(baseDir, { recursive: true, force: true });
});

type Turns = { turns: number };

async function turns(c: RaftProcessCluster, ids: readonly number[]): Promise<number[]> {
  return Promise.all(
    ids.map(async (id) => (await c.get<{ turns: Turns }>(id, "/status")).turns.turns),
  );
}

/** Polls until no listed process ran a single Raft turn for QUIET_MS: every group is quiesced. */
async function waitQuiesced(
  c: RaftProcessCluster,
  ids: readonly number[],
  timeoutMs: number,
): Promise<void> {
  let last = await turns(c, ids);
  let quietSinceMs = Date.now();
  await until(
    "every group quiesced (no Raft turns)",
    timeoutMs,
    async () => {
      const now = await turns(c, ids);
      if (now.some((t, i) => t !== last[i])) {
        last = now;
        quietSinceMs = Date.now();
        return undefined;
      }
      return Date.now() - quietSinceMs >= QUIET_MS || undefined;
    },
    { intervalMs: 100, fatal: () => true },
  );
}

describe("raft-host quiescence: 3 processes x 12 groups", () => {
  it("idle groups stop all Raft work, a proposal commits promptly, and a SIGKILLed leader's groups fail over", async () => {
    cluster = await RaftProcessCluster.start({
      baseDir,
      groups: GROUPS,
      tickMs: TICK_MS,
      electionTicks: ELECTION_TICKS,
      heartbeatTicks: 2,
    });
    const c = cluster;
    await c.waitForLeaders(GROUP_IDS, 60_000);
    await waitQuiesced(c, [1, 2, 3], 60_000);
    // Read after quiescing: a leadership that moved meanwhile would fail the proposal below.
    const leaders = await c.waitForLeaders(GROUP_IDS, 60_000);

    // A proposal wakes the quiesced group and commits at once.
    const group = GROUP_IDS[0]!;
    const startMs = Date.now();
    const r = await c.post<{ acked: string[]; failed: unknown[] }>(
      leaders.get(group)!,
      "/propose",
      { group, payloads: ["after-quiet"] },
      10_000,
    );
    const proposeMs = Date.now() - startMs;
    expect(r.acked).toEqual(["after-quiet"]);
    expect(proposeMs).toBeLessThan(PROPOSE_BOUND_MS);
    await waitQuiesced(c, [1, 2, 3], 60_000);

    // SIGKILL the node leading the most groups; its followers are quiesced.
    const byNode = new Map<number, string[]>();
    for (const [g, id] of await c.leaders()) byNode.set(id, [...(byNode.get(id) ?? []), g]);
    const victim = [...byNode.entries()].sort((a, b) => b[1].length - a[1].length)[0]![0];
    const orphaned = byNode.get(victim)!;
    const survivors = [1, 2, 3].filter((id) => id !== victim);
    const termsBefore = await c.status(survivors[0]!);
    const killedMs = Date.now();
    await c.kill(victim);
    const after = await c.waitForLeaders(GROUP_IDS, FAILOVER_BOUND_MS);
    const failoverMs = Date.now() - killedMs;
    console.error(
      `raft quiescence IT: propose on a quiesced group ${proposeMs} ms; ${orphaned.length} groups of node ${victim} failed over in ${failoverMs} ms`,
    );
    for (const g of orphaned) {
      expect(survivors).toContain(after.get(g));
      expect((await c.status(after.get(g)!))[g]!.term).toBeGreaterThan(termsBefore[g]!.term);
    }
    // And the survivors' groups still take writes.
    const g2 = orphaned[0]!;
    const r2 = await c.post<{ acked: string[] }>(
      after.get(g2)!,
      "/propose",
      { group: g2, payloads: ["after-failover"] },
      10_000,
    );
    expect(r2.acked).toEqual(["after-failover"]);

    // The victim restarts (a new incarnation): every group settles and quiesces again, and the
    // restarted node knows every group's leader and has applied what the others applied.
    await c.restart(victim);
    await waitQuiesced(c, [1, 2, 3], 60_000);
    const views = await Promise.all([1, 2, 3].map((id) => c.status(id)));
    for (const g of GROUP_IDS) {
      const leader = views.map((v) => v[g]!.leader);
      expect(new Set(leader).size, `${g}: leaders seen ${leader.join(",")}`).toBe(1);
      expect(survivors).toContain(leader[0]);
      const applied = views.map((v) => v[g]!.applied);
      expect(new Set(applied).size, `${g}: applied ${applied.join(",")}`).toBe(1);
    }
  });
});
