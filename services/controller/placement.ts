// Replica placement: pure functions of (live nodes, current load). Each replica goes to the
// node with the fewest replicas (preferred leaders: the fewest preferred leaderships), ties
// broken by node id, so spreading is even and deterministic on every replica of the
// controller. Racks are honoured: a partition's replicas use distinct racks while an unused
// rack has a candidate, as in Kafka's rack-aware assignment.
import { assert } from "../../libs/common/assert.js";

export interface PlacementNode {
  readonly nodeId: number;
  readonly rack?: string;
}

export interface NodeLoad {
  replicas: number;
  /** Partitions whose preferred leader (replicas[0]) is this node. */
  leaders: number;
}

/** Load per node id over a set of replica lists; nodes without replicas are absent. */
export function loadOf(replicaSets: Iterable<readonly number[]>): Map<number, NodeLoad> {
  const load = new Map<number, NodeLoad>();
  for (const replicas of replicaSets) {
    replicas.forEach((id, i) => {
      const l = load.get(id) ?? { replicas: 0, leaders: 0 };
      l.replicas += 1;
      if (i === 0) l.leaders += 1;
      load.set(id, l);
    });
  }
  return load;
}

function loadFor(load: Map<number, NodeLoad>, id: number): NodeLoad {
  let l = load.get(id);
  if (!l) {
    l = { replicas: 0, leaders: 0 };
    load.set(id, l);
  }
  return l;
}

/**
 * Picks one node among candidates not in `chosen`, preferring racks not used by `chosen`.
 * asLeader ranks by preferred-leader count first. Returns undefined when no candidate is left.
 */
function pickNode(
  nodes: readonly PlacementNode[],
  chosen: readonly number[],
  load: Map<number, NodeLoad>,
  asLeader: boolean,
): PlacementNode | undefined {
  const chosenSet = new Set(chosen);
  const usedRacks = new Set(
    nodes.filter((n) => chosenSet.has(n.nodeId) && n.rack !== undefined).map((n) => n.rack),
  );
  const free = nodes.filter((n) => !chosenSet.has(n.nodeId));
  if (free.length === 0) return undefined;
  const freshRack = free.filter((n) => n.rack === undefined || !usedRacks.has(n.rack));
  const pool = freshRack.length > 0 ? freshRack : free;
  let best: PlacementNode | undefined;
  for (const n of pool) {
    if (best === undefined || compare(n, best, load, asLeader) < 0) best = n;
  }
  return best;
}

function compare(
  a: PlacementNode,
  b: PlacementNode,
  load: Map<number, NodeLoad>,
  asLeader: boolean,
): number {
  const la = load.get(a.nodeId) ?? { replicas: 0, leaders: 0 };
  const lb = load.get(b.nodeId) ?? { replicas: 0, leaders: 0 };
  if (asLeader && la.leaders !== lb.leaders) return la.leaders - lb.leaders;
  if (la.replicas !== lb.replicas) return la.replicas - lb.replicas;
  return a.nodeId - b.nodeId;
}

/**
 * Replica lists for `partitions` new partitions of `replicationFactor` each; replicas[0] is
 * the preferred leader. `load` is updated in place (so several topics can be placed in a row).
 */
export function placePartitions(
  nodes: readonly PlacementNode[],
  load: Map<number, NodeLoad>,
  partitions: number,
  replicationFactor: number,
): number[][] {
  assert(
    replicationFactor >= 1 && replicationFactor <= nodes.length,
    () => `replication factor ${replicationFactor} with ${nodes.length} nodes`,
  );
  assert(partitions >= 1, "at least one partition");
  const sorted = [...nodes].sort((a, b) => a.nodeId - b.nodeId);
  const out: number[][] = [];
  for (let p = 0; p < partitions; p++) {
    const replicas: number[] = [];
    for (let r = 0; r < replicationFactor; r++) {
      const node = pickNode(sorted, replicas, load, r === 0);
      assert(node !== undefined, "a free node exists while replicas < nodes");
      replicas.push(node.nodeId);
      const l = loadFor(load, node.nodeId);
      l.replicas += 1;
      if (r === 0) l.leaders += 1;
    }
    out.push(replicas);
  }
  return out;
}

/**
 * A partition's replica list with the replicas on `gone` nodes replaced by live nodes. The
 * surviving replicas keep their order (the first survivor becomes the preferred leader);
 * replacements are appended. A gone replica is kept when no live node is free for it, so the
 * list never shrinks below what it was. `load` is updated in place.
 */
export function replaceReplicas(
  replicas: readonly number[],
  gone: ReadonlySet<number>,
  liveNodes: readonly PlacementNode[],
  load: Map<number, NodeLoad>,
): number[] {
  const survivors = replicas.filter((id) => !gone.has(id));
  const removed = replicas.filter((id) => gone.has(id));
  if (removed.length === 0) return [...replicas];
  const sorted = [...liveNodes].sort((a, b) => a.nodeId - b.nodeId);
  const result = [...survivors];
  const kept: number[] = [];
  for (const deadId of removed) {
    // Exclude every current member (survivors, picks, and dead ones still kept) from candidates.
    const node = pickNode(sorted, [...result, ...kept, ...removed], load, result.length === 0);
    if (node === undefined) {
      kept.push(deadId);
      continue;
    }
    result.push(node.nodeId);
    const l = loadFor(load, node.nodeId);
    l.replicas += 1;
    if (result.length === 1) l.leaders += 1;
    const dl = load.get(deadId);
    if (dl) dl.replicas = Math.max(0, dl.replicas - 1);
  }
  // Nothing could be replaced: keep the list exactly as it was (no spurious metadata change).
  if (kept.length === removed.length) return [...replicas];
  return [...result, ...kept];
}
