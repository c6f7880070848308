// The 1-in-flight trace breakdown, on a hand-made trace of two proposals.
import { describe, expect, it } from "vitest";
import { parseTrace, traceSteps } from "./_raft-trace-steps.js";

/** One proposal at t (ms): leader 0, followers 1 (faster) and 2. */
function cycle(t: number): string[] {
  const at = (dt: number): string => (t + dt).toFixed(2);
  return [
    `TRACE 0 turn t=${at(0)} round=0 readies=1 committed=0 entries=1 inFlight=false\nTRACE 0 write-start t=${at(0.05)} ops=0 sync=false\nTRACE 0 write-landed t=${at(1.1)} readies=1 writeMs=1.0\nTRACE 0 turn t=${at(1.3)} round=0 readies=1 committed=1 entries=0 inFlight=false\n`,
    `TRACE 1 turn t=${at(0.3)} round=0 readies=1 committed=0 entries=1 inFlight=false\nTRACE 1 write-start t=${at(0.4)} ops=0 sync=false\nTRACE 1 write-landed t=${at(1.0)} readies=1 writeMs=0.6\n`,
    `TRACE 2 turn t=${at(0.35)} round=0 readies=1 committed=0 entries=1 inFlight=false\nTRACE 2 write-start t=${at(0.45)} ops=0 sync=false\nTRACE 2 write-landed t=${at(1.2)} readies=1 writeMs=0.8\n`,
  ];
}

describe("traceSteps", () => {
  it("follows each proposal from the leader's turn through the fastest follower to the commit turn", () => {
    const [a, b] = [cycle(100), cycle(110)];
    const steps = traceSteps(parseTrace(a!.map((log, i) => `noise\n${log}${b![i]}`)));
    const p = (name: string): number[] => steps.get(name)!.map((ms) => Math.round(ms * 100) / 100);
    expect(p("leader: proposal turn -> commit turn")).toEqual([1.3, 1.3]);
    expect(p("leader turn -> first follower's turn")).toEqual([0.3, 0.3]);
    expect(p("fastest follower: its write")).toEqual([0.6, 0.6]);
    expect(p("fastest follower landed -> leader's commit turn")).toEqual([0.3, 0.3]);
    expect(p("leader's write landed after the fastest follower's (share)")).toEqual([1, 1]);
  });
});
