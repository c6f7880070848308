// `npm run bench -- NAME [options]`: runs the benchmark module dist/scripts/bench/NAME.js by
// calling its exported run(args). Results are JSON Lines on stdout (docs/operations.md); an
// unknown name lists the available ones on stderr and exits 2.
import { existsSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

export interface BenchModule {
  run(args: string[]): Promise<number | void> | number | void;
}

const EXIT_USAGE = 2;
const here = dirname(fileURLToPath(import.meta.url));

/** Benchmark names: every NAME.js beside this file except the dispatcher and helpers (files starting with "_"). */
function benchNames(): string[] {
  return readdirSync(here)
    .filter((f) => f.endsWith(".js") && f !== "main.js" && !f.startsWith("_"))
    .map((f) => f.slice(0, -".js".length))
    .sort();
}

async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  const names = benchNames();
  if (!name || name === "--help" || name === "-h" || !/^[a-z0-9-]+$/.test(name) || !existsSync(join(here, `${name}.js`))) {
    const what = name && name !== "--help" && name !== "-h" ? `unknown benchmark "${name}"` : "usage: npm run bench -- NAME [options]";
    process.stderr.write(`bench: ${what}; available: ${names.length > 0 ? names.join(", ") : "(none built yet)"}\n`);
    return EXIT_USAGE;
  }
  const mod = (await import(pathToFileURL(join(here, `${name}.js`)).href)) as Partial<BenchModule>;
  if (typeof mod.run !== "function") {
    process.stderr.write(`bench: ${name}.js does not export run(args)\n`);
    return EXIT_USAGE;
  }
  const code = await mod.run(args);
  return typeof code === "number" ? code : 0;
}

// Exit explicitly: a benchmark that leaves a handle open must not keep the process alive.
process.exit(await main(process.argv.slice(2)));
