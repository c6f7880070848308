// Slots and memory one client cannot take from everyone (docs/security.md, "Hostile clients"),
// attacked from outside through real sockets and a raw gRPC channel against real processes
// (plaintext; the TLS handshake deadline is tls-handshake-deadline.test.ts): a seventh Kafka
// connection from one address beside six held is closed at once while other addresses still
// connect; an idle Kafka connection is closed; one connection pipelining gzip bombs keeps the
// broker's memory bounded and others served; a restarted broker gets its metadata view while
// clients hold every client WatchMetadata slot. Build first.
import * as grpc from "@grpc/grpc-js";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../../libs/common/poll.js";
import { controllerProto } from "../../libs/metadata/controller-proto.js";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";
import { startCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import { kafkaRequest, KafkaRawConnection } from "./helpers/kafka-raw-client.js";
import { produceRequest, recordBatch } from "./helpers/kafka-produce-frames.js";
import { scrape } from "./helpers/scrape-metrics.js";
import { okCli } from "./helpers/tern-cli.js";

const SHAPE = { controllers: 1, brokers: 1, coordinators: 1 };
const PER_IP_MAX = 6;
const IDLE_MS = 5_000;
const CLIENT_WATCHES_MAX = 4;
const ENV = {
  TERN_LOG_LEVEL: "warn",
  TERN_TXN_STATE_PARTITIONS: "2",
  TERN_TXN_STATE_REPLICATION_FACTOR: "1",
  TERN_OFFSETS_PARTITIONS: "2",
  TERN_KAFKA_MAX_CONNECTIONS_PER_IP: String(PER_IP_MAX),
  TERN_KAFKA_CONNECTIONS_MAX_IDLE_MS: String(IDLE_MS),
  TERN_WATCH_SUBSCRIBERS_MAX: String(CLIENT_WATCHES_MAX),
};
const TOPIC = "slots";
const METADATA = 3;

let cluster: ProcessCluster;
let dataDir: string;
let kafkaPort: number;
let brokerId: number;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "tern-slots-"));
  cluster = await startCluster({
    dataDir,
    ...SHAPE,
    basePort: await freeBasePort(SHAPE),
    env: ENV,
    healthTimeoutMs: 150_000,
  });
  const broker = cluster.processes().find((p) => p.role === "broker")!;
  brokerId = broker.id;
  kafkaPort = broker.kafkaPort!;
  await okCli(cluster.addresses("controller").join(","), [
    "topics",
    "create",
    TOPIC,
    "-p",
    "1",
    "-r",
    "1",
  ]);
  await until("a produce to the new topic", 60_000, async () =>
    (await produceOnce()) === 0 ? true : undefined,
  );
}, 240_000);

