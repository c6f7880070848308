// `cluster up --tls` end to end (nine real processes; build first): the script generates a CA
// and per-process certificates into <data-dir>/tls, every process serves TLS and talks mTLS to
// the others, `status` checks health over TLS with the recorded client certificate, the CLI
// with the generated CA runs a produce/consume round trip, the exactly-once demo passes, a
// plaintext health check gets no answer, and `up --tls` again after `down` keeps the CA.
import { execFile } from "node:child_process";
import { readFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { checkHealth } from "../../libs/server/health-client.js";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";
import { distRoot, processAlive } from "../../scripts/cluster/process-control.js";
import { clusterCli } from "./helpers/cluster-cli.js";
import { okCli } from "./helpers/tern-cli.js";

const READY_TIMEOUT_MS = Number(process.env.CLUSTER_READY_TIMEOUT_MS ?? 90_000);
const CLI_MARGIN_MS = 15_000;

interface Registry {
  processes: Array<{ pid: number; role: string; address: string }>;
  tls?: { caFile: string; clientCertFile: string; clientKeyFile: string };
}

describe("cluster up --tls", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "tern-cluster-tls-"));
  let registry: Registry | undefined;
  let basePort = 0;

  afterAll(async () => {
    await clusterCli(["down", "--data-dir", dataDir], 30_000);
    for (const p of registry?.processes ?? [])
      if (processAlive(p.pid)) process.kill(p.pid, "SIGKILL");
    rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);

  it("generates the certificates, brings nine TLS processes to SERVING, status checks them over TLS", async () => {
    basePort = await freeBasePort();
    const up = await clusterCli(
      [
        "up",
        "--tls",
        "--data-dir",
        dataDir,
        "--base-port",
        String(basePort),
        "--wait",
        "--wait-timeout-ms",
        String(READY_TIMEOUT_MS),
      ],
      READY_TIMEOUT_MS + CLI_MARGIN_MS,
    );
    registry = JSON.parse(readFileSync(join(dataDir, "cluster.json"), "utf8")) as Registry;
    expect(up.code, up.stderr + up.stdout).toBe(0);
    expect(up.stdout.match(/ SERVING$/gm)).toHaveLength(9);
    expect(up.stdout).not.toMatch(/^plaintext on/m);
    expect(registry.tls?.caFile).toBe(join(dataDir, "tls", "ca.crt"));
    for (const role of ["controller-0", "broker-2", "coordinator-1", "client"])
      expect(readFileSync(join(dataDir, "tls", `${role}.crt`), "utf8")).toContain(
        "BEGIN CERTIFICATE",
      );
    const status = await clusterCli(["status", "--json", "--data-dir", dataDir], 20_000);
    expect(status.code, status.stderr).toBe(0);
    expect((JSON.parse(status.stdout) as { ok: boolean }).ok).toBe(true);
    // This test process has no TLS configured: a plaintext health check gets no answer.
    const controller = registry.processes.find((p) => p.role === "controller")!;
    expect(await checkHealth(controller.address, { timeoutMs: 2_000 })).not.toBe("SERVING");
  });

  it("the CLI with the generated CA and client certificate produces and consumes", async () => {
    const bootstrap = registry!.processes
      .filter((p) => p.role === "controller")
      .map((p) => p.address)
      .join(",");
    const tls = [
      "--tls-ca-file",
      registry!.tls!.caFile,
      "--tls-cert-file",
      registry!.tls!.clientCertFile,
      "--tls-key-file",
      registry!.tls!.clientKeyFile,
    ];
    await okCli(bootstrap, [
      ...tls,
      "topics",
      "create",
      "tls-demo",
      "--partitions",
      "1",
      "--replication-factor",
      "3",
    ]);
    await okCli(bootstrap, [...tls, "produce", "tls-demo"], { stdin: "one\ntwo\nthree\n" });
    const consumed = await okCli(bootstrap, [
      ...tls,
      "consume",
      "tls-demo",
      "--from-beginning",
      "--max-messages",
      "3",
      "--timeout-ms",
      "30000",
    ]);
    expect(
      consumed.stdout
        .split("\n")
        .filter((l) => l.length > 0)
        .slice(0, 3),
    ).toEqual(["one", "two", "three"]);
  });

  it("the exactly-once demo runs on the TLS cluster (TERN_TLS_* in its environment)", async () => {
    const bootstrap = registry!.processes
      .filter((p) => p.role === "controller")
      .map((p) => p.address)
      .join(",");
    const env = {
      PATH: process.env.PATH,
      TERN_TLS_CA_FILE: registry!.tls!.caFile,
      TERN_TLS_CERT_FILE: registry!.tls!.clientCertFile,
      TERN_TLS_KEY_FILE: registry!.tls!.clientKeyFile,
    };
    const r = await new Promise<{ code: number | null; stdout: string; stderr: string }>(
      (resolve) => {
        execFile(
          process.execPath,
          [
            join(distRoot(), "scripts", "demo", "run-demo.js"),
            "--bootstrap",
            bootstrap,
            "--records",
            "300",
            "--partitions",
            "2",
          ],
          { env, timeout: 120_000, killSignal: "SIGKILL" },
          (err, stdout, stderr) =>
            resolve({
              code: err ? (((err as { code?: unknown }).code as number | null) ?? null) : 0,
              stdout,
              stderr,
            }),
        );
      },
    );
    expect(r.code, r.stderr + r.stdout).toBe(0);
    expect(r.stdout).toContain("exactly once: OK");
  }, 150_000);

  it("down, then up --tls again keeps the CA", async () => {
    const ca = readFileSync(join(dataDir, "tls", "ca.crt"), "utf8");
    expect((await clusterCli(["down", "--data-dir", dataDir], 30_000)).code).toBe(0);
    const up = await clusterCli(
      [
        "up",
        "--tls",
        "--data-dir",
        dataDir,
        "--base-port",
        String(basePort),
        "--wait",
        "--wait-timeout-ms",
        String(READY_TIMEOUT_MS),
      ],
      READY_TIMEOUT_MS + CLI_MARGIN_MS,
    );
    registry = JSON.parse(readFileSync(join(dataDir, "cluster.json"), "utf8")) as Registry;
    expect(up.code, up.stderr + up.stdout).toBe(0);
    expect(readFileSync(join(dataDir, "tls", "ca.crt"), "utf8")).toBe(ca);
  });
});
