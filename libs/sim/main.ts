// npm run sim -- [--seed N] [--seeds K] [--nodes 3|5] [--steps S]
// Runs K seeds starting at N (default: one seed), one JSON line per run on stdout; exits 1 on
// the first violation after printing SEED=n and the command that replays it exactly.
import { runSimulation } from "./simulation.js";

interface Args {
  seed: number;
  seeds: number;
  nodes: number;
  steps: number;
}

const SEEDS_MAX = 1_000_000;

function parseArgs(argv: readonly string[]): Args {
  const args: Args = { seed: 1, seeds: 1, nodes: 3, steps: 1000 };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    const value = Number(argv[i + 1]);
    const key = flag.replace(/^--/, "") as keyof Args;
    if (!(key in args) || !Number.isSafeInteger(value) || value < 0) {
      throw new Error(`usage: sim [--seed N] [--seeds K] [--nodes 3|5] [--steps S] (bad argument ${flag} ${argv[i + 1] ?? ""})`);
    }
    args[key] = value;
    i++;
  }
  if (args.nodes < 1 || args.nodes > 9) throw new Error("--nodes must be between 1 and 9");
  if (args.seeds < 1 || args.seeds > SEEDS_MAX) throw new Error(`--seeds must be between 1 and ${SEEDS_MAX}`);
  return args;
}

function main(): void {
  const args = parseArgs(process.argv.slice(2));
  for (let k = 0; k < args.seeds; k++) {
    const seed = args.seed + k;
    const started = performance.now();
    const result = runSimulation({ seed, nodes: args.nodes, steps: args.steps });
    console.log(JSON.stringify({ ...result, ms: Math.round(performance.now() - started) }));
    if (!result.ok) {
      console.error(`SEED=${seed} violation: ${result.violation}`);
      console.error(`replay: npm run sim -- --seed ${seed} --nodes ${args.nodes} --steps ${args.steps}`);
      process.exit(1);
    }
  }
}

main();
