// The data directory's identity (meta.properties): claimed once, checked on every start.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { META_FILE, prepareDataDir } from "./data-dir.js";
import { StartupError } from "./startup-error.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function fresh(): string {
  const d = mkdtempSync(join(tmpdir(), "tern-data-dir-"));
  dirs.push(d);
  return join(d, "node");
}
const me = { clusterId: "c1", nodeId: 3, role: "broker" as const };

describe("data directory identity", () => {
  it("a blank directory is reported blank and written only when claimed; the next start reads the same directory id", () => {
    const path = fresh();
    const first = prepareDataDir(path, me);
    expect(first.blank).toBe(true);
    expect(() => readFileSync(join(path, META_FILE))).toThrow();
    first.claim();
    first.claim();
    const text = readFileSync(join(path, META_FILE), "utf8");
    expect(text).toMatch(/^cluster\.id=c1$/m);
    expect(text).toMatch(/^node\.id=3$/m);
    expect(text).toMatch(new RegExp(`^directory\\.id=${first.directoryId}$`, "m"));
    const again = prepareDataDir(path, me);
    expect(again).toMatchObject({ blank: false, directoryId: first.directoryId, clusterId: "c1" });
  });

  it("an unclaimed blank directory stays blank (a refused start leaves nothing behind)", () => {
    const path = fresh();
    const a = prepareDataDir(path, me);
    const b = prepareDataDir(path, me);
    expect(b.blank).toBe(true);
    expect(b.directoryId).not.toBe(a.directoryId);
  });

  it("refuses a directory of another cluster, another node or another role, with a clear message", () => {
    const path = fresh();
    prepareDataDir(path, me).claim();
    expect(() => prepareDataDir(path, { ...me, clusterId: "c2" })).toThrow(StartupError);
    expect(() => prepareDataDir(path, { ...me, clusterId: "c2" })).toThrow(
      /belongs to cluster "c1", but this node is configured for cluster "c2"/,
    );
    expect(() => prepareDataDir(path, { ...me, nodeId: 4 })).toThrow(
      /belongs to broker 3, but this process is broker 4/,
    );
    expect(() => prepareDataDir(path, { ...me, role: "coordinator" })).toThrow(
      /belongs to broker 3, but this process is coordinator 3/,
    );
  });

  it("a directory with data but no meta.properties (written before it existed) is adopted, not blank", () => {
    const path = fresh();
    mkdirSync(path, { recursive: true });
    writeFileSync(join(path, "CURRENT"), "MANIFEST-000001\n");
    const d = prepareDataDir(path, me);
    expect(d.blank).toBe(false);
    expect(readFileSync(join(path, META_FILE), "utf8")).toMatch(
      new RegExp(`directory\\.id=${d.directoryId}`),
    );
  });

  it("a malformed meta.properties is a startup error", () => {
    const path = fresh();
    mkdirSync(path, { recursive: true });
    writeFileSync(join(path, META_FILE), "nonsense\n");
    expect(() => prepareDataDir(path, me)).toThrow(/malformed line/);
  });
});
