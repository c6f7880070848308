// kcat (librdkafka, a Kafka client nobody here wrote) against a real local cluster through the
// brokers' Kafka protocol listeners: metadata listing, produce with keys, null values and
// headers, consume from the beginning, records crossing between Kafka and gRPC clients, and
// read_committed skipping an aborted transaction. Needs `kcat` (Debian package `kcat`; .ci/run
// installs it); skipped with a message otherwise.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Admin, Consumer, Producer, type ConsumerRecord } from "../../libs/client/index.js";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";
import { startCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import { BrokerClient } from "../../services/broker/broker-client.js";
import { COORDINATOR_KAFKA_NODE_ID_BASE } from "../../services/kafka/kafka-node-ids.js";

const KCAT = "kcat";
const hasKcat = spawnSync(KCAT, ["-V"], { encoding: "utf8" }).status === 0;
if (!hasKcat) process.stderr.write("kafka-kcat.test.ts SKIPPED: kcat not found; install with: apt-get install -y kcat\n");

let cluster: ProcessCluster | undefined;
let dataDir: string;
let bootstrap: string;
let kafkaBrokers: string;

function kcat(args: string[], input?: string, timeoutMs = 60_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(KCAT, ["-b", kafkaBrokers, ...args], { stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`kcat ${args.join(" ")} timed out; stderr: ${stderr}`));
    }, timeoutMs);
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(input ?? "");
  });
}

/** Each JSON line kcat -J prints for a consumed record. */
interface KcatRecord {
  partition: number;
  offset: number;
  key: string | null;
  payload: string | null;
  headers?: string[] | null;
}

async function consumeAll(topic: string, partition: number, extra: string[] = []): Promise<KcatRecord[]> {
  const r = await kcat(["-C", "-t", topic, "-p", String(partition), "-o", "beginning", "-e", "-J", "-q", ...extra]);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout.split("\n").filter((l) => l.trim().startsWith("{")).map((l) => JSON.parse(l) as KcatRecord);
}

async function readWithTernConsumer(topic: string, partition: number, count: number): Promise<ConsumerRecord[]> {
  const consumer = new Consumer({ bootstrap, isolationLevel: "read_uncommitted" });
  consumer.assign([{ topic, partition }]);
  consumer.seek({ topic, partition }, 0n);
  const out: ConsumerRecord[] = [];
  const deadline = Date.now() + 30_000;
  while (out.length < count && Date.now() < deadline) out.push(...(await consumer.poll({ timeoutMs: 1_000 })));
  await consumer.close();
  return out;
}

