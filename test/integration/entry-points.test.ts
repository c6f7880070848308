// Every entry point (the CLI, cluster, sim, bench, chaos) answers --help with its usage on
// stdout (exit 0) and a bad flag with exactly one line on stderr (exit 2), never a stack
// trace; `tern --version` prints the package version. Real processes from dist/ (npm run build).
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { distRoot } from "../../scripts/cluster/process-control.js";

const ENTRY_POINTS: ReadonlyArray<{ name: string; file: string; prefix?: string[] }> = [
  { name: "tern", file: "cli/main.js" },
  { name: "tern topics create", file: "cli/main.js", prefix: ["topics", "create"] },
  { name: "cluster", file: "scripts/cluster.js" },
  { name: "cluster up", file: "scripts/cluster.js", prefix: ["up"] },
  { name: "sim", file: "libs/sim/main.js" },
  { name: "bench", file: "scripts/bench/main.js" },
  { name: "bench raft", file: "scripts/bench/main.js", prefix: ["raft"] },
  { name: "chaos", file: "test/chaos/main.js" },
  { name: "chaos:matrix", file: "test/chaos/matrix.js" },
];

function run(
  file: string,
  args: string[],
): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [join(distRoot(), file), ...args], {
    encoding: "utf8",
    timeout: 30_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe("entry points", () => {
  for (const e of ENTRY_POINTS) {
    it(`${e.name} --help: usage on stdout, exit 0`, () => {
      const r = run(e.file, [...(e.prefix ?? []), "--help"]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/usage|Usage|benchmark/);
      expect(r.stderr).toBe("");
    });
    it(`${e.name} --no-such-flag: one line on stderr, exit 2`, () => {
      const r = run(e.file, [...(e.prefix ?? []), "--no-such-flag"]);
      expect(r.code).toBe(2);
      expect(r.stderr.trimEnd().split("\n"), r.stderr).toHaveLength(1);
      expect(r.stderr).not.toMatch(/\n\s+at /);
      expect(r.stdout).toBe("");
    });
  }

  it("tern --version prints the package version", () => {
    const version = (
      JSON.parse(readFileSync(join(distRoot(), "..", "package.json"), "utf8")) as {
        version: string;
      }
    ).version;
    const r = run("cli/main.js", ["--version"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^tern ${version.replace(/\./g, "\\.")} `));
  });
});