afterAll(async () => {
  await cluster?.stop({ termTimeoutMs: 5_000 });
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

function broker(): { pid: number; metricsPort: number } {
  const p = cluster.processes().find((x) => x.role === "broker" && x.id === brokerId);
  if (!p?.alive) {
    const log = readFileSync(cluster.spec("broker", brokerId).logFile, "utf8").split("\n");
    throw new Error(`the broker is not running (exit ${p?.exit}): ${log.slice(-5).join("\n")}`);
  }
  return { pid: p.pid, metricsPort: p.metricsPort };
}

/** A Kafka connection from a given loopback source address. */
function openFrom(localAddress: string): Promise<KafkaRawConnection> {
  return new Promise((resolve, reject) => {
    const s = connect({ port: kafkaPort, host: "127.0.0.1", localAddress }, () =>
      resolve(new KafkaRawConnection(s)),
    );
    s.once("error", reject);
  });
}

/** Whether the connection answers a Metadata request (false: closed without an answer). */
async function answersMetadata(c: KafkaRawConnection, correlationId: number): Promise<boolean> {
  c.s.write(kafkaRequest(METADATA, 1, correlationId, (w) => w.int32(-1)));
  const a = await c.next(10_000);
  return a?.correlationId === correlationId;
}

/** The error code of one Produce (a small batch unless given) on a fresh connection. */
async function produceOnce(records?: Buffer): Promise<number> {
  const c = await KafkaRawConnection.open(kafkaPort);
  try {
    c.s.write(produceRequest(1, TOPIC, records ?? (await recordBatch(2, 10))));
    const a = await c.next(10_000);
    if (a === undefined) throw new Error("the connection closed before the Produce answer");
    a.body.int32(); // topics
    a.body.string();
    a.body.int32(); // partitions
    a.body.int32(); // index
    return a.body.int16();
  } finally {
    c.close();
  }
}

async function closedCount(reason: string): Promise<number> {
  const samples = await scrape(broker().metricsPort);
  return samples
    .filter((s) => s.name === "tern_kafka_connections_closed_total" && s.labels.reason === reason)
    .reduce((n, s) => n + s.value, 0);
}

/** Resident memory of a process in bytes (Linux /proc). */
function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  if (!m) throw new Error(`no VmRSS for ${pid}`);
  return Number(m[1]) * 1024;
}

describe("connection slots and memory one client cannot take", () => {
  it("closes a connection over the per-IP cap at once; other addresses still connect", async () => {
    const held: KafkaRawConnection[] = [];
    try {
      for (let i = 0; i < PER_IP_MAX; i++) {
        const c = await openFrom("127.0.0.1");
        held.push(c);
        expect(await answersMetadata(c, i + 1)).toBe(true);
      }
      const over = await openFrom("127.0.0.1");
      expect(await answersMetadata(over, 100), "a connection over the cap is answered").toBe(false);
      expect(await closedCount("ip_limit")).toBeGreaterThanOrEqual(1);
      // Another client address is not affected.
      const other = await openFrom("127.0.0.2");
      expect(await answersMetadata(other, 101)).toBe(true);
      other.close();
      // A freed slot is usable again.
      held.pop()!.close();
      await until("a connection from 127.0.0.1 after one closed", 10_000, async () => {
        const c = await openFrom("127.0.0.1");
        const ok = await answersMetadata(c, 102);
        c.close();
        return ok ? true : undefined;
      });
    } finally {
      for (const c of held) c.close();
    }
  });

  it("closes a connection with nothing read or written for the idle time", async () => {
    const idleBefore = await closedCount("idle");
    const c = await openFrom("127.0.0.3");
    expect(await answersMetadata(c, 1)).toBe(true);
    const t0 = Date.now();
    expect(await c.next(IDLE_MS * 4)).toBeUndefined();
    expect(Date.now() - t0).toBeGreaterThanOrEqual(IDLE_MS - 100);
    expect(await closedCount("idle")).toBeGreaterThan(idleBefore);
  });

  it("one connection pipelining gzip bombs holds bounded broker memory and others are served", async () => {
    // One record of 63 MiB of 'a' in about 64 KiB of gzip: each inflates to nearly the batch
    // bound (64 MiB) and is then refused (MESSAGE_TOO_LARGE) at its turn.
    const bomb = await recordBatch(1, 63 * 1024 * 1024, "gzip");
    expect(bomb.byteLength).toBeLessThan(256 * 1024);
    const BOMBS = 32;
    const { pid } = broker();
    const before = rssBytes(pid);
    let peak = 0;
    const sampler = setInterval(() => {
      try {
        peak = Math.max(peak, rssBytes(pid) - before);
      } catch {
        // the process is gone: the answers below fail
      }
    }, 50);
    const attacker = await openFrom("127.0.0.4");
    try {
      attacker.s.write(
        Buffer.concat(Array.from({ length: BOMBS }, (_, i) => produceRequest(i + 1, TOPIC, bomb))),
      );
      // Another client's produce is served meanwhile.
      expect(await produceOnce()).toBe(0);
      for (let i = 1; i <= BOMBS; i++) expect((await attacker.next(60_000))?.correlationId).toBe(i);
    } finally {
      clearInterval(sampler);
      attacker.close();
    }
    const GROWTH_MAX = 768 * 1024 * 1024;
    expect(peak, `peak RSS growth ${Math.round(peak / 2 ** 20)} MiB`).toBeLessThan(GROWTH_MAX);
    expect(await produceOnce()).toBe(0);
  }, 180_000);

  it("a restarted broker gets its metadata view while clients hold every client watch slot", async () => {
    const controller = cluster.processes().find((p) => p.role === "controller")!;
    const Ctor = controllerProto().client;
    const channel = new Ctor(
      cluster.address("controller", controller.id),
      grpc.credentials.createInsecure(),
    );
    const streams: grpc.ClientReadableStream<unknown>[] = [];
    /** Opens one watch; true when it got its first view, false when refused (or not answered). */
    const openWatch = (): Promise<boolean> =>
      new Promise((resolve) => {
        const s = channel.WatchMetadata({ afterVersion: "0" });
        streams.push(s);
        const unanswered = setTimeout(() => resolve(false), 5_000);
        s.once("data", () => {
          clearTimeout(unanswered);
          resolve(true);
        });
        s.once("error", () => {
          clearTimeout(unanswered);
          resolve(false);
        });
      });
    /** Opens watches until one is refused: every client slot is held. */
    const fillSlots = async (): Promise<void> => {
      for (let i = 0; i < 20; i++) if (!(await openWatch())) return;
      throw new Error("20 more watches were all accepted");
    };
    const watchers = async (): Promise<number> =>
      (await scrape(controller.metricsPort))
        .filter((s) => s.name === "tern_controller_watch_subscribers")
        .reduce((n, s) => n + s.value, 0);
    try {
      await fillSlots();
      const withBroker = await watchers();
      cluster.kill("broker", brokerId);
      expect(await cluster.waitForExit("broker", brokerId, 10_000)).toBe(true);
      // The killed broker's stream ends; a client takes any slot that frees.
      await until("the controller to drop the killed broker's watch", 20_000, async () =>
        (await watchers()) < withBroker ? true : undefined,
      );
      await fillSlots();
      cluster.start("broker", brokerId);
      await until(
        "a Produce through the restarted broker",
        90_000,
        async () => ((await produceOnce()) === 0 ? true : undefined),
        { intervalMs: 500 },
      );
      // Clients still hold their slots; no client got in beside them.
      expect(await openWatch()).toBe(false);
    } finally {
      for (const s of streams) s.cancel();
      channel.close();
    }
  }, 180_000);
});
