// Prometheus text over HTTP: GET /metrics (default process metrics + everything the role
// registered), GET /healthz (200 when ready, 503 otherwise) and GET /livez (200 whenever the
// process answers: the HTTP twin of the gRPC `liveness` health service, for kubelet probes
// when the gRPC port speaks TLS, docs/deploy-k8s.md). Nothing else is served.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Registry } from "prom-client";
import { describeOsError, StartupError } from "./startup-error.js";

export interface MetricsServer {
  readonly port: number;
  close(): Promise<void>;
}

export async function startMetricsServer(options: {
  host: string;
  port: number;
  registry: Registry;
  isReady: () => boolean;
}): Promise<MetricsServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD" }).end();
    } else if (path === "/metrics") {
      options.registry.metrics().then(
        (text) => res.writeHead(200, { "content-type": options.registry.contentType }).end(text),
        (e: unknown) =>
          res
            .writeHead(500, { "content-type": "text/plain" })
            .end(`metrics failed: ${String(e)}\n`),
      );
    } else if (path === "/healthz") {
      const ready = options.isReady();
      res
        .writeHead(ready ? 200 : 503, { "content-type": "text/plain" })
        .end(ready ? "ok\n" : "not ready\n");
    } else if (path === "/livez") {
      res.writeHead(200, { "content-type": "text/plain" }).end("ok\n");
    } else {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
    }
  });
  // Bounded: a scraper that never finishes its request must not hold a socket forever.
  server.requestTimeout = 10_000;
  server.headersTimeout = 10_000;
  await new Promise<void>((resolveListen, rejectListen) => {
    server.once("error", (e) =>
      rejectListen(
        new StartupError(
          `cannot listen for metrics on ${options.host}:${options.port}: ${describeOsError(e)}`,
          { cause: e },
        ),
      ),
    );
    server.listen(options.port, options.host, () => resolveListen());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolveClose) => {
        server.close(() => resolveClose());
        server.closeAllConnections();
      }),
  };
}
