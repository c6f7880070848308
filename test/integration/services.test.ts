// The three services as real processes: health per role, metrics, clean SIGTERM exit, and
// one-line reasons for bad configuration. Needs `npm run build` (npm test does it first).
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Role } from "../../libs/common/config.js";
import { checkHealth, waitForHealthStatus } from "../../libs/server/health-client.js";
import { freePort } from "../../scripts/cluster/port-check.js";
import { listServicesByReflection } from "./helpers/reflection.js";
import { runToExit, spawnServiceProcess, type ServiceProcess } from "./helpers/service-process.js";

const ROLE_SERVICES: Record<Role, string> = {
  controller: "tern.v1.Controller",
  broker: "tern.v1.Broker",
  coordinator: "tern.v1.TransactionCoordinator",
};
const ROLES = Object.keys(ROLE_SERVICES) as Role[];
// CLUSTER_READY_TIMEOUT_MS relaxes the bound on an overloaded machine.
const READY_TIMEOUT_MS = Number(process.env.CLUSTER_READY_TIMEOUT_MS ?? 30_000);
const EXIT_TIMEOUT_MS = 8_000;
const BAD_CONFIG_TIMEOUT_MS = 15_000;

interface Running {
  role: Role;
  port: number;
  metricsPort: number;
  process: ServiceProcess;
}