describe.skipIf(!hasKcat)("kcat through the Kafka protocol listener", () => {
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "tern-kcat-"));
    cluster = await startCluster({ dataDir, basePort: await freeBasePort(), env: { TERN_LOG_LEVEL: "warn" }, healthTimeoutMs: 180_000 });
    bootstrap = cluster.addresses("controller").join(",");
    kafkaBrokers = [0, 1, 2].map((i) => `127.0.0.1:${cluster!.spec("broker", i).kafkaPort}`).join(",");
    const admin = new Admin({ bootstrap });
    const created = await admin.createTopics([{ name: "kcat-topic", partitions: 3, replicationFactor: 3 }, { name: "kcat-txn", partitions: 1, replicationFactor: 3 }, { name: "kcat-idem", partitions: 1, replicationFactor: 3 }]);
    await admin.close();
    for (const c of created) expect(c.error ?? null).toBeNull();
  }, 240_000);

  afterAll(async () => {
    await cluster?.stop({ termTimeoutMs: 5_000 });
    rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);

  it("lists the brokers' Kafka endpoints and the topic's partitions with leaders", async () => {
    // Leaders are elected shortly after creation: poll until all three have one.
    let meta: any;
    for (let i = 0; i < 60; i++) {
      const r = await kcat(["-L", "-J", "-t", "kcat-topic"]);
      expect(r.code, r.stderr).toBe(0);
      meta = JSON.parse(r.stdout);
      if (meta.topics?.[0]?.partitions?.length === 3 && meta.topics[0].partitions.every((p: any) => p.leader >= 0)) break;
      await new Promise((res) => setTimeout(res, 500));
    }
    // Coordinators are listed too, under Kafka node ids from 1_000_000_000 (kafka-transactions.test.ts).
    expect(meta.brokers.filter((b: any) => b.id < COORDINATOR_KAFKA_NODE_ID_BASE).map((b: any) => b.name).sort()).toEqual(kafkaBrokers.split(",").sort());
    const t = meta.topics[0];
    expect(t.topic).toBe("kcat-topic");
    expect(t.partitions.map((p: any) => p.partition).sort()).toEqual([0, 1, 2]);
    for (const p of t.partitions) {
      expect(p.leader).toBeGreaterThanOrEqual(0);
      expect(p.replicas.map((r: any) => r.id).sort()).toEqual([0, 1, 2]);
    }
  }, 60_000);

  it("produces keyed records with headers and a null value, and consumes them back from the beginning", async () => {
    const lines = Array.from({ length: 50 }, (_, i) => `key-${i}\tvalue-${i}`).join("\n") + "\nnull-value-key\t\n";
    // -Z: an empty value is sent as NULL (a tombstone); -H: a header on every record.
    const p = await kcat(["-P", "-t", "kcat-topic", "-p", "1", "-K", "\t", "-Z", "-H", "origin=kcat", "-H", "origin=again"], lines);
    expect(p.code, p.stderr).toBe(0);
    const got = await consumeAll("kcat-topic", 1);
    expect(got.length).toBe(51);
    expect(got.map((r) => r.offset)).toEqual(Array.from({ length: 51 }, (_, i) => i));
    expect(got.slice(0, 50).map((r) => `${r.key}=${r.payload}`)).toEqual(Array.from({ length: 50 }, (_, i) => `key-${i}=value-${i}`));
    expect(got[50]!.key).toBe("null-value-key");
    expect(got[50]!.payload).toBeNull();
    // Headers keep their order and duplicate keys.
    expect(got[0]!.headers).toEqual(["origin", "kcat", "origin", "again"]);
    // The same records through the gRPC Consumer.
    const viaGrpc = await readWithTernConsumer("kcat-topic", 1, 51);
    expect(viaGrpc.slice(0, 3).map((r) => `${r.key?.toString()}=${r.value?.toString()}`)).toEqual(["key-0=value-0", "key-1=value-1", "key-2=value-2"]);
    expect(viaGrpc[0]!.headers.origin?.toString()).toBeDefined();
  }, 120_000);

  it("consumes records a gRPC producer wrote", async () => {
    const producer = new Producer({ bootstrap });
    await Promise.all(Array.from({ length: 20 }, (_, i) => producer.send({ topic: "kcat-topic", partition: 2, key: `g${i}`, value: `grpc-${i}` })));
    await producer.close();
    const got = await consumeAll("kcat-topic", 2);
    expect(got.map((r) => r.payload)).toEqual(Array.from({ length: 20 }, (_, i) => `grpc-${i}`));
  }, 120_000);

  it("an idempotent librdkafka producer gets a producer id and writes with sequence numbers", async () => {
    const lines = Array.from({ length: 200 }, (_, i) => `idem-${i}`).join("\n") + "\n";
    const p = await kcat(["-P", "-t", "kcat-idem", "-p", "0", "-X", "enable.idempotence=true"], lines);
    expect(p.code, p.stderr).toBe(0);
    const got = await consumeAll("kcat-idem", 0);
    expect(got.map((r) => r.payload)).toEqual(Array.from({ length: 200 }, (_, i) => `idem-${i}`));
    // The partition leader tracks the producer: its id came from a coordinator through InitProducerId.
    let producers: any[] = [];
    for (const id of [0, 1, 2]) {
      const c = new BrokerClient(cluster!.address("broker", id));
      const r = await c.call("DescribeProducers", { partitions: [{ topic: "kcat-idem", partition: 0 }] }).catch(() => undefined);
      c.close();
      if (r?.partitions?.[0]?.errorCode === "NONE") producers = r.partitions[0].producers;
    }
    expect(producers.length).toBe(1);
    expect(BigInt(producers[0].producerId)).toBeGreaterThanOrEqual(0n);
    expect(producers[0].lastSequence).toBe(199);
  }, 120_000);

  it("accepts gzip-compressed batches", async () => {
    const lines = Array.from({ length: 300 }, (_, i) => `gz-${i}-${"z".repeat(200)}`).join("\n") + "\n";
    const p = await kcat(["-P", "-t", "kcat-idem", "-p", "0", "-z", "gzip", "-X", "linger.ms=50"], lines);
    expect(p.code, p.stderr).toBe(0);
    const got = await consumeAll("kcat-idem", 0);
    expect(got.filter((r) => r.payload?.startsWith("gz-")).map((r) => r.payload)).toEqual(Array.from({ length: 300 }, (_, i) => `gz-${i}-${"z".repeat(200)}`));
  }, 120_000);

  it("read_committed skips an aborted transaction; read_uncommitted shows it", async () => {
    const producer = new Producer({ bootstrap, transactionalId: "kcat-txn-producer" });
    await producer.initTransactions();
    producer.beginTransaction();
    await Promise.all([0, 1, 2].map((i) => producer.send({ topic: "kcat-txn", partition: 0, value: `commit-${i}` })));
    await producer.commitTransaction();
    producer.beginTransaction();
    await Promise.all([0, 1].map((i) => producer.send({ topic: "kcat-txn", partition: 0, value: `abort-${i}` })));
    await producer.abortTransaction();
    producer.beginTransaction();
    await producer.send({ topic: "kcat-txn", partition: 0, value: "commit-last" });
    await producer.commitTransaction();
    await producer.close();
    const committed = await consumeAll("kcat-txn", 0, ["-X", "isolation.level=read_committed"]);
    expect(committed.map((r) => r.payload)).toEqual(["commit-0", "commit-1", "commit-2", "commit-last"]);
    const all = await consumeAll("kcat-txn", 0, ["-X", "isolation.level=read_uncommitted"]);
    expect(all.map((r) => r.payload)).toEqual(["commit-0", "commit-1", "commit-2", "abort-0", "abort-1", "commit-last"]);
  }, 120_000);
});
