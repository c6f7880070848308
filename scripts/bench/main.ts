// `npm run bench -- NAME [options]`: runs the benchmark module dist/scripts/bench/NAME.js (or
// dist/test/bench/NAME.js: the benchmarks built on the test harnesses, which scripts/ does not
// import) by calling its exported run(args). Results are JSON Lines on stdout (docs/operations.md); an
// unknown name lists the available ones on stderr and exits 2.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

export interface BenchModule {
  run(args: string[]): Promise<number | void> | number | void;
}

const EXIT_USAGE = 2;
const here = dirname(fileURLToPath(import.meta.url));
/** Where benchmark modules are: beside this file, and test/bench/ (found by path, not imported). */
const benchDirs = [here, join(here, "..", "..", "test", "bench")];

/** Benchmark names: every NAME.js in benchDirs except the dispatcher and helpers (files starting with "_"). */
function benchNames(): string[] {
  const names = benchDirs
    .flatMap((dir) => (existsSync(dir) ? readdirSync(dir) : []))
    .filter((f) => f.endsWith(".js") && f !== "main.js" && !f.startsWith("_"))
    .map((f) => f.slice(0, -".js".length));
  return [...new Set(names)].sort();
}

/** The module of benchmark `name`, or undefined. */
function benchFile(name: string): string | undefined {
  return benchDirs.map((dir) => join(dir, `${name}.js`)).find((file) => existsSync(file));
}

async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  const names = benchNames();
  const available = names.length > 0 ? names.join(", ") : "(none built yet)";
  if (name === "--help" || name === "-h") {
    process.stdout.write(
      `usage: npm run bench -- NAME [options]; NAME one of: ${available}; npm run bench -- NAME --help describes one\n`,
    );
    return 0;
  }
  const file = name && /^[a-z0-9-]+$/.test(name) ? benchFile(name) : undefined;
  if (!name || file === undefined) {
    const what = name ? `unknown benchmark "${name}"` : "usage: npm run bench -- NAME [options]";
    process.stderr.write(`bench: ${what}; available: ${available}\n`);
    return EXIT_USAGE;
  }
  if (args.includes("--help") || args.includes("-h")) {
    process.stdout.write(headerComment(file));
    return 0;
  }
  const mod = (await import(pathToFileURL(file).href)) as Partial<BenchModule>;
  if (typeof mod.run !== "function") {
    process.stderr.write(`bench: ${name}.js does not export run(args)\n`);
    return EXIT_USAGE;
  }
  try {
    const code = await mod.run(args);
    return typeof code === "number" ? code : 0;
  } catch (e) {
    // A bad option is one line and exit 2; anything else is a failed run (exit 1), still one line.
    const usage =
      typeof (e as { code?: unknown })?.code === "string" &&
      String((e as { code: string }).code).startsWith("ERR_PARSE_ARGS");
    process.stderr.write(
      `bench ${name}: ${(e as Error)?.message ?? String(e)}${usage ? ` (npm run bench -- ${name} --help)` : ""}\n`,
    );
    return usage ? EXIT_USAGE : 1;
  }
}

/** The leading // comment of a benchmark's file: its description and usage. */
function headerComment(file: string): string {
  const lines: string[] = [];
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (!line.startsWith("//")) break;
    lines.push(line.replace(/^\/\/ ?/, ""));
  }
  return `${lines.join("\n")}\n`;
}

// Exit explicitly: a benchmark that leaves a handle open must not keep the process alive.
process.exit(await main(process.argv.slice(2)));