describe("service processes", () => {
  const root = mkdtempSync(join(tmpdir(), "tern-services-"));
  const running: Running[] = [];

  beforeAll(async () => {
    const ports = new Map<Role, { port: number; metricsPort: number }>();
    for (const role of ROLES)
      ports.set(role, { port: await freePort(), metricsPort: await freePort() });
    const controllers = `0@127.0.0.1:${ports.get("controller")!.port}`;
    for (const role of ROLES) {
      const { port, metricsPort } = ports.get(role)!;
      const args = [
        "--node-id",
        "0",
        "--listen",
        `127.0.0.1:${port}`,
        "--metrics-listen",
        `127.0.0.1:${metricsPort}`,
        "--controllers",
        controllers,
        "--data-dir",
        join(root, role),
        "--shutdown-timeout-ms",
        "5000",
      ];
      running.push({ role, port, metricsPort, process: spawnServiceProcess(role, args) });
    }
  });

  afterAll(async () => {
    for (const r of running) if (r.process.child.exitCode === null) r.process.child.kill("SIGKILL");
  });

  it("each answers grpc health SERVING, overall and for its role's service", async () => {
    for (const r of running) {
      const overall = await waitForHealthStatus(`127.0.0.1:${r.port}`, {
        timeoutMs: READY_TIMEOUT_MS,
      });
      expect(overall, `${r.role}: ${r.process.stderr()}`).toBe("SERVING");
      expect(
        await checkHealth(`127.0.0.1:${r.port}`, { service: ROLE_SERVICES[r.role] }),
        r.role,
      ).toBe("SERVING");
    }
  });

  it("each lists its services through reflection", async () => {
    for (const r of running) {
      const names = await listServicesByReflection(`127.0.0.1:${r.port}`);
      expect(names).toContain(ROLE_SERVICES[r.role]);
      expect(names).toContain("grpc.health.v1.Health");
    }
  });

  it("each serves Prometheus text with process metrics and /healthz", async () => {
    for (const r of running) {
      const res = await fetch(`http://127.0.0.1:${r.metricsPort}/metrics`, {
        signal: AbortSignal.timeout(5_000),
      });
      expect(res.status).toBe(200);
      const text = await res.text();
      expect(text).toMatch(
        new RegExp(`^process_resident_memory_bytes\\{role="${r.role}",node_id="0"\\} \\d+`, "m"),
      );
      expect(text).toMatch(/^# TYPE nodejs_eventloop_lag_seconds gauge$/m);
      expect((await fetch(`http://127.0.0.1:${r.metricsPort}/healthz`)).status).toBe(200);
    }
  });

  it("each logs JSON lines with component and nodeId", () => {
    for (const r of running) {
      const first = JSON.parse(
        r.process
          .stdout()
          .split("\n")
          .find((l) => l.includes('"started"'))!,
      ) as Record<string, unknown>;
      expect(first).toMatchObject({ component: r.role, nodeId: 0, msg: "started" });
    }
  });

  it("SIGTERM stops each with exit code 0 within the bound and nothing on stderr", async () => {
    for (const r of running) r.process.child.kill("SIGTERM");
    for (const r of running) {
      const result = await r.process.waitExit(EXIT_TIMEOUT_MS);
      expect(result, `${r.role} did not exit within ${EXIT_TIMEOUT_MS} ms`).toEqual({
        code: 0,
        signal: null,
      });
      expect(r.process.stderr()).toBe("");
      expect(r.process.stdout()).toContain('"msg":"stopped"');
    }
  });
});

describe("bad configuration exits non-zero with exactly one line on stderr", () => {
  const root = mkdtempSync(join(tmpdir(), "tern-badconf-"));
  let blocker: Server;
  let blockedPort = 0;

  beforeAll(async () => {
    blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, "127.0.0.1", () => r()));
    blockedPort = (blocker.address() as { port: number }).port;
  });
  afterAll(() => new Promise<void>((r) => blocker.close(() => r())));

  async function expectOneLine(role: Role, args: string[], reason: RegExp): Promise<void> {
    const metrics = await freePort();
    const base = ["--node-id", "1", "--metrics-listen", `127.0.0.1:${metrics}`];
    const result = await runToExit(role, [...base, ...args], BAD_CONFIG_TIMEOUT_MS);
    expect(result.code, `${role} ${args.join(" ")}: ${result.stderr}`).toBe(2);
    const lines = result.stderr.split("\n").filter((l) => l.length > 0);
    expect(lines, result.stderr).toHaveLength(1);
    expect(lines[0]!.startsWith(`tern-${role}: `)).toBe(true);
    expect(lines[0]).toMatch(reason);
  }

  it("unknown flag", async () => {
    await expectOneLine(
      "broker",
      ["--data-dir", join(root, "a"), "--listen", "127.0.0.1:0", "--no-such-flag", "1"],
      /no-such-flag/,
    );
  });

  it("port in use", async () => {
    await expectOneLine(
      "coordinator",
      ["--data-dir", join(root, "b"), "--listen", `127.0.0.1:${blockedPort}`],
      new RegExp(`cannot listen on 127\\.0\\.0\\.1:${blockedPort}: address already in use`),
    );
  });

  it("metrics port in use", async () => {
    await expectOneLine(
      "controller",
      [
        "--data-dir",
        join(root, "c"),
        "--listen",
        "127.0.0.1:0",
        "--metrics-listen",
        `127.0.0.1:${blockedPort}`,
      ],
      /cannot listen for metrics.*address already in use/,
    );
  });

  it("unwritable data directory", async () => {
    const file = join(root, "not-a-dir");
    writeFileSync(file, "x");
    await expectOneLine(
      "broker",
      ["--data-dir", join(file, "data"), "--listen", "127.0.0.1:0"],
      /data directory .*not-a-dir\/data cannot be created/,
    );
  });

  it("malformed peer list", async () => {
    await expectOneLine(
      "broker",
      [
        "--data-dir",
        join(root, "d"),
        "--listen",
        "127.0.0.1:0",
        "--controllers",
        "0@127.0.0.1:9090,one@host",
      ],
      /--controllers: expected id@host:port, got "one@host"/,
    );
  });

  it("missing node id", async () => {
    const result = await runToExit(
      "controller",
      ["--listen", "127.0.0.1:0"],
      BAD_CONFIG_TIMEOUT_MS,
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toBe("tern-controller: --node-id (or TERN_NODE_ID) is required\n");
  });
});
