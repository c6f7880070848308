// The runtime-globals lint (scripts/lint-runtime-globals.mjs) on a planted tree: a direct use of
// a global in services/ fails it with the file and line; methods of the same name, tests,
// testing/ folders, process entries and allowlisted paths do not. And this repository passes.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";

const script = new URL("./lint-runtime-globals.mjs", import.meta.url).pathname;
const roots: string[] = [];
afterEach(() => {
  for (const r of roots.splice(0)) rmSync(r, { recursive: true, force: true });
});

function lint(files: Record<string, string>): { status: number | null; stderr: string } {
  const root = mkdtempSync(join(tmpdir(), "tern-lint-runtime-"));
  roots.push(root);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  const r = spawnSync(process.execPath, [script, "--root", root], { encoding: "utf8" });
  return { status: r.status, stderr: r.stderr };
}

const clean = {
  "services/broker/uses-clock.ts": [
    "export function wait(clock: Scheduler, socket: Socket): void {",
    "  clock.setTimeout(() => undefined, 5);",
    "  socket.setTimeout(5, () => undefined); // Date.now() in a comment is fine",
    "}",
  ].join("\n"),
  "services/broker/main.ts": "setTimeout(() => process.exit(0), 5);\n",
  "services/broker/uses-clock.test.ts": "const t = Date.now();\n",
  "services/broker/testing/fake.ts": "setInterval(() => undefined, 5);\n",
  "libs/client/sender.ts": "const jitter = Math.random();\n",
};

describe("lint-runtime-globals", () => {
  it("passes methods named like the globals, tests, testing/, entries and allowlisted paths", () => {
    expect(lint(clean)).toMatchObject({ status: 0 });
  });

  it.each([
    ["Date.now()", "const t = Date.now();"],
    ["setTimeout", "setTimeout(() => undefined, 5);"],
    ["setInterval", "const i = setInterval(tick, 1_000);"],
    ["setImmediate", "  setImmediate(() => flush());"],
    ["Math.random", "const r = 0.5 + Math.random();"],
    ["timers/promises", 'import { setTimeout as sleep } from "node:timers/promises";'],
  ])("flags a planted %s with its file and line", (_what, line) => {
    const r = lint({ ...clean, "services/coordinator/planted.ts": `// header\n${line}\n` });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`services/coordinator/planted.ts:2: ${line.trim()}`);
  });

  it("passes on this repository", () => {
    const r = spawnSync(process.execPath, [script], { encoding: "utf8" });
    expect(r.stderr).toContain("runtime globals: ok");
    expect(r.status).toBe(0);
  });
});
