#!/usr/bin/env node
// Fails the build on an import cycle between files (a file that, through its imports, imports
// itself: load order then decides which module sees the other half-initialised, and the two
// can no longer be understood or tested apart), on an import across a folder boundary that
// must point one way only (FOLDER_RULES), and on an import of a component's internals from
// outside it (COMPONENT_ENTRIES). Imports are read with the TypeScript scanner
// (ts.preProcessFile: import, export-from, import()), type-only ones included: a type cycle is
// the same knot at design level. `node scripts/lint-import-cycles.mjs [root]`.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { createRequire } from "node:module";

const DIRS = ["libs", "services", "cli", "scripts", "test"];
/**
 * [from, to]: no file under folder `from` imports a file under folder `to` (the other direction
 * is the allowed one). Unit tests (*.test.ts) may reach across: they are not part of what a
 * folder ships.
 */
const FOLDER_RULES = [
  ["cli", "scripts"],
  ["scripts", "test"],
  ["libs", "services"],
  ["libs", "cli"],
  ["services", "cli"],
  // The group coordinator is a component of its own: it needs libs/ and its ports, not its host.
  ["services/group", "services/broker"],
  ["services/group", "services/kafka"],
];
/**
 * [folder, entry]: files outside `folder` import it through `entry` only; the rest is internal.
 * Unit tests may reach in, as above.
 */
const COMPONENT_ENTRIES = [["services/group", "services/group/index.ts"]];

const root = resolve(process.argv[2] ?? new URL("..", import.meta.url).pathname);
const require = createRequire(import.meta.url);
const ts = require("typescript");

function* files(dir) {
  let names;
  try {
    names = readdirSync(dir);
  } catch {
    return; // a folder that does not exist
  }
  for (const name of names) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      if (name !== "node_modules" && name !== "proto-types") yield* files(path);
    } else if (name.endsWith(".ts") && !name.endsWith(".d.ts")) yield path;
  }
}

/** A relative path with "/" separators, the form the rules above are written in. */
const slashed = (path) => path.split(sep).join("/");

/** file (relative to root) -> the files it imports (relative to root), local .ts files only. */
function importGraph() {
  const graph = new Map();
  for (const dir of DIRS)
    for (const file of files(join(root, dir))) {
      const from = slashed(relative(root, file));
      const targets = new Set();
      const { importedFiles } = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
      for (const { fileName } of importedFiles) {
        if (!fileName.startsWith(".")) continue;
        const target = slashed(relative(root, resolve(dirname(file), fileName))).replace(
          /\.js$/,
          ".ts",
        );
        if (target.endsWith(".ts")) targets.add(target);
      }
      graph.set(from, targets);
    }
  for (const targets of graph.values())
    for (const t of targets) if (!graph.has(t)) targets.delete(t);
  return graph;
}

/** Strongly connected components of more than one file, or a file importing itself (Tarjan). */
function cycles(graph) {
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const found = [];
  let next = 0;
  const visit = (start) => {
    // Iterative: a deep import chain must not overflow the stack.
    const work = [[start, [...graph.get(start)][Symbol.iterator]()]];
    index.set(start, next);
    low.set(start, next++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const [node, edges] = work[work.length - 1];
      const edge = edges.next();
      if (!edge.done) {
        const to = edge.value;
        if (!index.has(to)) {
          index.set(to, next);
          low.set(to, next++);
          stack.push(to);
          onStack.add(to);
          work.push([to, [...graph.get(to)][Symbol.iterator]()]);
        } else if (onStack.has(to)) low.set(node, Math.min(low.get(node), index.get(to)));
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1][0];
        low.set(parent, Math.min(low.get(parent), low.get(node)));
      }
      if (low.get(node) !== index.get(node)) continue;
      const component = [];
      let member;
      do {
        member = stack.pop();
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1 || graph.get(node).has(node)) found.push(component.sort());
    }
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

/** file is in folder (both relative to root, "/"-separated). */
const under = (file, folder) => file.startsWith(`${folder}/`);

const graph = importGraph();
const problems = cycles(graph).map((c) =>
  c.length === 1
    ? `import cycle: ${c[0]} imports itself`
    : `import cycle between ${c.length} files: ${c.join(", ")}`,
);
for (const [from, targets] of graph)
  if (!from.endsWith(".test.ts"))
    for (const to of targets) {
      for (const [a, b] of FOLDER_RULES)
        if (under(from, a) && under(to, b))
          problems.push(`${from} imports ${to}: ${a}/ must not import ${b}/`);
      for (const [folder, entry] of COMPONENT_ENTRIES)
        if (under(to, folder) && to !== entry && !under(from, folder))
          problems.push(`${from} imports ${to}: import ${folder}/ through ${entry} only`);
    }
if (problems.length > 0) {
  console.error(problems.join("\n"));
  process.exit(1);
}
console.error(`import cycles: ok (${graph.size} files in ${DIRS.join(", ")})`);
