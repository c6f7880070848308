// Node-level liveness for quiesced groups, as the raft host's transport provides it: every node
// beats to every peer every `beatEveryTicks` (any delivered message counts too), each beat
// carrying the sender's incarnation (bumped on every restart). A receiver reports a peer down
// to its core (reportNodeDown) on every tick it has not heard from it for an election timeout,
// and once when it hears a new incarnation. Deterministic: no randomness, only the partition
// state decides whether a beat arrives.
import type { NodeId } from "../raft/types.js";

export interface LivenessNode {
  readonly id: NodeId;
  readonly incarnation: number;
  /** Undefined while the node is down. */
  readonly core: { reportNodeDown(id: NodeId): void } | undefined;
}

interface Heard {
  tick: number;
  incarnation: number;
}

export class SimLiveness {
  /** heard.get(receiver).get(sender) */
  private readonly heard = new Map<NodeId, Map<NodeId, Heard>>();
  /** Reports made (for the stats: the model is not vacuous). */
  reports = 0;

  constructor(
    private readonly timeoutTicks: number,
    private readonly beatEveryTicks: number,
  ) {}

  /** A Raft message from `from` reached `to`: the transport saw a frame from that node. */
  onDelivered(to: NodeId, from: NodeId, now: number): void {
    const h = this.heard.get(to)?.get(from);
    if (h) h.tick = now;
  }

  /** One tick: beats over unblocked links between up nodes, then lapse checks. */
  tick(
    nodes: readonly LivenessNode[],
    now: number,
    blocked: (from: NodeId, to: NodeId) => boolean,
  ): void {
    if (now % this.beatEveryTicks === 0) {
      for (const from of nodes) {
        if (!from.core) continue;
        for (const to of nodes) {
          if (to === from || !to.core || blocked(from.id, to.id)) continue;
          this.beat(to, from, now);
        }
      }
    }
    for (const to of nodes) {
      if (!to.core) continue;
      const seen = this.heard.get(to.id);
      for (const from of nodes) {
        if (from === to) continue;
        const h = seen?.get(from.id);
        if (h === undefined || now - h.tick > this.timeoutTicks) this.report(to, from.id);
      }
    }
  }

  /** A node restarted: it has heard from nobody yet. */
  forget(id: NodeId): void {
    this.heard.delete(id);
  }

  private beat(to: LivenessNode, from: LivenessNode, now: number): void {
    let seen = this.heard.get(to.id);
    if (seen === undefined) {
      seen = new Map();
      this.heard.set(to.id, seen);
    }
    const h = seen.get(from.id);
    if (h === undefined) {
      seen.set(from.id, { tick: now, incarnation: from.incarnation });
      return;
    }
    h.tick = now;
    if (h.incarnation !== from.incarnation) {
      h.incarnation = from.incarnation;
      this.report(to, from.id);
    }
  }

  private report(to: LivenessNode, id: NodeId): void {
    this.reports++;
    to.core!.reportNodeDown(id);
  }
}
