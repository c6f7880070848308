// Hard connection loss of a peer (docs/raft-performance.md, "Crash failover"). A SIGKILLed
// process's sockets are closed by the kernel at once, so both of our streams with it break
// within milliseconds: the outgoing one (our client call ends) and the incoming one (its
// client call to our server is cancelled). A partitioned or stalled (SIGSTOP) peer breaks
// neither until keepalive gives up, far later than an election timeout. So a peer is lost when,
// since the last frame we heard from it, our outgoing stream broke AND no incoming stream from
// it is open. It is reported once; it re-arms only after a frame is heard from it again and at
// least rearmMs after the last report, so a flapping connection or a live peer that keeps
// talking cannot keep triggering elections. Only timing depends on this (Raft's
// reportNodeLost): a wrong report costs at most a pre-vote that a live leader's followers reject.
export class PeerLossDetector {
  private readonly peers = new Map<number, PeerLossState>();

  constructor(
    private readonly rearmMs: number,
    private readonly onLost: (peer: number) => void,
    private readonly now: () => number = () => performance.now(),
    /** Peers tracked; node ids of one role are few, a flood of fake ones stops here. */
    private readonly peersMax = 4_096,
  ) {}

  /** A frame arrived from peer: it is alive; a later break is a new loss. */
  heard(peer: number): void {
    const s = this.state(peer);
    if (s === undefined) return;
    s.outBroken = false;
    if (!s.armed && this.now() - s.lostAtMs >= this.rearmMs) s.armed = true;
  }

  /** Our client stream to peer ended (reset, refused, or ended by the peer). */
  outgoingBroken(peer: number): void {
    const s = this.state(peer);
    if (s === undefined) return;
    s.outBroken = true;
    this.check(peer, s);
  }

  /** A stream from peer to our server started (its first frame named it). */
  incomingOpened(peer: number): void {
    const s = this.state(peer);
    if (s !== undefined) s.inOpen += 1;
  }

  /** A stream from peer to our server ended or was cancelled. */
  incomingClosed(peer: number): void {
    const s = this.state(peer);
    if (s === undefined) return;
    s.inOpen = Math.max(0, s.inOpen - 1);
    this.check(peer, s);
  }

  private check(peer: number, s: PeerLossState): void {
    // No incoming stream ever opened counts as closed: a peer that never wrote to us.
    if (!s.armed || !s.outBroken || s.inOpen > 0) return;
    s.armed = false;
    s.lostAtMs = this.now();
    this.onLost(peer);
  }

  private state(peer: number): PeerLossState | undefined {
    let s = this.peers.get(peer);
    if (s === undefined) {
      if (this.peers.size >= this.peersMax) return undefined;
      s = { outBroken: false, inOpen: 0, armed: true, lostAtMs: -Infinity };
      this.peers.set(peer, s);
    }
    return s;
  }
}

interface PeerLossState {
  outBroken: boolean;
  inOpen: number;
  armed: boolean;
  lostAtMs: number;
}
