import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { afterEach, describe, expect, it } from "vitest";
import { TernError } from "../common/errors.js";
import { fromGrpcError } from "../common/grpc-errors.js";
import { silentLogger } from "../common/logger.js";
import { listServicesByReflection } from "../../test/integration/helpers/reflection.js";
import { checkHealth } from "./health-client.js";
import type { ServiceContext, ServiceParts } from "./service.js";
import { startService, type RunningService } from "./start-service.js";
import { StartupError } from "./startup-error.js";
import { wrapUnaryService } from "./unary-handler.js";

// A JSON echo service: the runtime must work for any definition, not only tern's.
const json = {
  ser: (v: unknown) => Buffer.from(JSON.stringify(v)),
  de: (b: Buffer) => JSON.parse(b.toString()) as unknown,
};
const method = (name: string) => ({
  path: `/test.Echo/${name}`,
  requestStream: false,
  responseStream: false,
  originalName: name,
  requestSerialize: json.ser,
  requestDeserialize: json.de,
  responseSerialize: json.ser,
  responseDeserialize: json.de,
});
const echoDefinition = {
  Echo: method("Echo"),
  Fail: method("Fail"),
  Crash: method("Crash"),
  Later: method("Later"),
} as unknown as grpc.ServiceDefinition;
const EchoClient = grpc.makeGenericClientConstructor(echoDefinition, "Echo");

const running: RunningService[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.shutdown("test end")));
});

function argv(dataDir: string, extra: string[] = []): string[] {
  return [
    "--node-id",
    "7",
    "--listen",
    "127.0.0.1:0",
    "--metrics-listen",
    "127.0.0.1:0",
    "--data-dir",
    dataDir,
    ...extra,
  ];
}

interface Probe {
  events: string[];
  ctx?: ServiceContext;
}

function echoCompose(probe: Probe, parts: Partial<ServiceParts> = {}) {
  return async (ctx: ServiceContext): Promise<ServiceParts> => {
    probe.ctx = ctx;
    const implementation = wrapUnaryService(
      echoDefinition,
      {
        Echo: async (req: unknown) => req,
        Fail: async () => {
          throw new TernError("NOT_COORDINATOR", "try partition 22");
        },
        Crash: async () => {
          throw new Error("bug!");
        },
      },
      { logger: ctx.logger, metrics: ctx.metrics },
    );
    return {
      services: [{ definition: echoDefinition, implementation }],
      drain:
        parts.drain ??
        (async () => {
          probe.events.push("drain");
        }),
      close:
        parts.close ??
        (async () => {
          probe.events.push("close");
        }),
    };
  };
}

async function call(address: string, name: string, request: unknown): Promise<unknown> {
  const client = new EchoClient(address, grpc.credentials.createInsecure());
  try {
    return await new Promise((resolveCall, rejectCall) => {
      client.makeUnaryRequest(
        `/test.Echo/${name}`,
        json.ser,
        json.de,
        request,
        { deadline: Date.now() + 3_000 },
        (err: unknown, value: unknown) => (err ? rejectCall(err) : resolveCall(value)),
      );
    });
  } finally {
    client.close();
  }
}

async function start(
  probe: Probe,
  extra: string[] = [],
  parts: Partial<ServiceParts> = {},
): Promise<RunningService> {
  const dataDir = mkdtempSync(join(tmpdir(), "tern-server-"));
  const r = await startService({
    role: "broker",
    argv: argv(dataDir, extra),
    env: {},
    compose: echoCompose(probe, parts),
    logger: silentLogger(),
  });
  running.push(r);
  return r;
}

