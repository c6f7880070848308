import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadIncarnation } from "./node-membership.js";

describe("node incarnation", () => {
  const dirs: string[] = [];
  afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));
  const tempDir = (): string => {
    const d = mkdtempSync(join(tmpdir(), "tern-incarnation-"));
    dirs.push(d);
    return d;
  };

  it("is the same across restarts from one data directory and differs between directories", () => {
    const a = tempDir();
    const first = loadIncarnation(a);
    expect(loadIncarnation(a)).toBe(first);
    expect(readFileSync(join(a, "incarnation"), "utf8").trim()).toBe(first);
    expect(loadIncarnation(tempDir())).not.toBe(first);
  });

  it("replaces a corrupt incarnation file with a fresh one", () => {
    const a = tempDir();
    writeFileSync(join(a, "incarnation"), "garbage");
    const value = loadIncarnation(a);
    expect(value).toMatch(/^[0-9a-f-]{36}$/);
    expect(loadIncarnation(a)).toBe(value);
  });
});
