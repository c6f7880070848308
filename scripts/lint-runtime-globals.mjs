#!/usr/bin/env node
// Fails the build when services/ or libs/ read the time, set a timer or draw a random number
// from Node's globals (Date.now, setTimeout, setInterval, setImmediate, Math.random) instead of
// the process runtime (libs/runtime/process-runtime.ts), which a simulated run replaces. Tests,
// testing/ folders and the process entries (services/<role>/main.ts) may use them; so may the
// paths in ALLOWED below (the runtime's real implementations first), each with its reason. `--root <dir>` lints another tree
// (the lint's own test).
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, sep } from "node:path";

const rootArg = process.argv.indexOf("--root");
const root = rootArg >= 0 ? process.argv[rootArg + 1] : new URL("..", import.meta.url).pathname;
const dirs = ["services", "libs"];

/** A path (file, or folder ending in /) and why it may use the globals. Keep it short. */
const ALLOWED = [
  ["libs/runtime/system-clock.ts", "the real clock and timers"],
  ["libs/runtime/clock-offset.ts", "the chaos clock-skew seam the real clock reads"],
  ["libs/server/", "the process entry: startup, signals, shutdown, health, TLS reload"],
  ["libs/client/", "the SDK runs in the application's process, on its time"],
  ["libs/grpc/", "shared with the SDK: grpc-js deadlines, health probe, TLS reload"],
  ["libs/common/failpoints.ts", "the chaos hold failpoint waits in real time (test seam)"],
  ["libs/verify/", "the verification workload drives a real cluster in real time"],
  ["libs/raft-host/", "the Raft host has its own seams (pipeline-ports.ts); libs/sim replaces it"],
  ["libs/common/poll.ts", "sleep/poll helpers of tests and tools"],
  ["libs/common/loop-writes.ts", "yields to the event loop between writes (no time read)"],
];

// A bare global (not a method such as socket.setTimeout or clock.setTimeout).
const forbidden =
  /(?<![\w.$])(setTimeout|setInterval|setImmediate)\s*\(|\bDate\.now\b|\bMath\.random\b|(?<![\w.$])globalThis\.(setTimeout|setInterval|setImmediate)\b|["']node:timers(\/promises)?["']/;

/** A method's signature or definition named like a global (Scheduler.setTimeout(...): T). */
const declaration = /^\s*(setTimeout|setInterval|setImmediate)\s*\(.*\)\s*:\s*[\w<>| ]+[;{]\s*$/;

function exempt(path) {
  const rel = path.split(sep).join("/");
  if (rel.endsWith(".test.ts") || rel.includes("/testing/")) return true;
  if (/^services\/[^/]+\/main\.ts$/.test(rel)) return true;
  return ALLOWED.some(([p]) => (p.endsWith("/") ? rel.startsWith(p) : rel === p));
}

function* files(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      if (name !== "node_modules" && name !== "proto-types") yield* files(path);
    } else if (name.endsWith(".ts")) yield path;
  }
}

const problems = [];
for (const dir of dirs) {
  let entries;
  try {
    entries = [...files(join(root, dir))];
  } catch {
    continue; // a folder that does not exist
  }
  for (const file of entries) {
    const rel = relative(root, file);
    if (exempt(rel)) continue;
    readFileSync(file, "utf8")
      .split("\n")
      .forEach((line, i) => {
        const code = line.replace(/\/\/.*$/, "").replace(/^\s*\*.*$/, "");
        if (forbidden.test(code) && !declaration.test(code))
          problems.push(`${rel}:${i + 1}: ${line.trim()}`);
      });
  }
}
if (problems.length > 0) {
  console.error(
    `services/ and libs/ take time, timers and randomness from the process runtime ` +
      `(ctx.runtime: libs/runtime/process-runtime.ts), not Node's globals:\n${problems.join("\n")}`,
  );
  process.exit(1);
}
console.error(`runtime globals: ok (${dirs.join(", ")})`);
