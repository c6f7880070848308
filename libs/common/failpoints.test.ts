import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Failpoints } from "./failpoints.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function onceDir(): string {
  const d = mkdtempSync(join(tmpdir(), "tern-failpoints-"));
  dirs.push(d);
  return d;
}

describe("Failpoints", () => {
  it("reads TERN_FAILPOINTS once: names as written, the k-th hit fires, unlisted names never do", async () => {
    const f = Failpoints.fromEnv({ TERN_FAILPOINTS: "a, b=3", TERN_FAILPOINT_HOLD_MS: "1" })!;
    expect(f.list()).toEqual(["a", "b=3"]);
    expect(f.listed("b")).toBe(true);
    expect(f.listed("c")).toBe(false);
    expect(f.hold("c")).toBeUndefined();
    expect(f.faultArmed("c")).toBe(false);
    expect(f.hold("b")).toBeUndefined();
    expect(f.hold("b")).toBeUndefined();
    const held = f.hold("b");
    expect(held).toBeInstanceOf(Promise);
    await held;
    // The count starts over after a fire.
    expect(f.hold("b")).toBeUndefined();
  });

  it("keeps hit counts per instance (one per process), not per module", () => {
    const env = { TERN_FAILPOINTS: "b=2", TERN_FAILPOINT_HOLD_MS: "1" };
    const first = Failpoints.fromEnv(env)!;
    const second = Failpoints.fromEnv(env)!;
    expect(first.hold("b")).toBeUndefined();
    expect(second.hold("b")).toBeUndefined();
    expect(first.hold("b")).toBeInstanceOf(Promise);
  });

  it("with a once-directory: a file disarms, and the first instance to fire creates it", () => {
    const dir = onceDir();
    writeFileSync(join(dir, "p"), "disarmed");
    const env = {
      TERN_FAILPOINTS: "p",
      TERN_FAILPOINTS_ONCE_DIR: dir,
      TERN_FAILPOINT_HOLD_MS: "1",
    };
    const one = Failpoints.fromEnv(env)!;
    const other = Failpoints.fromEnv(env)!;
    expect(one.faultArmed("p")).toBe(false);
    expect(one.hold("p")).toBeUndefined();
    rmSync(join(dir, "p"));
    expect(one.faultArmed("p")).toBe(true);
    expect(one.hold("p")).toBeInstanceOf(Promise);
    expect(existsSync(join(dir, "p"))).toBe(true);
    expect(other.hold("p")).toBeUndefined();
    expect(other.faultArmed("p")).toBe(false);
  });

  it("refuses a list it cannot parse", () => {
    expect(() => Failpoints.fromEnv({ TERN_FAILPOINTS: "a=b" })).toThrow(/cannot parse "a=b"/);
  });

  it("arms nothing by default", () => {
    const f = new Failpoints();
    expect(f.list()).toEqual([]);
    expect(f.hold("a")).toBeUndefined();
    f.crash("a"); // unarmed: returns
  });
});
