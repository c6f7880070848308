// The contract stands on its own: a Python client generated from proto/ alone (grpcio, at test
// time into a temp dir) produces a committed and an aborted transaction against a real cluster
// and fetches read_committed. Needs /usr/bin/python3 with Debian's python3-grpcio and
// python3-grpc-tools (`apt-get install -y python3-grpcio python3-grpc-tools`); skipped with a
// message otherwise.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ProcessCluster } from "../../../scripts/cluster/process-cluster.js";
import { sharedCluster } from "../helpers/shared-cluster.js";

const PYTHON = "/usr/bin/python3";
const ROOT = resolve(import.meta.dirname, "..", "..", "..");
const probe = spawnSync(PYTHON, ["-c", "import grpc, grpc_tools"], { encoding: "utf8" });
const hasGrpc = probe.status === 0;
if (!hasGrpc) {
  process.stderr.write(
    `shared-cluster/python.suite.ts SKIPPED: ${PYTHON} lacks grpc (${(probe.stderr || String(probe.error)).trim().split("\n").pop()}); install with: apt-get install -y python3-grpcio python3-grpc-tools\n`,
  );
}

let cluster: ProcessCluster | undefined;
let genDir: string;

function run(
  args: string[],
  timeoutMs: number,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((res, rej) => {
    const child = spawn(PYTHON, args, { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      rej(new Error(`python ${args.join(" ")} timed out: ${stderr}`));
    }, timeoutMs);
    child.once("exit", (code) => {
      clearTimeout(timer);
      res({ code, stdout, stderr });
    });
  });
}

describe.skipIf(!hasGrpc)("Python client generated from proto/ alone", () => {
  beforeAll(async () => {
    genDir = mkdtempSync(join(tmpdir(), "tern-python-gen-"));
    cluster = await sharedCluster();
  }, 180_000);

  afterAll(async () => {
    rmSync(genDir, { recursive: true, force: true });
  }, 60_000);

  it("generates the stubs with grpc_tools.protoc from proto/", async () => {
    const r = await run(["clients/python/generate.py", genDir, join(ROOT, "proto")], 60_000);
    expect(r.code, r.stderr).toBe(0);
    const files = readdirSync(join(genDir, "tern", "v1")).sort();
    for (const f of [
      "broker_pb2.py",
      "broker_pb2_grpc.py",
      "common_pb2.py",
      "controller_pb2_grpc.py",
      "coordinator_pb2_grpc.py",
    ])
      expect(files).toContain(f);
  }, 90_000);

  it("produces a committed and an aborted transaction, fetches read_committed: only the committed records", async () => {
    expect(existsSync(join(genDir, "tern", "v1", "broker_pb2.py"))).toBe(true);
    const r = await run(
      [
        "clients/python/produce_fetch.py",
        "--bootstrap",
        cluster!.addresses("controller")[0]!,
        "--topic",
        "py-topic",
        "--gen-dir",
        genDir,
      ],
      180_000,
    );
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout.trim().split("\n").pop()!);
    expect(out.ok).toBe(true);
    expect(out.fetched).toEqual(out.committed);
    expect(out.fetched).toHaveLength(3);
    expect(out.fetched.some((v: string) => v.startsWith("py-abort"))).toBe(false);
  }, 240_000);
});
