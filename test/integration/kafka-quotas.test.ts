// Client quotas on the Kafka listener of real processes (docs/security.md, "Quotas"), started
// with TLS, --kafka-sasl required and (so that no listener is left open) --grpc-authorizer acl
// with the CLI's certificate (CN tern-admin) as the gRPC super-user, and a short quota window
// (3 × 1 s) so the rate settles quickly:
// `tern quota` sets, lists and removes quotas; Kafka's AlterClientQuotas / DescribeClientQuotas
// frames (v0 and the flexible v1, as Kafka's admin tools send them) round-trip the same store;
// a user producing over its producer_byte_rate gets throttle_time_ms > 0 and, its connection
// muted, a measured rate near the quota, while another user producing at the same time is
// never throttled. Build first (the CLI runs from dist/).
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import type { ConnectionOptions } from "node:tls";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../../libs/common/poll.js";
import { KafkaWriter, type KafkaReader } from "../../libs/records/kafka-codec.js";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";
import { startCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import { kafkaRequest, type KafkaRawConnection } from "./helpers/kafka-raw-client.js";
import { produceRequest, recordBatch } from "./helpers/kafka-produce-frames.js";
import { rawSaslLogin } from "./helpers/kafka-raw-sasl.js";
import { okCli, ternCli, type TernRun } from "./helpers/tern-cli.js";

const SHAPE = { controllers: 1, brokers: 1, coordinators: 1 };
const ENV = {
  TERN_LOG_LEVEL: "warn",
  TERN_TXN_STATE_PARTITIONS: "2",
  TERN_TXN_STATE_REPLICATION_FACTOR: "1",
  TERN_OFFSETS_PARTITIONS: "2",
};
const TOPIC = "quotas";
const DESCRIBE_CLIENT_QUOTAS = 48;
const ALTER_CLIENT_QUOTAS = 49;
const INVALID_REQUEST = 42;
/** alice's producer_byte_rate: well below what one connection produces unthrottled here. */
const QUOTA = 64 * 1024;
const MEASURE_MS = 6_000;

let cluster: ProcessCluster;
let dataDir: string;
let bootstrap: string;
let kafkaPort: number;
/** The CLI's TLS flags (its certificate is the gRPC super-user). */
let cliTls: string[];
/** Raw Kafka connections: TLS with the cluster CA (SASL needs TLS). */
let kafkaTls: ConnectionOptions;

/** The CLI as the super-user; `okAdminCli` also requires exit code 0. */
const adminCli = (args: string[]): Promise<TernRun> => ternCli(bootstrap, [...cliTls, ...args]);
const okAdminCli = (args: string[]): Promise<TernRun> => okCli(bootstrap, [...cliTls, ...args]);
/** A raw Kafka connection over TLS logged in as user (password `<user>-secret`). */
const login = (user: string): Promise<KafkaRawConnection> =>
  rawSaslLogin(kafkaPort, user, `${user}-secret`, { tls: kafkaTls });

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "tern-quotas-"));
  cluster = await startCluster({
    dataDir,
    ...SHAPE,
    basePort: await freeBasePort(SHAPE),
    env: ENV,
    healthTimeoutMs: 150_000,
    extraArgs: [
      "--kafka-sasl",
      "required",
      "--grpc-authorizer",
      "acl",
      "--grpc-super-users",
      "User:tern-admin",
      "--quota-window-num",
      "3",
      "--quota-window-size-seconds",
      "1",
    ],
    tls: true,
  });
  const files = cluster.tls!;
  cliTls = [
    "--tls-ca-file",
    files.caFile,
    "--tls-cert-file",
    files.client.certFile,
    "--tls-key-file",
    files.client.keyFile,
  ];
  kafkaTls = { ca: [readFileSync(files.caFile)], servername: "localhost" };
  kafkaPort = cluster.processes().find((p) => p.role === "broker")!.kafkaPort!;
  bootstrap = cluster.addresses("controller").join(",");
  for (const user of ["alice", "bob"])
    await okAdminCli(["user", "create", user, "--password", `${user}-secret`]);
  await okAdminCli(["topics", "create", TOPIC, "-p", "1", "-r", "1"]);
  // Credentials and the partition's leader reach the broker with its metadata.
  await until(
    "a produce as alice",
    60_000,
    async () => {
      const c = await login("alice").catch(() => undefined);
      if (c === undefined) return undefined;
      try {
        return (await produce(c, 1, await recordBatch(1, 10))).error === 0 ? true : undefined;
      } finally {
        c.close();
      }
    },
    { intervalMs: 300 },
  );
}, 240_000);

