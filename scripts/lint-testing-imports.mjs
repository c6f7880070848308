#!/usr/bin/env node
// Fails the build when shipped code imports a test fake: `testing/` folders (next to the code
// they stand in for) hold fakes and harnesses for tests only, and the image leaves them out
// (.dockerignore), so only *.test.ts files, test/ and other testing/ files may import them.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const dirs = ["libs", "services", "cli", "scripts"].map((d) => join(root, d));
const importsTesting =
  /\bfrom\s+["'][^"']*\/testing\/[^"']*["']|\bimport\(\s*["'][^"']*\/testing\//;

function* files(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      if (name !== "testing" && name !== "node_modules") yield* files(path);
    } else if (name.endsWith(".ts") && !name.endsWith(".test.ts")) yield path;
  }
}

const problems = [];
for (const dir of dirs) {
  let entries;
  try {
    entries = [...files(dir)];
  } catch {
    continue; // a folder that does not exist (yet)
  }
  for (const file of entries) {
    readFileSync(file, "utf8")
      .split("\n")
      .forEach((line, i) => {
        if (importsTesting.test(line.replace(/\/\/.*$/, "")))
          problems.push(`${relative(root, file)}:${i + 1}: ${line.trim()}`);
      });
  }
}
if (problems.length > 0) {
  console.error(
    `shipped code must not import testing/ folders (the image leaves them out):\n${problems.join("\n")}`,
  );
  process.exit(1);
}
console.error(`testing imports: ok (${dirs.map((d) => relative(root, d)).join(", ")})`);
