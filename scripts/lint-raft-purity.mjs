#!/usr/bin/env node
// Fails the build when the pure Raft core (libs/raft) reaches for I/O or ambient nondeterminism:
// timers, level, gRPC, fs, net, Date.now, Math.random, process. The core must replay exactly
// under the simulator, so all of these are injected by the host instead.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const dirs = process.argv.slice(2).length ? process.argv.slice(2) : [join(root, "libs/raft")];
const forbidden = [
  [
    /\bfrom\s+["'](node:)?(fs|fs\/promises|net|http|http2|dgram|child_process|worker_threads|timers|timers\/promises|os|crypto|perf_hooks)["']/,
    "I/O module import",
  ],
  [/\brequire\(\s*["'](node:)?\w+/, "require()"],
  [/\bfrom\s+["'](level|classic-level|@grpc\/[\w-]+|pino|prom-client)["']/, "I/O library import"],
  [/\bimport\(\s*["']/, "dynamic import"],
  [/\bDate\.now\b|\bnew Date\b|\bperformance\.now\b/, "wall clock"],
  [/\bMath\.random\b/, "ambient randomness"],
  [/\b(setTimeout|setInterval|setImmediate|queueMicrotask)\b/, "timer"],
  [/\bprocess\./, "process access"],
];

function* files(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* files(path);
    else if (name.endsWith(".ts") && !name.endsWith(".test.ts")) yield path;
  }
}

const problems = [];
for (const dir of dirs) {
  for (const file of files(dir)) {
    readFileSync(file, "utf8")
      .split("\n")
      .forEach((line, i) => {
        const code = line.replace(/\/\/.*$/, "");
        for (const [pattern, what] of forbidden) {
          if (pattern.test(code))
            problems.push(`${relative(root, file)}:${i + 1}: ${what}: ${line.trim()}`);
        }
      });
  }
}
if (problems.length > 0) {
  console.error(
    `libs/raft must stay pure (no I/O, clock, timers or randomness):\n${problems.join("\n")}`,
  );
  process.exit(1);
}
console.error(`raft purity: ok (${dirs.map((d) => relative(root, d)).join(", ")})`);
