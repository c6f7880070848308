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

const USAGE = "usage: npm run sim -- [--seed N] [--seeds K] [--nodes 3|5] [--steps S]";
const EXIT_USAGE = 2;

class UsageError extends Error {}

function parseArgs(argv: readonly string[]): Args {
  const args: Args = { seed: 1, seeds: 1, nodes: 3, steps: 1000 };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    const value = Number(argv[i + 1]);
    const key = flag.replace(/^--/, "") as keyof Args;
    if (!(key in args) || !Number.isSafeInteger(value) || value < 0) {
      throw new UsageError(`bad argument ${flag} ${argv[i + 1] ?? ""}`.trimEnd());
    }
    args[key] = value;
    i++;
  }
  if (args.nodes < 1 || args.nodes > 9) throw new UsageError("--nodes must be between 1 and 9");
  if (args.seeds < 1 || args.seeds > SEEDS_MAX)
    throw new UsageError(`--seeds must be between 1 and ${SEEDS_MAX}`);
  return args;
}

function main(): void {
  const argv = process.argv.slice(2);
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(
      `${USAGE}\nRuns K seeds from N (default one seed), one JSON line per run; exit 1 on a violation, with the command that replays it.\n`,
    );
    return;
  }
  let args: Args;
  try {
    args = parseArgs(argv);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    process.stderr.write(`sim: ${e.message} (${USAGE})\n`);
    process.exit(EXIT_USAGE);
  }
  for (let k = 0; k < args.seeds; k++) {
    const seed = args.seed + k;
    const started = performance.now();
    const result = runSimulation({ seed, nodes: args.nodes, steps: args.steps });
    console.log(JSON.stringify({ ...result, ms: Math.round(performance.now() - started) }));
    if (!result.ok) {
      console.error(`SEED=${seed} violation: ${result.violation}`);
      console.error(
        `replay: npm run sim -- --seed ${seed} --nodes ${args.nodes} --steps ${args.steps}`,
      );
      process.exit(1);
    }
  }
}

main();
