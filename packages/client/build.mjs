#!/usr/bin/env node
// Assembles the @tern/client package (docs/sdk.md): generates the contract's types, compiles
// libs/client/index.ts and everything it imports with declarations into dist/, copies the
// .proto files the client loads at run time into proto/, then checks that the client stands
// alone (no module of libs/server or services/ compiled in) and that every package the
// compiled code imports is a declared dependency with the same range as the repository's
// package.json. Needs only `npm install` at the repository root; `npm pack` runs it (prepack).
import { execFileSync } from "node:child_process";
import { cpSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { builtinModules } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const packageDir = dirname(fileURLToPath(import.meta.url));
const repoRoot = join(packageDir, "..", "..");
const require = createRequire(join(repoRoot, "package.json"));
const tsc = require.resolve("typescript/bin/tsc");

function run(args) {
  execFileSync(process.execPath, args, {
    cwd: packageDir,
    stdio: ["ignore", "inherit", "inherit"],
  });
}

function* files(dir, suffix) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* files(path, suffix);
    else if (name.endsWith(suffix)) yield path;
  }
}

/** Bare package names the compiled code imports ("@scope/name" or "name"), node: builtins left out. */
function importedPackages(dir) {
  const names = new Set();
  const bare = /(?:from\s+|import\(\s*)"([^".][^"]*)"/g;
  for (const file of files(dir, ".js")) {
    for (const [, spec] of readFileSync(file, "utf8").matchAll(bare)) {
      if (spec.startsWith("node:") || builtinModules.includes(spec)) continue;
      names.add(
        spec
          .split("/")
          .slice(0, spec.startsWith("@") ? 2 : 1)
          .join("/"),
      );
    }
  }
  return [...names].sort();
}

function checkDependencies() {
  const declared =
    JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8")).dependencies ?? {};
  const repo = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")).dependencies ?? {};
  const imported = importedPackages(join(packageDir, "dist"));
  const problems = [];
  for (const name of imported) {
    if (!(name in declared))
      problems.push(`${name} is imported but not in packages/client/package.json dependencies`);
    else if (declared[name] !== repo[name])
      problems.push(`${name}: range ${declared[name]} differs from the repository's ${repo[name]}`);
  }
  for (const name of Object.keys(declared))
    if (!imported.includes(name)) problems.push(`${name} is a dependency but nothing imports it`);
  if (problems.length > 0)
    throw new Error(`packages/client dependencies:\n  ${problems.join("\n  ")}`);
}

/** The SDK shares libs/grpc with the services, never the server runtime or a service. */
function checkStandsAlone() {
  const dist = join(packageDir, "dist");
  const serverSide = [...files(dist, ".js")]
    .map((file) => file.slice(dist.length + 1))
    .filter((file) => file.startsWith(join("libs", "server")) || file.startsWith("services"));
  if (serverSide.length > 0)
    throw new Error(`packages/client compiles server modules in:\n  ${serverSide.join("\n  ")}`);
}

rmSync(join(packageDir, "dist"), { recursive: true, force: true });
rmSync(join(packageDir, "proto"), { recursive: true, force: true });
run([join(repoRoot, "scripts", "gen-proto-types.mjs")]);
run([tsc, "-p", join(packageDir, "tsconfig.json")]);
cpSync(join(repoRoot, "proto"), join(packageDir, "proto"), {
  recursive: true,
  filter: (src) => statSync(src).isDirectory() || src.endsWith(".proto"),
});
checkStandsAlone();
checkDependencies();
console.log(
  `@tern/client built: ${[...files(join(packageDir, "dist"), ".js")].length} modules, proto/ copied`,
);
