// The raft host's hard connection-loss signal (libs/raft-host/peer-loss.ts) as a simulator
// fault: when a node crashes, each other node hears reportNodeLost(crashed) after a random
// delay (possibly after the crashed node restarted, or never: a missed signal), and during the
// fault phase any node may hear a spurious one about a live peer. Raft may only change timing
// on it, so every safety property must hold whatever these signals say and whenever they come.
import type { Random } from "../common/prng.js";
import type { NodeId } from "../raft/types.js";

export interface PeerLossPlan {
  /** Chance per tick (fault phase) of a spurious report about a live peer. 0 with the model off. */
  readonly spuriousRate: number;
  /** Reports of a crash arrive 0..delayTicksMax ticks late. */
  readonly delayTicksMax: number;
  /** Chance that one survivor never hears of a crash. */
  readonly missRate: number;
  /** The model is on for this seed. */
  readonly enabled: boolean;
}

export interface PeerLossNode {
  readonly id: NodeId;
  /** Undefined while the node is down. */
  readonly core: { reportNodeLost(id: NodeId): void } | undefined;
}

/** Reports not yet delivered: a few per crash, bounded all the same. */
const PENDING_MAX = 1_024;

export class SimPeerLoss {
  private pending: Array<{ at: number; to: NodeId; lost: NodeId }> = [];
  /** Reports delivered (crash-driven and spurious): the model is not vacuous. */
  reports = 0;
  spurious = 0;

  constructor(
    private readonly random: Random,
    readonly plan: PeerLossPlan,
  ) {}

  /** Node `crashed` went down at `now`: schedule the survivors' reports. */
  onCrash(crashed: NodeId, nodes: readonly PeerLossNode[], now: number): void {
    if (!this.plan.enabled) return;
    for (const n of nodes) {
      if (n.id === crashed || n.core === undefined || this.random.bool(this.plan.missRate))
        continue;
      if (this.pending.length >= PENDING_MAX) return;
      this.pending.push({
        at: now + this.random.int(0, this.plan.delayTicksMax + 1),
        to: n.id,
        lost: crashed,
      });
    }
  }

  /** One tick: due reports, then (fault phase only) maybe one spurious report. */
  tick(nodes: readonly PeerLossNode[], now: number, faultsOn: boolean): void {
    if (!this.plan.enabled) return;
    if (this.pending.length > 0) {
      const due = this.pending.filter((p) => p.at <= now);
      this.pending = this.pending.filter((p) => p.at > now);
      for (const p of due) this.report(nodes, p.to, p.lost);
    }
    if (faultsOn && nodes.length > 1 && this.random.bool(this.plan.spuriousRate)) {
      const to = this.random.pick(nodes);
      const others = nodes.filter((n) => n.id !== to.id);
      this.spurious++;
      this.report(nodes, to.id, this.random.pick(others).id);
    }
  }

  private report(nodes: readonly PeerLossNode[], to: NodeId, lost: NodeId): void {
    const core = nodes.find((n) => n.id === to)?.core;
    if (core === undefined) return;
    this.reports++;
    core.reportNodeLost(lost);
  }
}
