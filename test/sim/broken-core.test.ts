// The simulator's checker against deliberately broken Raft cores, plugged in through
// SimOptions.createCore and driven by the raft host's own pipeline (HostGroup, ReadyPipeline):
// a core that commits without a quorum and one that votes twice in a term must each be caught,
// while the real core on the same seeds and plans passes (so the catch is the bug's, not the plan's).
import { describe, expect, it } from "vitest";
import type { Random } from "../../libs/common/prng.js";
import { RawNode } from "../../libs/raft/raw-node.js";
import {
  MessageType,
  NONE,
  type Message,
  type RaftConfig,
  type RaftStorage,
} from "../../libs/raft/types.js";
import { runSimulation, type SimOptions } from "../../libs/sim/simulation.js";

/** The parts of raft.ts's Raft the broken cores reach into (private there, hence the casts). */
interface RaftInternals {
  term: number;
  vote: number;
  lead: number;
  log: { lastIndex(): number; maybeCommit(index: number, term: number): boolean };
  maybeCommit(): boolean;
  handleVoteRequest(m: Message): void;
}

function internals(core: RawNode): RaftInternals {
  return (core as unknown as { raft: RaftInternals }).raft;
}

/** A leader that counts its own log as committed: acknowledges entries no quorum holds. */
function commitsWithoutQuorum(config: RaftConfig, storage: RaftStorage, random: Random): RawNode {
  const core = new RawNode(config, storage, random);
  const raft = internals(core);
  raft.maybeCommit = () => raft.log.maybeCommit(raft.log.lastIndex(), raft.term);
  return core;
}

/** A voter that forgets whom it voted for when a second candidate of the same term asks. */
function votesTwice(config: RaftConfig, storage: RaftStorage, random: Random): RawNode {
  const core = new RawNode(config, storage, random);
  const raft = internals(core);
  const handle = raft.handleVoteRequest.bind(raft);
  raft.handleVoteRequest = (m) => {
    if (m.type === MessageType.Vote && m.term === raft.term && raft.vote !== m.from) {
      raft.vote = NONE;
      raft.lead = NONE;
    }
    handle(m);
  };
  return core;
}

// Seeds whose schedules contest elections enough for a double vote to decide one (seed 2 stopped
// doing so when its first leader began campaigning at once: campaignSoon).
const SEEDS = [1, 3, 4, 5, 6];
/** No membership changes: the durability check compares against a fixed set of voters. */
const PLAN: SimOptions["planOverride"] = {
  membershipRate: 0,
  raft: { preVote: false, checkQuorum: false },
};

function run(seed: number, createCore?: SimOptions["createCore"]) {
  return runSimulation({
    seed,
    nodes: 5,
    steps: 1000,
    planOverride: PLAN,
    ...(createCore ? { createCore } : {}),
  });
}

describe("the safety checker catches a broken core", () => {
  it("the real core passes on these seeds and plans", () => {
    for (const seed of SEEDS) expect(run(seed).violation, `seed ${seed}`).toBeUndefined();
  });

  it("a core that commits without a quorum fails the durability check", () => {
    for (const seed of SEEDS) {
      const r = run(seed, commitsWithoutQuorum);
      expect(r.ok, `seed ${seed}`).toBe(false);
      expect(r.violation, `seed ${seed}`).toMatch(/^SimViolation: durability/);
    }
  });

  it("a core that votes twice in a term fails election safety", () => {
    for (const seed of SEEDS) {
      const r = run(seed, votesTwice);
      expect(r.ok, `seed ${seed}`).toBe(false);
      expect(r.violation, `seed ${seed}`).toMatch(/^SimViolation: election safety/);
    }
  });
});
