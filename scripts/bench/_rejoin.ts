// When a restarted (or healed) process has rejoined its Raft groups, read from the processes'
// /metrics (the tern_raft_* gauges): `bench failover` waits for it before the next fault, so that
// every fault hits a healthy cluster (a crash during the previous victim's rejoin is a second
// failure within seconds, measured separately with --back-to-back). Rejoined means:
//   - every replica of every group knows a leader, and all replicas of a group name the same
//     one (a healed old leader that still believes itself leader does not count);
//   - the rejoining replica has applied every group up to the highest commit index any
//     replica reports for it (it heard from the leader: its incoming stream works);
//   - no leader reports it lagging (tern_raft_follower_lag_entries{peer}: the leader got its
//     answers, so its outgoing stream works too).
import { until } from "../../libs/common/poll.js";
import { scrape, type Sample } from "./_storage-probes.js";

const SCRAPE_TIMEOUT_MS = 1_000;
const POLL_MS = 100;

/** One process's view: its node id and its /metrics samples. */
export interface NodeSamples {
  readonly nodeId: number;
  readonly samples: readonly Sample[];
}

/** Per-group gauge of one process: group id → value. */
function groupGauge(samples: readonly Sample[], name: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of samples)
    if (s.name === name && s.labels.group !== undefined) out.set(s.labels.group, s.value);
  return out;
}

/** Why `nodeId` has not rejoined yet, or undefined when it has. */
export function notRejoined(nodeId: number, views: readonly NodeSamples[]): string | undefined {
  const mine = views.find((v) => v.nodeId === nodeId);
  if (mine === undefined) return `node ${nodeId} not scraped`;
  const leaders = new Map<string, Set<number>>();
  const commits = new Map<string, number>();
  for (const v of views) {
    for (const [g, leader] of groupGauge(v.samples, "tern_raft_leader")) {
      if (leader < 0) return `node ${v.nodeId} knows no leader of ${g}`;
      leaders.set(g, (leaders.get(g) ?? new Set()).add(leader));
    }
    for (const [g, commit] of groupGauge(v.samples, "tern_raft_commit_index"))
      commits.set(g, Math.max(commits.get(g) ?? 0, commit));
    const lag = v.samples.find(
      (s) => s.name === "tern_raft_follower_lag_entries" && s.labels.peer === String(nodeId),
    );
    if (lag !== undefined && lag.value > 0)
      return `node ${v.nodeId} leads a group where node ${nodeId} lags ${lag.value} entries`;
  }
  for (const [g, ids] of leaders)
    if (ids.size > 1) return `replicas of ${g} name different leaders (${[...ids].join(", ")})`;
  const applied = groupGauge(mine.samples, "tern_raft_applied_index");
  if (applied.size === 0) return `node ${nodeId} has no group open yet`;
  for (const [g, a] of applied)
    if (a < (commits.get(g) ?? 0))
      return `node ${nodeId} applied ${g} to ${a} of ${commits.get(g)}`;
  return undefined;
}

/** Scrapes every process (metrics address by node id) until `nodeId` has rejoined; answers the ms taken. */
export async function waitForRejoin(
  nodeId: number,
  metricsAddresses: ReadonlyMap<number, string>,
  timeoutMs: number,
): Promise<number> {
  const t0 = performance.now();
  let why = "not scraped yet";
  try {
    await until(
      `node ${nodeId} rejoined`,
      timeoutMs,
      async () => {
        const views: NodeSamples[] = [];
        for (const [id, address] of metricsAddresses) {
          const samples = await scrape(address, SCRAPE_TIMEOUT_MS);
          if (samples === undefined) {
            why = `node ${id} did not answer /metrics`;
            return undefined;
          }
          views.push({ nodeId: id, samples });
        }
        const reason = notRejoined(nodeId, views);
        if (reason !== undefined) why = reason;
        return reason === undefined ? true : undefined;
      },
      { intervalMs: POLL_MS },
    );
  } catch (e) {
    throw new Error(`${(e as Error).message}: ${why}`, { cause: e });
  }
  return performance.now() - t0;
}

/** The term and leader a replica reports for one group, or undefined when it does not host it. */
export function groupView(
  samples: readonly Sample[],
  groupId: string,
): { term: number; leader: number } | undefined {
  const term = groupGauge(samples, "tern_raft_term").get(groupId);
  const leader = groupGauge(samples, "tern_raft_leader").get(groupId);
  return term === undefined || leader === undefined ? undefined : { term, leader };
}
