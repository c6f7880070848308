// The simulator over many seeds (swarm testing across 3- and 5-node clusters) and the
// exactness of replay. A failure message carries SEED=n and the replay command.
import { describe, expect, it } from "vitest";
import { runSimulation, type SimResult } from "../../libs/sim/simulation.js";

const SEEDS_PER_SIZE = 300;
const STEPS = 1000;

function runMany(
  nodes: number,
  firstSeed: number,
  count: number,
): { failures: SimResult[]; acked: number; crashes: number; leaders: number } {
  const failures: SimResult[] = [];
  let acked = 0;
  let crashes = 0;
  let leaders = 0;
  for (let seed = firstSeed; seed < firstSeed + count; seed++) {
    const r = runSimulation({ seed, nodes, steps: STEPS });
    if (!r.ok) failures.push(r);
    acked += r.stats.acked;
    crashes += r.stats.crashes;
    leaders += r.stats.leaders;
  }
  return { failures, acked, crashes, leaders };
}

function describeFailures(failures: SimResult[]): string {
  return failures
    .map(
      (f) =>
        `SEED=${f.seed} (${f.violation}) replay: npm run sim -- --seed ${f.seed} --nodes ${f.nodes} --steps ${f.steps}`,
    )
    .join("\n");
}

describe("simulator", () => {
  for (const nodes of [3, 5]) {
    it(`${SEEDS_PER_SIZE} seeds on ${nodes} nodes keep every safety property and recover`, () => {
      const { failures, acked, crashes, leaders } = runMany(nodes, 1, SEEDS_PER_SIZE);
      expect(failures, describeFailures(failures)).toEqual([]);
      // The runs did real work under real faults (guards against a vacuous simulator).
      expect(acked).toBeGreaterThan(SEEDS_PER_SIZE * 50);
      expect(crashes).toBeGreaterThan(SEEDS_PER_SIZE / 2);
      expect(leaders).toBeGreaterThan(SEEDS_PER_SIZE * 2);
    });
  }

  it("replays a seed exactly (same trace hash) and different seeds differ", () => {
    const a = runSimulation({ seed: 4242, nodes: 5, steps: STEPS });
    const b = runSimulation({ seed: 4242, nodes: 5, steps: STEPS });
    const c = runSimulation({ seed: 4243, nodes: 5, steps: STEPS });
    expect(b.traceHash).toBe(a.traceHash);
    expect(b.stats).toEqual(a.stats);
    expect(c.traceHash).not.toBe(a.traceHash);
  });
});