afterAll(async () => {
  await cluster?.stop({ termTimeoutMs: 5_000 });
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

/** One Produce v3 and its answer: the partition's error code and throttle_time_ms. */
async function produce(
  c: KafkaRawConnection,
  id: number,
  batch: Buffer,
): Promise<{ error: number; throttleMs: number }> {
  c.s.write(produceRequest(id, TOPIC, batch));
  const a = await c.next(20_000);
  if (a === undefined) throw new Error("the connection closed before the Produce answer");
  const r = a.body;
  r.int32(); // topics
  r.string();
  r.int32(); // partitions
  r.int32();
  const error = r.int16();
  r.int64();
  r.int64();
  return { error, throttleMs: r.int32() };
}

/** Produces batch after batch on one connection for `ms`: bytes acknowledged and throttle times. */
async function produceFor(
  c: KafkaRawConnection,
  batch: Buffer,
  ms: number,
): Promise<{ bytes: number; elapsedMs: number; throttles: number[]; errors: number[] }> {
  const started = Date.now();
  let bytes = 0;
  let id = 100;
  const throttles: number[] = [];
  const errors: number[] = [];
  while (Date.now() - started < ms) {
    const a = await produce(c, id++, batch);
    throttles.push(a.throttleMs);
    if (a.error !== 0) errors.push(a.error);
    else bytes += batch.byteLength;
  }
  return { bytes, elapsedMs: Date.now() - started, throttles, errors };
}

describe.sequential("client quotas on the Kafka listener", () => {
  it("tern quota alters, describes and deletes quotas (users, client ids, <default>)", async () => {
    await okAdminCli(["quota", "alter", "--user", "carol", "--producer-byte-rate", "1000"]);
    await okAdminCli([
      "quota",
      "alter",
      "--default",
      "user",
      "--client-id",
      "app",
      "--request-percentage",
      "25.5",
    ]);
    const all = JSON.parse((await okAdminCli(["--json", "quota", "describe"])).stdout) as Array<{
      entity: unknown;
      values: unknown;
    }>;
    expect(all).toEqual(
      expect.arrayContaining([
        { entity: { user: "carol" }, values: { producer_byte_rate: 1000 } },
        { entity: { user: null, clientId: "app" }, values: { request_percentage: 25.5 } },
      ]),
    );
    const carol = JSON.parse(
      (await okAdminCli(["--json", "quota", "describe", "--user", "carol"])).stdout,
    );
    expect(carol).toEqual([{ entity: { user: "carol" }, values: { producer_byte_rate: 1000 } }]);
    const table = (await okAdminCli(["quota", "describe", "--client-id", "app"])).stdout;
    expect(table).toMatch(/user=<default>, client-id=app\s+-\s+-\s+25\.5/);

    const bad = await adminCli([
      "quota",
      "alter",
      "--user",
      "carol",
      "--producer-byte-rate",
      "1.5",
    ]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/producer_byte_rate is bytes per second, a whole number/);

    await okAdminCli(["quota", "delete", "--user", "carol"]);
    await okAdminCli(["quota", "delete", "--default", "user", "--client-id", "app"]);
    const after = JSON.parse((await okAdminCli(["--json", "quota", "describe"])).stdout);
    expect(after).toEqual([]);
  }, 120_000);

  it("AlterClientQuotas and DescribeClientQuotas frames (v0, and v1 flexible) round-trip", async () => {
    const c = await login("bob");
    try {
      // v1 (flexible): client-id=<default> gets request_percentage 200; a bad key fails alone.
      const altered = await c.flexibleCall(ALTER_CLIENT_QUOTAS, 1, (w) => {
        w.compactArray(
          [
            { name: null, key: "request_percentage", value: 200 },
            { name: "x", key: "no_such_quota", value: 1 },
          ],
          (x, e) => {
            x.compactArray([0], (y) =>
              y.compactNullableString("client-id").compactNullableString(e.name).noTaggedFields(),
            );
            x.compactArray([0], (y) =>
              y.compactNullableString(e.key).float64(e.value).bool(false).noTaggedFields(),
            );
            x.noTaggedFields();
          },
        );
        w.bool(false).noTaggedFields();
      });
      expect(altered.int32()).toBe(0); // throttle_time_ms
      const results = altered.compactArray((x) => {
        const code = x.int16();
        x.compactNullableString();
        const entity = x.compactArray((y) => {
          const e = [y.compactString(), y.compactNullableString()];
          y.taggedFields();
          return e;
        });
        x.taggedFields();
        return { code, entity };
      });
      expect(results).toEqual([
        { code: 0, entity: [["client-id", null]] },
        { code: INVALID_REQUEST, entity: [["client-id", "x"]] },
      ]);

      // v0: the <default> client-id entity, strict.
      c.s.write(
        kafkaRequest(DESCRIBE_CLIENT_QUOTAS, 0, 7, (w: KafkaWriter) => {
          w.array([0], (x) => x.string("client-id").int8(1).nullableString(null));
          w.bool(true);
        }),
      );
      const described = (await c.next(10_000))!.body;
      expect(described.int32()).toBe(0);
      expect(described.int16()).toBe(0);
      described.nullableString();
      expect(readEntriesV0(described)).toEqual([
        { entity: [["client-id", null]], values: [["request_percentage", 200]] },
      ]);

      // v0 removes it; v1 lists nothing any more.
      c.s.write(
        kafkaRequest(ALTER_CLIENT_QUOTAS, 0, 8, (w: KafkaWriter) => {
          w.array([0], (x) => {
            x.array([0], (y) => y.string("client-id").nullableString(null));
            x.array([0], (y) => y.string("request_percentage").float64(0).bool(true));
          });
          w.bool(false);
        }),
      );
      const removed = (await c.next(10_000))!.body;
      removed.int32();
      expect(removed.int32()).toBe(1);
      expect(removed.int16()).toBe(0);
      const listed = await c.flexibleCall(DESCRIBE_CLIENT_QUOTAS, 1, (w) => {
        w.compactArray([0], (x) =>
          x.compactNullableString("client-id").int8(2).compactNullableString(null).noTaggedFields(),
        );
        w.bool(false).noTaggedFields();
      });
      expect(listed.int32()).toBe(0);
      expect(listed.int16()).toBe(0);
      listed.compactNullableString();
      expect(listed.compactArray(() => 0)).toEqual([]);
    } finally {
      c.close();
    }
  }, 60_000);

  it("a producer over its producer_byte_rate is throttled to near the quota; another user's is not", async () => {
    await okAdminCli(["quota", "alter", "--user", "alice", "--producer-byte-rate", String(QUOTA)]);
    const batch = await recordBatch(1, 8 * 1024);
    const alice = await login("alice");
    const bob = await login("bob");
    try {
      // The quota reaches the broker with its next metadata view: alice is throttled soon.
      let id = 1;
      await until(
        "alice throttled",
        30_000,
        async () => ((await produce(alice, id++, batch)).throttleMs > 0 ? true : undefined),
        { intervalMs: 1 },
      );
      const [a, b] = await Promise.all([
        produceFor(alice, batch, MEASURE_MS),
        produceFor(bob, batch, MEASURE_MS),
      ]);
      const aliceRate = (a.bytes * 1000) / a.elapsedMs;
      const bobRate = (b.bytes * 1000) / b.elapsedMs;
      expect(a.errors).toEqual([]);
      expect(b.errors).toEqual([]);
      expect(Math.max(...a.throttles)).toBeGreaterThan(0);
      // Near the quota: tolerant bounds (a shared machine), far below an unthrottled rate.
      expect(aliceRate).toBeLessThan(2 * QUOTA);
      expect(aliceRate).toBeGreaterThan(QUOTA / 4);
      expect(b.throttles.every((t) => t === 0)).toBe(true);
      expect(bobRate).toBeGreaterThan(2 * QUOTA);
    } finally {
      alice.close();
      bob.close();
    }
  }, 120_000);
});

function readEntriesV0(r: KafkaReader): Array<{ entity: unknown[]; values: unknown[] }> {
  return r.array((x) => ({
    entity: x.array((y) => [y.string(), y.nullableString()]),
    values: x.array((y) => [y.string(), y.float64()]),
  }));
}
