// Node-level liveness for quiesced groups (docs/raft-performance.md, "Quiescence"). A quiesced
// group sends nothing, so its followers learn that the leader's node is alive from the
// transport instead: every frame from a node counts, and an empty frame goes to each peer that
// got nothing for `beatEveryTicks`. A node silent for `timeoutTicks` (an election timeout), or
// one whose frames carry a new incarnation (it restarted), is reported down to every quiesced
// group, which wakes: followers of it campaign as they would have without quiescence, leaders
// resume heartbeats and check-quorum. One frame per peer per interval, whatever the groups.
// A hard connection loss (peer-loss.ts) goes to every group, quiesced or not: followers of the
// lost node campaign within a few ticks (Raft reportNodeLost).
import type { NodeId, RaftNode } from "../raft/types.js";
import type { RaftTransport } from "./transport.js";

export interface LivenessGroup {
  readonly node: RaftNode;
}

export class NodeLiveness {
  constructor(
    private readonly transport: RaftTransport,
    private readonly beatEveryTicks: number,
    private readonly timeoutTicks: number,
  ) {}

  /** Once per host tick, before the groups tick. */
  tick<G extends LivenessGroup>(
    tickCount: number,
    groups: Iterable<G>,
    wake: (g: G) => void,
  ): void {
    this.transport.clockTicks = tickCount;
    this.transport.beat(this.beatEveryTicks);
    const silent = this.transport.silentPeers(this.timeoutTicks);
    // Usually empty; while a peer is down, a cheap no-op per group that is not quiesced.
    for (const id of silent) this.nodeDown(id, groups, wake);
  }

  /** Reports id down to every quiesced group; groups that wake are handed to wake(). */
  nodeDown<G extends LivenessGroup>(id: NodeId, groups: Iterable<G>, wake: (g: G) => void): void {
    for (const g of groups) {
      const node = g.node;
      if (node.isQuiesced?.() !== true) continue;
      node.reportNodeDown?.(id);
      if (!node.isQuiesced()) wake(g);
    }
  }
}

/** Both our connections to node id broke: every group hears it; quiesced ones that wake go to wake(). */
export function reportNodeLost<G extends LivenessGroup>(
  id: NodeId,
  groups: Iterable<G>,
  wake: (g: G) => void,
): void {
  for (const g of groups) {
    const node = g.node;
    const quiesced = node.isQuiesced?.() === true;
    node.reportNodeLost?.(id);
    if (quiesced && node.isQuiesced?.() !== true) wake(g);
  }
}
