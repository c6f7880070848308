// Hard connection loss of a peer (docs/raft-performance.md, "Crash failover"). A SIGKILLed
// process's sockets are closed by the kernel at once, so both of our streams with it break
// within milliseconds: the outgoing one (our client call ends) and the incoming one (its
// client call to our server is cancelled). A partitioned or stalled (SIGSTOP) peer breaks
// neither until keepalive gives up, far later than an election timeout. So a peer is lost when
// our outgoing stream to it broke and its last incoming stream closed, both within `windowMs`
// of each other, in either order: frames it sent before dying may still be read in between
// (a busy event loop reads buffered data late), so frames do not cancel a break; only a new
// incoming stream does (a dead process opens none). It is reported once; it re-arms only once
// a frame is heard from it again at least windowMs after the report, so a flapping connection
// or a live peer that keeps talking cannot keep triggering elections. A peer never heard from
// is not armed: a process starting before its peers would otherwise spend its report on them.
// A refused connect is a second proof (a live process never refuses on its listening port;
// SIGSTOP and a partition drop packets, they do not refuse): a peer we know was up (heard from,
// or our stream to it was connected) whose address now refuses is lost, whatever our streams
// did before. That covers the process restarted just before: its stream to the victim may have
// ended earlier, or the victim never reopened its stream to it (`--back-to-back` failover).
// Only timing depends on this (Raft's reportNodeLost): a wrong report costs at most a pre-vote
// that a live leader's other followers refuse.
export class PeerLossDetector {
  private readonly peers = new Map<number, PeerLossState>();

  constructor(
    /** Both breaks must fall within this long; also the least time between two reports (an election timeout). */
    private readonly windowMs: number,
    private readonly onLost: (peer: number) => void,
    private readonly now: () => number = () => performance.now(),
    /** Peers tracked; node ids of one role are few, a flood of fake ones stops here. */
    private readonly peersMax = 4_096,
  ) {}

  /** A frame arrived from peer: arms it (once windowMs passed since its last report). */
  heard(peer: number): void {
    const s = this.state(peer);
    if (s !== undefined) this.arm(s);
  }

  private arm(s: PeerLossState): void {
    if (!s.armed && this.now() - s.lostAtMs >= this.windowMs) s.armed = true;
  }

  /**
   * Our client stream to peer ended (reset, refused, or ended by the peer). `connected`: it had
   * reached the peer (a break, not a failed connect), which proves the peer was up: it arms.
   */
  outgoingBroken(peer: number, connected = false): void {
    const s = this.state(peer);
    if (s === undefined) return;
    s.outBrokenAtMs = this.now();
    if (connected) this.arm(s);
    this.check(peer, s);
  }

  /** A connect to peer was refused: nothing listens at its address any more. */
  refused(peer: number): void {
    const s = this.state(peer);
    // A stream from it still open says it is alive (an address of ours gone stale, say).
    if (s === undefined || !s.armed || s.inOpen > 0) return;
    this.report(peer, s);
  }

  /** A stream from peer to our server started (its first frame named it): the peer is alive. */
  incomingOpened(peer: number): void {
    const s = this.state(peer);
    if (s === undefined) return;
    s.inOpen += 1;
    s.outBrokenAtMs = -Infinity;
    s.inClosedAtMs = -Infinity;
  }

  /** A stream from peer to our server ended or was cancelled. */
  incomingClosed(peer: number): void {
    const s = this.state(peer);
    if (s === undefined) return;
    s.inOpen = Math.max(0, s.inOpen - 1);
    if (s.inOpen === 0) s.inClosedAtMs = this.now();
    this.check(peer, s);
  }

  private check(peer: number, s: PeerLossState): void {
    const now = this.now();
    if (
      !s.armed ||
      s.inOpen > 0 ||
      now - s.outBrokenAtMs > this.windowMs ||
      now - s.inClosedAtMs > this.windowMs
    )
      return;
    this.report(peer, s);
  }

  private report(peer: number, s: PeerLossState): void {
    s.armed = false;
    s.lostAtMs = this.now();
    this.onLost(peer);
  }

  private state(peer: number): PeerLossState | undefined {
    let s = this.peers.get(peer);
    if (s === undefined) {
      if (this.peers.size >= this.peersMax) return undefined;
      s = {
        outBrokenAtMs: -Infinity,
        inClosedAtMs: -Infinity,
        inOpen: 0,
        armed: false,
        lostAtMs: -Infinity,
      };
      this.peers.set(peer, s);
    }
    return s;
  }
}

interface PeerLossState {
  outBrokenAtMs: number;
  inClosedAtMs: number;
  inOpen: number;
  armed: boolean;
  lostAtMs: number;
}
