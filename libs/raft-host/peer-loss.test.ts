// PeerLossDetector: a peer is reported lost only when both our streams with it broke close
// together (a killed process), or a connect to it was refused after it had been up; once per
// loss, and never while it still opens streams to us.
import { describe, expect, it } from "vitest";
import { PeerLossDetector } from "./peer-loss.js";

function detector(): { d: PeerLossDetector; lost: number[]; clock: { ms: number } } {
  const lost: number[] = [];
  const clock = { ms: 0 };
  return {
    d: new PeerLossDetector(
      1_500,
      (p) => lost.push(p),
      () => clock.ms,
    ),
    lost,
    clock,
  };
}

/** Peer 2 is connected both ways and has been heard. */
function connected(d: PeerLossDetector): void {
  d.incomingOpened(2);
  d.heard(2);
}

describe("PeerLossDetector", () => {
  it("reports a peer whose outgoing and incoming streams both break, in either order, once", () => {
    for (const outFirst of [true, false]) {
      const { d, lost, clock } = detector();
      connected(d);
      clock.ms = 10_000;
      if (outFirst) d.outgoingBroken(2);
      else d.incomingClosed(2);
      expect(lost).toEqual([]);
      d.heard(2); // a frame it sent before dying, read late: does not cancel the break
      clock.ms += 400;
      if (outFirst) d.incomingClosed(2);
      else d.outgoingBroken(2);
      expect(lost).toEqual([2]);
      // Reconnect attempts are refused again and again: still one report.
      for (let i = 0; i < 5; i++) {
        clock.ms += 100;
        d.outgoingBroken(2);
      }
      expect(lost).toEqual([2]);
    }
  });

  it("does not report a peer that still has a stream to us, or breaks far apart", () => {
    const { d, lost, clock } = detector();
    connected(d);
    d.outgoingBroken(2); // our stream broke, its stream to us is fine (a live peer)
    clock.ms += 10_000;
    d.heard(2);
    expect(lost).toEqual([]);
    d.incomingClosed(2); // ten seconds later its stream closes: not the same event
    expect(lost).toEqual([]);
  });

  it("a new incoming stream cancels a pending break; a peer never heard from is not armed", () => {
    const { d, lost, clock } = detector();
    d.outgoingBroken(3);
    d.incomingClosed(3);
    expect(lost).toEqual([]); // never heard from 3
    connected(d);
    d.outgoingBroken(2);
    d.incomingOpened(2); // it reconnected to us: alive
    d.incomingClosed(2); // one of its two streams closes; the broken outgoing is forgotten
    clock.ms += 10;
    expect(lost).toEqual([]);
  });

  it("re-arms only after a frame heard a window after the report (a flapping peer reports at most once per window)", () => {
    const { d, lost, clock } = detector();
    connected(d);
    const flap = (): void => {
      d.outgoingBroken(2);
      d.incomingClosed(2);
      clock.ms += 100;
      d.incomingOpened(2);
      d.heard(2);
    };
    flap();
    expect(lost).toEqual([2]);
    for (let i = 0; i < 10; i++) flap(); // 1 s of flapping
    expect(lost).toEqual([2]);
    clock.ms += 1_500;
    d.heard(2);
    flap();
    expect(lost).toEqual([2, 2]);
  });

  it("a refused connect reports a peer known to be up, whatever its other stream did", () => {
    // Heard from (its stream to us existed), then gone: the restarted node whose own stream to
    // the victim had ended long before (--back-to-back failover).
    const { d, lost, clock } = detector();
    connected(d);
    d.outgoingBroken(2, true);
    clock.ms += 10_000;
    d.incomingClosed(2); // far apart from the break: not the two-break rule
    expect(lost).toEqual([]);
    clock.ms += 50;
    d.refused(2);
    expect(lost).toEqual([2]);
    d.refused(2); // every retry is refused too: one report
    expect(lost).toEqual([2]);
  });

  it("our connected stream arms a peer that never sent us a frame", () => {
    // The victim never reopened its stream to the restarted node: only ours proves it was up.
    const { d, lost } = detector();
    d.outgoingBroken(2, true);
    d.refused(2);
    expect(lost).toEqual([2]);
  });

  it("a refused connect to a peer never up, or one still streaming to us, is not a loss", () => {
    const { d, lost } = detector();
    d.outgoingBroken(3); // a connect that never got through (a peer not started yet)
    d.refused(3);
    expect(lost).toEqual([]);
    connected(d); // 2 has a stream open to us: alive, our address for it may be stale
    d.refused(2);
    expect(lost).toEqual([]);
  });
});
