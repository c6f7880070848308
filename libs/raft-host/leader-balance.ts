// Preferred leaders (Kafka's auto.leader.rebalance.enable): a group's preferred leader is the
// first of its placed replicas, and placement spreads those evenly. After a node's failover its
// groups are led elsewhere; once it is back, each node leading a group preferred elsewhere hands
// it over, at a bounded rate, where the preferred node is live (for a while: a node that flaps
// is not given leaders), caught up in the group, and imbalanced: more than `ratioMax` of the
// groups it is preferred for are led by others (Kafka's leader.imbalance.per.broker.percentage).
// Decentralized: every node decides for the groups it leads, from the same metadata view.
import type { NodeId } from "../raft/types.js";

export interface LeaderBalanceOptions {
  /** How often a node looks (default 5 s). */
  readonly intervalMs?: number;
  /** A node counts as back once live in metadata this long (default 10 s). */
  readonly liveForMs?: number;
  /** Imbalance above which a node gets its groups back (default 0.1, Kafka's 10 %). */
  readonly ratioMax?: number;
  /** Leaderships handed over per look, per node (default 500). */
  readonly movesPerRoundMax?: number;
}

export const LEADER_BALANCE_DEFAULTS: Required<LeaderBalanceOptions> = {
  intervalMs: 5_000,
  liveForMs: 10_000,
  ratioMax: 0.1,
  movesPerRoundMax: 500,
};

/** Per node: groups it is the preferred leader of, and how many of those another node leads. */
export interface PreferredCounts {
  preferred: number;
  ledElsewhere: number;
}

/** Kafka's leader imbalance per node, from a metadata view's placements. */
export function preferredCounts(
  placements: Iterable<{ readonly replicas: readonly NodeId[]; readonly leader: NodeId }>,
): Map<NodeId, PreferredCounts> {
  const out = new Map<NodeId, PreferredCounts>();
  for (const p of placements) {
    const preferred = p.replicas[0];
    if (preferred === undefined) continue;
    let c = out.get(preferred);
    if (c === undefined) out.set(preferred, (c = { preferred: 0, ledElsewhere: 0 }));
    c.preferred++;
    if (p.leader !== preferred) c.ledElsewhere++;
  }
  return out;
}

export function imbalanceRatio(c: PreferredCounts | undefined): number {
  return c === undefined || c.preferred === 0 ? 0 : c.ledElsewhere / c.preferred;
}

/** What a node needs to know of a group it leads to hand it to its preferred leader. */
export interface BalanceCandidate {
  /** The group's placed replicas (the first is its preferred leader). */
  readonly placement: { readonly replicas: readonly NodeId[] };
  /** Whether the preferred replica's log matches this leader's (a transfer then takes one round). */
  caughtUp(preferred: NodeId): boolean;
  transferLeadership(to: NodeId): void;
}

/**
 * Hands groups this node leads to their preferred leaders, where those are back (see above);
 * returns how many transfers were asked for (at most movesMax).
 */
export function balanceLeaders(
  selfId: NodeId,
  counts: Map<NodeId, PreferredCounts>,
  isBack: (id: NodeId) => boolean,
  led: Iterable<BalanceCandidate>,
  options: Pick<Required<LeaderBalanceOptions>, "ratioMax" | "movesPerRoundMax">,
): number {
  let moves = 0;
  for (const c of led) {
    if (moves >= options.movesPerRoundMax) break;
    const preferred = c.placement.replicas[0];
    if (preferred === undefined || preferred === selfId) continue;
    if (!isBack(preferred) || imbalanceRatio(counts.get(preferred)) <= options.ratioMax) continue;
    if (!c.caughtUp(preferred)) continue;
    c.transferLeadership(preferred);
    moves++;
  }
  return moves;
}
