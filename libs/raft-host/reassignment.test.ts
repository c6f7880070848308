import { describe, expect, it } from "vitest";
import type { ConfState, NodeId, PeerProgress } from "../raft/types.js";
import {
  differs,
  planReassignmentStep,
  removalCommittedLocally,
  type PlanInput,
} from "./reassignment.js";

const conf = (voters: NodeId[], learners: NodeId[] = []): ConfState => ({
  voters,
  learners,
  outgoingVoters: [],
});
const pr = (match: number, recentActive = true, isLearner = false): PeerProgress => ({
  match,
  next: match + 1,
  state: "replicate",
  recentActive,
  isLearner,
});

function input(over: Partial<PlanInput>): PlanInput {
  return {
    selfId: 0,
    confState: conf([0, 1, 2]),
    progress: new Map([
      [0, pr(100)],
      [1, pr(100)],
      [2, pr(0, false)],
    ]),
    lastIndex: 100,
    replicas: [0, 1, 3],
    isLive: (id) => id !== 2,
    learnersSupported: false,
    ...over,
  };
}

describe("planReassignmentStep", () => {
  it("removes a dead member that left the replica set before adding its replacement", () => {
    expect(planReassignmentStep(input({}))).toEqual({ kind: "remove", nodeId: 2 });
  });

  it("adds the missing replica as a voter once the dead one is gone (no learner support)", () => {
    const step = planReassignmentStep(
      input({
        confState: conf([0, 1]),
        progress: new Map([
          [0, pr(100)],
          [1, pr(99)],
        ]),
      }),
    );
    expect(step).toEqual({ kind: "add-voter", nodeId: 3 });
  });

  it("waits instead of adding a voter when the caught-up voters would not be a majority of the grown group", () => {
    const step = planReassignmentStep(
      input({
        confState: conf([0, 1]),
        progress: new Map([
          [0, pr(100)],
          [1, pr(2)],
        ]),
      }),
    );
    expect(step.kind).toBe("wait");
  });

  it("adds a learner first, then promotes it only once caught up, when learners are supported", () => {
    const base = { confState: conf([0, 1]), learnersSupported: true };
    expect(planReassignmentStep(input(base))).toEqual({ kind: "add-learner", nodeId: 3 });
    const lagging = input({
      ...base,
      confState: conf([0, 1], [3]),
      progress: new Map([
        [0, pr(100)],
        [1, pr(100)],
        [3, pr(5)],
      ]),
    });
    expect(planReassignmentStep(lagging).kind).toBe("wait");
    const caught = input({
      ...base,
      confState: conf([0, 1], [3]),
      progress: new Map([
        [0, pr(100)],
        [1, pr(100)],
        [3, pr(99)],
      ]),
    });
    expect(planReassignmentStep(caught)).toEqual({ kind: "add-voter", nodeId: 3 });
  });

  it("moves a live replica by adding the new one first and removing the old one after", () => {
    const all = (id: NodeId) => id >= 0;
    const progress = new Map([
      [0, pr(100)],
      [1, pr(100)],
      [2, pr(100)],
    ]);
    expect(planReassignmentStep(input({ isLive: all, progress }))).toEqual({
      kind: "add-voter",
      nodeId: 3,
    });
    const grown = input({
      isLive: all,
      confState: conf([0, 1, 2, 3]),
      progress: new Map([...progress, [3, pr(100)]]),
    });
    expect(planReassignmentStep(grown)).toEqual({ kind: "remove", nodeId: 2 });
  });

  it("transfers leadership before the leader itself leaves, never removes itself", () => {
    const step = planReassignmentStep(
      input({
        selfId: 2,
        isLive: () => true,
        replicas: [0, 1, 3],
        confState: conf([0, 1, 2, 3]),
        progress: new Map([
          [0, pr(90)],
          [1, pr(100)],
          [2, pr(100)],
          [3, pr(100)],
        ]),
      }),
    );
    expect(step.kind).toBe("transfer");
    expect([1, 3]).toContain((step as { to: number }).to);
  });

  it("is done when voters equal the replica set, and ignores a dead replica it cannot add", () => {
    expect(
      planReassignmentStep(
        input({
          confState: conf([0, 1, 3]),
          progress: new Map([
            [0, pr(1)],
            [1, pr(1)],
            [3, pr(1)],
          ]),
        }),
      ),
    ).toEqual({ kind: "done" });
    const deadTarget = planReassignmentStep(
      input({ confState: conf([0, 1]), replicas: [0, 1, 2] }),
    );
    expect(deadTarget).toEqual({ kind: "done" }); // nothing to do until it lives again
  });
});

describe("removalCommittedLocally / differs", () => {
  it("allows dropping only once the local configuration excludes this node", () => {
    expect(removalCommittedLocally(conf([0, 1, 3]), 2)).toBe(true);
    expect(removalCommittedLocally(conf([0, 1, 2]), 2)).toBe(false);
    expect(removalCommittedLocally(conf([0, 1], [2]), 2)).toBe(false);
    expect(removalCommittedLocally(conf([]), 2)).toBe(false);
  });

  it("compares voters with the replica set as sets, learners count as unfinished", () => {
    expect(differs(conf([0, 1, 3]), [3, 0, 1])).toBe(false);
    expect(differs(conf([0, 1, 2]), [0, 1, 3])).toBe(true);
    expect(differs(conf([0, 1, 3], [4]), [0, 1, 3])).toBe(true);
  });
});
