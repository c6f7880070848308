// A client that opens TCP to a TLS listener and never finishes the handshake is cut after a
// bounded time (docs/security.md, "Hostile clients"): the broker's Kafka listener
// (--kafka-tls-handshake-timeout-ms, 10 s by default) and the gRPC listeners of a controller
// and a broker (10 s), where Node's default would hold the slot for 120 s. Real processes with
// TLS, raw TCP sockets. Build first.
import { mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";
import { startCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import { scrape } from "./helpers/scrape-metrics.js";

const SHAPE = { controllers: 1, brokers: 1, coordinators: 1 };
const DEADLINE_MS = 10_000;
/** Bound on the wait: the deadline plus slack for two shared cores (Node's default is 120 s). */
const WAIT_MAX_MS = 30_000;

let cluster: ProcessCluster;
let dataDir: string;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "tern-tls-handshake-"));
  cluster = await startCluster({
    dataDir,
    ...SHAPE,
    basePort: await freeBasePort(SHAPE),
    healthTimeoutMs: 150_000,
    tls: true,
    env: {
      TERN_LOG_LEVEL: "warn",
      TERN_TXN_STATE_PARTITIONS: "2",
      TERN_TXN_STATE_REPLICATION_FACTOR: "1",
      TERN_OFFSETS_PARTITIONS: "2",
    },
  });
}, 240_000);

afterAll(async () => {
  await cluster?.stop({ termTimeoutMs: 5_000 });
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

/** Opens TCP, sends nothing; resolves with the ms until the server closed it (or WAIT_MAX_MS). */
function silentConnection(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = connect({ port, host: "127.0.0.1" });
    let opened = 0;
    const giveUp = setTimeout(() => {
      s.destroy();
      resolve(WAIT_MAX_MS);
    }, WAIT_MAX_MS);
    s.once("connect", () => (opened = Date.now()));
    s.on("error", () => undefined);
    s.once("close", () => {
      clearTimeout(giveUp);
      if (opened === 0) reject(new Error(`could not connect to port ${port}`));
      else resolve(Date.now() - opened);
    });
  });
}

describe("TLS handshake deadline", () => {
  it("closes connections that never start their TLS handshake, on Kafka and gRPC listeners", async () => {
    const broker = cluster.processes().find((p) => p.role === "broker")!;
    const controller = cluster.processes().find((p) => p.role === "controller")!;
    const targets = {
      "broker kafka": broker.kafkaPort!,
      "broker grpc": broker.port,
      "controller grpc": controller.port,
    };
    const waited = await Promise.all(Object.values(targets).map((p) => silentConnection(p)));
    Object.keys(targets).forEach((name, i) => {
      expect(waited[i], `${name}: closed after ${waited[i]} ms`).toBeLessThan(WAIT_MAX_MS);
      expect(waited[i], `${name}: closed after ${waited[i]} ms`).toBeGreaterThanOrEqual(
        DEADLINE_MS - 500,
      );
    });
    const samples = await scrape(broker.metricsPort);
    const expired = samples
      .filter((s) => s.name === "tern_kafka_connections_closed_total")
      .filter((s) => s.labels.reason === "tls_handshake")
      .reduce((n, s) => n + s.value, 0);
    expect(expired).toBeGreaterThanOrEqual(1);
  }, 60_000);
});
