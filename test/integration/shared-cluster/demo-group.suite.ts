// The exactly-once demo (what `npm start` runs after starting the local cluster) against a
// real cluster of its own (build first: `npx tsc -p tsconfig.json`): its two copiers run as
// one consumer group with subscribe, share the input partitions, and the demo's own
// read_committed verification passes (exit 0).
import { spawn } from "node:child_process";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { distRoot } from "../../../scripts/cluster/process-control.js";
import type { ProcessCluster } from "../../../scripts/cluster/process-cluster.js";
import { sharedCluster } from "../helpers/shared-cluster.js";

let cluster: ProcessCluster;

beforeAll(async () => {
  cluster = await sharedCluster();
}, 180_000);

describe("the demo with a subscribed copier group", () => {
  it("copies exactly once with two copiers sharing the partitions through the group", async () => {
    const child = spawn(
      process.execPath,
      [
        join(distRoot(), "scripts", "demo", "run-demo.js"),
        "--bootstrap",
        cluster.addresses("controller").join(","),
        "--records",
        "2000",
        "--partitions",
        "4",
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), 240_000);
    const code = await new Promise<number | null>((r) => child.once("exit", (c) => r(c)));
    clearTimeout(timer);
    expect(code, out).toBe(0);
    expect(out).toMatch(/exactly once: OK/);
    // Both copiers held partitions of the group at some point.
    expect(out).toMatch(/copier a: assigned/);
    expect(out).toMatch(/copier b: assigned/);
  }, 300_000);
});