describe("startService", () => {
  it("serves health NOT_SERVING until ready, per service and overall", async () => {
    const probe: Probe = { events: [] };
    const r = await start(probe);
    const address = `127.0.0.1:${r.grpcPort}`;
    expect(await checkHealth(address)).toBe("NOT_SERVING");
    expect(await checkHealth(address, { service: "test.Echo" })).toBe("NOT_SERVING");
    expect(await checkHealth(address, { service: "liveness" })).toBe("SERVING");
    probe.ctx!.setReady(true);
    expect(await checkHealth(address)).toBe("SERVING");
    expect(await checkHealth(address, { service: "test.Echo" })).toBe("SERVING");
    expect(await checkHealth(address, { service: "no.Such" })).toBe("SERVICE_UNKNOWN");
    expect(await checkHealth("127.0.0.1:1", { timeoutMs: 300 })).toBe("unreachable");
  });

  it("maps handler errors to statuses with tern trailers", async () => {
    const r = await start({ events: [] });
    const address = `127.0.0.1:${r.grpcPort}`;
    expect(await call(address, "Echo", { a: 1 })).toEqual({ a: 1 });
    const fail = (await call(address, "Fail", {}).catch((e: unknown) => e)) as grpc.ServiceError;
    expect(fail.code).toBe(grpc.status.FAILED_PRECONDITION);
    expect(fromGrpcError(fail).errorName).toBe("NOT_COORDINATOR");
    expect(fromGrpcError(fail).message).toBe("try partition 22");
    const crash = (await call(address, "Crash", {}).catch((e: unknown) => e)) as grpc.ServiceError;
    expect(crash.code).toBe(grpc.status.INTERNAL);
    expect(fromGrpcError(crash).errorName).toBe("UNKNOWN_SERVER_ERROR");
    const later = (await call(address, "Later", {}).catch((e: unknown) => e)) as grpc.ServiceError;
    expect(later.code).toBe(grpc.status.UNIMPLEMENTED);
  });

  it("serves Prometheus metrics with process metrics and rpc timings, /healthz and /livez", async () => {
    const probe: Probe = { events: [] };
    const r = await start(probe);
    const base = `http://127.0.0.1:${r.metricsPort}`;
    expect((await fetch(`${base}/healthz`)).status).toBe(503);
    // Alive while not ready: the liveness probe must not restart a node that waits for quorum.
    expect((await fetch(`${base}/livez`)).status).toBe(200);
    probe.ctx!.setReady(true);
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    await call(`127.0.0.1:${r.grpcPort}`, "Echo", {});
    const res = await fetch(`${base}/metrics`);
    expect(res.headers.get("content-type")).toContain("text/plain");
    const text = await res.text();
    expect(text).toMatch(/^process_cpu_user_seconds_total\{role="broker",node_id="7"\} /m);
    expect(text).toMatch(
      /tern_rpc_duration_seconds_count\{role="broker",node_id="7",method="\/test.Echo\/Echo",code="NONE"\} 1/,
    );
    expect((await fetch(`${base}/nope`)).status).toBe(404);
  });

  it("exposes every loaded service through reflection", async () => {
    const r = await start({ events: [] });
    const names = await listServicesByReflection(`127.0.0.1:${r.grpcPort}`);
    expect(names).toContain("grpc.health.v1.Health");
    expect(names).toContain("tern.v1.Broker");
  });

  it("shuts down in order: NOT_SERVING, drain, stop serving, close", async () => {
    const probe: Probe = { events: [] };
    let r: RunningService | undefined;
    const drain = async (): Promise<void> => {
      probe.events.push(`drain:${await checkHealth(`127.0.0.1:${r!.grpcPort}`)}`);
    };
    r = await start(probe, [], { drain });
    probe.ctx!.setReady(true);
    const result = await r.shutdown("test");
    expect(result.clean).toBe(true);
    expect(probe.events).toEqual(["drain:NOT_SERVING", "close"]);
    expect(await checkHealth(`127.0.0.1:${r.grpcPort}`, { timeoutMs: 500 })).toBe("unreachable");
    expect(await r.shutdown("again")).toBe(result);
  });

  it("bounds a drain that never finishes", async () => {
    const probe: Probe = { events: [] };
    const r = await start(probe, ["--shutdown-timeout-ms", "300"], {
      drain: () => new Promise<void>(() => {}),
    });
    const t0 = Date.now();
    const result = await r.shutdown("test");
    expect(result.clean).toBe(false);
    expect(probe.events).toEqual(["close"]);
    expect(Date.now() - t0).toBeLessThan(3_000);
  });

  it("reports startup problems as one-line StartupErrors", async () => {
    const probe: Probe = { events: [] };
    const r = await start(probe);
    const dataDir = mkdtempSync(join(tmpdir(), "tern-server-"));
    const attempt = (args: string[]) =>
      startService({
        role: "broker",
        argv: args,
        env: {},
        compose: echoCompose(probe),
        logger: silentLogger(),
      }).then(
        (s) => {
          running.push(s);
          return undefined;
        },
        (e: unknown) => e as Error,
      );
    const inUse = await attempt([
      "--node-id",
      "1",
      "--listen",
      `127.0.0.1:${r.grpcPort}`,
      "--metrics-listen",
      "127.0.0.1:0",
      "--data-dir",
      dataDir,
    ]);
    expect(inUse).toBeInstanceOf(StartupError);
    expect(inUse!.message).toMatch(/^cannot listen on 127\.0\.0\.1:\d+: address already in use/);
    const metricsInUse = await attempt([
      "--node-id",
      "1",
      "--listen",
      "127.0.0.1:0",
      "--metrics-listen",
      `127.0.0.1:${r.metricsPort}`,
      "--data-dir",
      dataDir,
    ]);
    expect(metricsInUse!.message).toMatch(/^cannot listen for metrics on .*address already in use/);
    const file = join(dataDir, "a-file");
    writeFileSync(file, "x");
    const badDir = await attempt(argv(join(file, "sub")));
    expect(badDir).toBeInstanceOf(StartupError);
    expect(badDir!.message).toMatch(/^data directory .* cannot be created/);
    const badFlag = await attempt([...argv(dataDir), "--bogus", "1"]);
    expect(badFlag).toBeInstanceOf(StartupError);
    expect(badFlag!.message).toMatch(/bogus/);
    for (const e of [inUse, metricsInUse, badDir, badFlag]) expect(e!.message).not.toContain("\n");
  });
});
