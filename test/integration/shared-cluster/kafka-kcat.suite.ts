// Kafka clients nobody here wrote (kcat and confluent-kafka on librdkafka, kafkajs) against a
// real local cluster through the brokers' Kafka protocol listeners: metadata listing, produce with keys, null values and
// headers, consume from the beginning, records crossing between Kafka and gRPC clients,
// read_committed skipping an aborted transaction, and batches compressed with every codec from
// librdkafka, from confluent-kafka (an idempotent producer) and from the TypeScript Producer;
// topic administration (create, describe configs, delete) from both admin clients.
// Needs `kcat` and python3-confluent-kafka (Debian packages; .ci/run installs them); skipped
// with a message when kcat is missing.
import { spawnSync } from "node:child_process";
import { connect } from "node:net";
import { beforeAll, describe, expect, it } from "vitest";
import { Admin, Consumer, Producer, type ConsumerRecord } from "../../../libs/client/index.js";
import type { ProcessCluster } from "../../../scripts/cluster/process-cluster.js";
import { sharedCluster } from "../helpers/shared-cluster.js";
import { until } from "../../../libs/common/poll.js";
import { BrokerClient } from "../../../services/broker/broker-client.js";
import { COORDINATOR_KAFKA_NODE_ID_BASE } from "../../../services/kafka/kafka-node-ids.js";
import { KafkaReader, KafkaWriter } from "../../../libs/records/kafka-codec.js";
import { runKcat, type KcatResult } from "../helpers/kcat.js";

const KCAT = "kcat";
const hasKcat = spawnSync(KCAT, ["-V"], { encoding: "utf8" }).status === 0;
if (!hasKcat)
  process.stderr.write(
    "shared-cluster/kafka-kcat.suite.ts SKIPPED: kcat not found; install with: apt-get install -y kcat\n",
  );

let cluster: ProcessCluster | undefined;
let bootstrap: string;
let kafkaBrokers: string;

function kcat(args: string[], input?: string, timeoutMs = 60_000): Promise<KcatResult> {
  return runKcat(kafkaBrokers, args, { ...(input === undefined ? {} : { input }), timeoutMs });
}

/** Each JSON line kcat -J prints for a consumed record. */
interface KcatRecord {
  partition: number;
  offset: number;
  key: string | null;
  payload: string | null;
  headers?: string[] | null;
}

async function consumeAll(
  topic: string,
  partition: number,
  extra: string[] = [],
): Promise<KcatRecord[]> {
  const r = await kcat([
    "-C",
    "-t",
    topic,
    "-p",
    String(partition),
    "-o",
    "beginning",
    "-e",
    "-J",
    "-q",
    ...extra,
  ]);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout
    .split("\n")
    .filter((l) => l.trim().startsWith("{"))
    .map((l) => JSON.parse(l) as KcatRecord);
}

async function readWithTernConsumer(
  topic: string,
  partition: number,
  count: number,
): Promise<ConsumerRecord[]> {
  const consumer = new Consumer({ bootstrap, isolationLevel: "read_uncommitted" });
  consumer.assign([{ topic, partition }]);
  consumer.seek({ topic, partition }, 0n);
  const out: ConsumerRecord[] = [];
  const deadline = Date.now() + 30_000;
  while (out.length < count && Date.now() < deadline)
    out.push(...(await consumer.poll({ timeoutMs: 1_000 })));
  await consumer.close();
  return out;
}

/** The codec bits of the first batch a Fetch v4 of the partition returns, from whichever broker leads it (a raw request over a socket). */
async function firstBatchCodec(
  kafkaPorts: readonly number[],
  topic: string,
  partition = 0,
): Promise<number> {
  return (await fetchedBatches(kafkaPorts, topic, partition))[0]!.codec;
}

/** The codec bits and record counts of the batches a Fetch v4 of the partition from offset 0 returns (1 MiB at most). */
async function fetchedBatches(
  kafkaPorts: readonly number[],
  topic: string,
  partition: number,
): Promise<Array<{ codec: number; records: number }>> {
  const w = new KafkaWriter(128);
  const at = w.reserveInt32();
  w.int16(1).int16(4).int32(7).nullableString("tern-test");
  w.int32(-1)
    .int32(100)
    .int32(1)
    .int32(1 << 20)
    .int8(0);
  w.array(
    [topic],
    (x, t) =>
      void x.string(t).array(
        [partition],
        (y, p) =>
          void y
            .int32(p)
            .int64(0n)
            .int32(1 << 20),
      ),
  );
  w.fillInt32(at, w.pos - 4);
  const request = Buffer.from(w.finish());
  for (const port of kafkaPorts) {
    const answer = await new Promise<Buffer>((resolve, reject) => {
      const s = connect(port, "127.0.0.1", () => s.write(request));
      let got = Buffer.alloc(0);
      s.on("data", (d: Buffer) => {
        got = Buffer.concat([got, d]);
        if (got.byteLength >= 4 && got.byteLength >= 4 + got.readInt32BE(0)) {
          s.destroy();
          resolve(got.subarray(4, 4 + got.readInt32BE(0)));
        }
      });
      s.on("error", reject);
    });
    const r = new KafkaReader(answer);
    r.int32(); // correlation id
    r.int32(); // throttle
    r.int32(); // topics
    r.string();
    r.int32(); // partitions
    r.int32(); // partition
    const error = r.int16();
    r.int64();
    r.int64();
    r.array((x) => [x.int64(), x.int64()]); // aborted transactions
    const records = r.int32();
    if (error !== 0 || records < 61) continue;
    const out: Array<{ codec: number; records: number }> = [];
    for (let b = r.pos; b + 61 <= r.pos + records; b += 12 + answer.readInt32BE(b + 8))
      out.push({ codec: answer.readInt16BE(b + 21) & 0x07, records: answer.readInt32BE(b + 57) });
    return out;
  }
  throw new Error(`no broker answered a fetch of ${topic}/${partition} with records`);
}

describe.skipIf(!hasKcat)("kcat through the Kafka protocol listener", () => {
  beforeAll(async () => {
    cluster = await sharedCluster();
    bootstrap = cluster.addresses("controller").join(",");
    kafkaBrokers = [0, 1, 2]
      .map((i) => `127.0.0.1:${cluster!.spec("broker", i).kafkaPort}`)
      .join(",");
    const admin = new Admin({ bootstrap });
    const created = await admin.createTopics([
      { name: "kcat-topic", partitions: 3, replicationFactor: 3 },
      { name: "kcat-txn", partitions: 1, replicationFactor: 3 },
      { name: "kcat-idem", partitions: 1, replicationFactor: 3 },
      { name: "kcat-zip", partitions: 3, replicationFactor: 3 },
      { name: "kcat-keep", partitions: 4, replicationFactor: 3 },
      ...["gzip", "snappy", "lz4", "zstd"].map((codec) => ({
        name: `kcat-out-${codec}`,
        partitions: 1,
        replicationFactor: 3,
        config: { "compression.type": codec },
      })),
    ]);
    await admin.close();
    for (const c of created) expect(c.error ?? null).toBeNull();
  }, 240_000);

  it("lists the brokers' Kafka endpoints and the topic's partitions with leaders", async () => {
    // Leaders are elected shortly after creation: poll until all three have one.
    let meta: any;
    for (let i = 0; i < 60; i++) {
      const r = await kcat(["-L", "-J", "-t", "kcat-topic"]);
      expect(r.code, r.stderr).toBe(0);
      meta = JSON.parse(r.stdout);
      if (
        meta.topics?.[0]?.partitions?.length === 3 &&
        meta.topics[0].partitions.every((p: any) => p.leader >= 0)
      )
        break;
      await new Promise((res) => setTimeout(res, 500));
    }
    // Coordinators are listed too, under Kafka node ids from 1_000_000_000 (kafka-transactions.test.ts).
    expect(
      meta.brokers
        .filter((b: any) => b.id < COORDINATOR_KAFKA_NODE_ID_BASE)
        .map((b: any) => b.name)
        .sort(),
    ).toEqual(kafkaBrokers.split(",").sort());
    const t = meta.topics[0];
    expect(t.topic).toBe("kcat-topic");
    expect(t.partitions.map((p: any) => p.partition).sort()).toEqual([0, 1, 2]);
    for (const p of t.partitions) {
      expect(p.leader).toBeGreaterThanOrEqual(0);
      expect(p.replicas.map((r: any) => r.id).sort()).toEqual([0, 1, 2]);
    }
  }, 60_000);

  it("produces keyed records with headers and a null value, and consumes them back from the beginning", async () => {
    const lines =
      Array.from({ length: 50 }, (_, i) => `key-${i}\tvalue-${i}`).join("\n") +
      "\nnull-value-key\t\n";
    // -Z: an empty value is sent as NULL (a tombstone); -H: a header on every record.
    const p = await kcat(
      [
        "-P",
        "-t",
        "kcat-topic",
        "-p",
        "1",
        "-K",
        "\t",
        "-Z",
        "-H",
        "origin=kcat",
        "-H",
        "origin=again",
      ],
      lines,
    );
    expect(p.code, p.stderr).toBe(0);
    const got = await consumeAll("kcat-topic", 1);
    expect(got.length).toBe(51);
    expect(got.map((r) => r.offset)).toEqual(Array.from({ length: 51 }, (_, i) => i));
    expect(got.slice(0, 50).map((r) => `${r.key}=${r.payload}`)).toEqual(
      Array.from({ length: 50 }, (_, i) => `key-${i}=value-${i}`),
    );
    expect(got[50]!.key).toBe("null-value-key");
    expect(got[50]!.payload).toBeNull();
    // Headers keep their order and duplicate keys.
    expect(got[0]!.headers).toEqual(["origin", "kcat", "origin", "again"]);
    // The same records through the gRPC Consumer.
    const viaGrpc = await readWithTernConsumer("kcat-topic", 1, 51);
    expect(viaGrpc.slice(0, 3).map((r) => `${r.key?.toString()}=${r.value?.toString()}`)).toEqual([
      "key-0=value-0",
      "key-1=value-1",
      "key-2=value-2",
    ]);
    expect(viaGrpc[0]!.headers.origin?.toString()).toBeDefined();
  }, 120_000);

  it("consumes records a gRPC producer wrote", async () => {
    const producer = new Producer({ bootstrap });
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        producer.send({ topic: "kcat-topic", partition: 2, key: `g${i}`, value: `grpc-${i}` }),
      ),
    );
    await producer.close();
    const got = await consumeAll("kcat-topic", 2);
    expect(got.map((r) => r.payload)).toEqual(Array.from({ length: 20 }, (_, i) => `grpc-${i}`));
  }, 120_000);

  it("an idempotent librdkafka producer gets a producer id and writes with sequence numbers", async () => {
    const lines = Array.from({ length: 200 }, (_, i) => `idem-${i}`).join("\n") + "\n";
    const p = await kcat(
      ["-P", "-t", "kcat-idem", "-p", "0", "-X", "enable.idempotence=true"],
      lines,
    );
    expect(p.code, p.stderr).toBe(0);
    const got = await consumeAll("kcat-idem", 0);
    expect(got.map((r) => r.payload)).toEqual(Array.from({ length: 200 }, (_, i) => `idem-${i}`));
    // The partition leader tracks the producer: its id came from a coordinator through InitProducerId.
    let producers: any[] = [];
    for (const id of [0, 1, 2]) {
      const c = new BrokerClient(cluster!.address("broker", id));
      const r = await c
        .call("DescribeProducers", { partitions: [{ topic: "kcat-idem", partition: 0 }] })
        .catch(() => undefined);
      c.close();
      if (r?.partitions?.[0]?.errorCode === "NONE") producers = r.partitions[0].producers;
    }
    expect(producers.length).toBe(1);
    expect(BigInt(producers[0].producerId)).toBeGreaterThanOrEqual(0n);
    expect(producers[0].lastSequence).toBe(199);
  }, 120_000);

  it.each(["gzip", "snappy", "lz4", "zstd"])(
    "accepts %s-compressed batches from librdkafka",
    async (codec) => {
      const lines =
        Array.from({ length: 300 }, (_, i) => `${codec}-${i}-${"z".repeat(200)}`).join("\n") + "\n";
      const p = await kcat(
        ["-P", "-t", "kcat-zip", "-p", "0", "-z", codec, "-X", "linger.ms=50"],
        lines,
      );
      expect(p.code, p.stderr).toBe(0);
      const got = await consumeAll("kcat-zip", 0);
      expect(got.filter((r) => r.payload?.startsWith(`${codec}-`)).map((r) => r.payload)).toEqual(
        Array.from({ length: 300 }, (_, i) => `${codec}-${i}-${"z".repeat(200)}`),
      );
    },
    120_000,
  );

  it("an idempotent confluent-kafka producer with lz4 writes every record once, in order", async () => {
    const script = [
      "import sys",
      "from confluent_kafka import Producer",
      "p = Producer({'bootstrap.servers': sys.argv[1], 'enable.idempotence': True, 'compression.type': 'lz4', 'linger.ms': 20})",
      "for i in range(2000): p.produce('kcat-zip', value=b'ck-%d' % i, key=None, partition=1)",
      "left = p.flush(60)",
      "sys.exit(1 if left else 0)",
    ].join("\n");
    const r = spawnSync("/usr/bin/python3", ["-c", script, kafkaBrokers], {
      encoding: "utf8",
      timeout: 90_000,
    });
    expect(r.status, r.stderr).toBe(0);
    const got = await consumeAll("kcat-zip", 1);
    expect(got.map((x) => x.payload)).toEqual(Array.from({ length: 2000 }, (_, i) => `ck-${i}`));
  }, 120_000);

  it.each(["gzip", "snappy", "lz4", "zstd"] as const)(
    "a TypeScript Producer with compression %s: records arrive whole, null kept apart from empty",
    async (compression) => {
      const producer = new Producer({ bootstrap, compression, lingerMs: 20 });
      const sent = Array.from({ length: 500 }, (_, i) =>
        producer.send({
          topic: "kcat-zip",
          partition: 2,
          key: i === 0 ? null : i === 1 ? "" : `k${i}`,
          value: i === 2 ? null : `${compression}-ts-${i}-${"y".repeat(100)}`,
          headers: { codec: compression },
        }),
      );
      await Promise.all(sent);
      await producer.close();
      const got = (await consumeAll("kcat-zip", 2)).filter((x) => x.headers?.[1] === compression);
      expect(got.length).toBe(500);
      expect(got[0]!.key).toBeNull();
      expect(got[1]!.key).toBe("");
      expect(got[2]!.payload).toBeNull();
      expect(got.slice(3).map((x) => x.payload)).toEqual(
        Array.from({ length: 497 }, (_, i) => `${compression}-ts-${i + 3}-${"y".repeat(100)}`),
      );
    },
    120_000,
  );

  it.each(["gzip", "snappy", "lz4", "zstd"])(
    "a topic with compression.type=%s answers librdkafka's fetches with batches in that codec",
    async (codec) => {
      const producer = new Producer({ bootstrap, lingerMs: 20 });
      await Promise.all(
        Array.from({ length: 400 }, (_, i) =>
          producer.send({
            topic: `kcat-out-${codec}`,
            partition: 0,
            value: `out-${i}-${"x".repeat(150)}`,
          }),
        ),
      );
      await producer.close();
      const r = await kcat([
        "-C",
        "-t",
        `kcat-out-${codec}`,
        "-p",
        "0",
        "-o",
        "beginning",
        "-e",
        "-J",
        "-q",
      ]);
      expect(r.code, r.stderr).toBe(0);
      const got = r.stdout
        .split("\n")
        .filter((l) => l.trim().startsWith("{"))
        .map((l) => (JSON.parse(l) as KcatRecord).payload);
      expect(got).toEqual(Array.from({ length: 400 }, (_, i) => `out-${i}-${"x".repeat(150)}`));
      // librdkafka read them whole; that they came compressed shows in the batches' attributes.
      const ports = [0, 1, 2].map((i) => cluster!.spec("broker", i).kafkaPort!);
      expect(await firstBatchCodec(ports, `kcat-out-${codec}`)).toBe(
        ["none", "gzip", "snappy", "lz4", "zstd"].indexOf(codec),
      );
    },
    120_000,
  );

  it.each(["gzip", "snappy", "lz4", "zstd"].map((codec, partition) => [codec, partition] as const))(
    "compression.type=producer keeps confluent-kafka's %s batches as sent; kcat and the TypeScript Consumer read the records back",
    async (codec, partition) => {
      const t0 = 1_700_000_000_000;
      const script = [
        "import sys",
        "from confluent_kafka import Producer",
        "codec, part, t0 = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])",
        "p = Producer({'bootstrap.servers': sys.argv[1], 'enable.idempotence': True, 'compression.type': codec, 'linger.ms': 50})",
        "for i in range(300):",
        "    key = None if i == 0 else b'' if i == 1 else b'k%d' % i",
        "    value = None if i == 2 else b'%s-keep-%d-%s' % (codec.encode(), i, b'w' * 100)",
        "    headers = [('h', b'1'), ('h', None), ('a', b'')] if i == 3 else None",
        "    p.produce('kcat-keep', value=value, key=key, partition=part, headers=headers, timestamp=t0 + i)",
        "sys.exit(1 if p.flush(60) else 0)",
      ].join("\n");
      const r = spawnSync(
        "/usr/bin/python3",
        ["-c", script, kafkaBrokers, codec, String(partition), String(t0)],
        { encoding: "utf8", timeout: 90_000 },
      );
      expect(r.status, r.stderr).toBe(0);
      const value = (i: number): string => `${codec}-keep-${i}-${"w".repeat(100)}`;
      // The batches come back in the producer's codec: stored and sent as they arrived.
      const ports = [0, 1, 2].map((i) => cluster!.spec("broker", i).kafkaPort!);
      const batches = await fetchedBatches(ports, "kcat-keep", partition);
      expect(batches.reduce((n, b) => n + b.records, 0)).toBe(300);
      expect(
        batches.filter((b) => b.codec !== ["none", "gzip", "snappy", "lz4", "zstd"].indexOf(codec)),
        JSON.stringify(batches),
      ).toEqual([]);
      const got = await consumeAll("kcat-keep", partition);
      expect(got.length).toBe(300);
      expect([got[0]!.key, got[1]!.key, got[2]!.payload]).toEqual([null, "", null]);
      expect(got[3]!.headers).toEqual(["h", "1", "h", null, "a", ""]);
      expect(got.slice(3).map((x) => x.payload)).toEqual(
        Array.from({ length: 297 }, (_, i) => value(i + 3)),
      );
      // Over gRPC the same records, inflated by the broker, with their create times.
      const viaGrpc = await readWithTernConsumer("kcat-keep", partition, 300);
      expect(viaGrpc.map((x) => [Number(x.offset), x.timestampMs])).toEqual(
        Array.from({ length: 300 }, (_, i) => [i, t0 + i]),
      );
      expect(viaGrpc.slice(3).map((x) => x.value?.toString())).toEqual(
        Array.from({ length: 297 }, (_, i) => value(i + 3)),
      );
      expect(viaGrpc[4]!.key?.toString()).toBe("k4");
      expect(Object.keys(viaGrpc[3]!.headers).sort()).toEqual(["a", "h"]);
    },
    120_000,
  );

  it("read_committed skips an aborted transaction; read_uncommitted shows it", async () => {
    const producer = new Producer({ bootstrap, transactionalId: "kcat-txn-producer" });
    await producer.initTransactions();
    producer.beginTransaction();
    await Promise.all(
      [0, 1, 2].map((i) =>
        producer.send({ topic: "kcat-txn", partition: 0, value: `commit-${i}` }),
      ),
    );
    await producer.commitTransaction();
    producer.beginTransaction();
    await Promise.all(
      [0, 1].map((i) => producer.send({ topic: "kcat-txn", partition: 0, value: `abort-${i}` })),
    );
    await producer.abortTransaction();
    producer.beginTransaction();
    await producer.send({ topic: "kcat-txn", partition: 0, value: "commit-last" });
    await producer.commitTransaction();
    await producer.close();
    // The commit returns once the decision is durable; its marker follows. Until it is written,
    // a read_committed read ends before the last transaction (at the LSO).
    const admin = new Admin({ bootstrap });
    try {
      await until("the last commit to complete", 30_000, async () => {
        const [d] = await admin.describeTransactions(["kcat-txn-producer"]);
        return d?.state === "COMPLETE_COMMIT" ? true : undefined;
      });
    } finally {
      await admin.close();
    }
    const committed = await consumeAll("kcat-txn", 0, ["-X", "isolation.level=read_committed"]);
    expect(committed.map((r) => r.payload)).toEqual([
      "commit-0",
      "commit-1",
      "commit-2",
      "commit-last",
    ]);
    const all = await consumeAll("kcat-txn", 0, ["-X", "isolation.level=read_uncommitted"]);
    expect(all.map((r) => r.payload)).toEqual([
      "commit-0",
      "commit-1",
      "commit-2",
      "abort-0",
      "abort-1",
      "commit-last",
    ]);
  }, 120_000);

  it("confluent-kafka's AdminClient creates a topic with a config, describes its configs, refuses a duplicate, deletes it", async () => {
    const script = [
      "import sys, json",
      "from confluent_kafka.admin import AdminClient, NewTopic, ConfigResource",
      "from confluent_kafka import KafkaException",
      "a = AdminClient({'bootstrap.servers': sys.argv[1]})",
      "for f in a.create_topics([NewTopic('ck-admin', num_partitions=2, replication_factor=3, config={'retention.ms': '60000'})], operation_timeout=30).values(): f.result()",
      "try:",
      "    [f.result() for f in a.create_topics([NewTopic('ck-admin', num_partitions=1, replication_factor=3)]).values()]",
      "    dup = 'accepted'",
      "except KafkaException as e:",
      "    dup = e.args[0].name()",
      "cfg = [f.result() for f in a.describe_configs([ConfigResource('topic', 'ck-admin')]).values()][0]",
      "out = {'dup': dup, 'retention': [cfg['retention.ms'].value, cfg['retention.ms'].source], 'segment': [cfg['segment.bytes'].value, cfg['segment.bytes'].source]}",
      "for f in a.delete_topics(['ck-admin'], operation_timeout=30).values(): f.result()",
      "print(json.dumps(out))",
    ].join("\n");
    const r = spawnSync("/usr/bin/python3", ["-c", script, kafkaBrokers], {
      encoding: "utf8",
      timeout: 90_000,
    });
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout.trim().split("\n").pop()!);
    expect(out.dup).toBe("TOPIC_ALREADY_EXISTS");
    // librdkafka's ConfigSource: 1 DYNAMIC_TOPIC_CONFIG, 5 DEFAULT_CONFIG.
    expect(out.retention).toEqual(["60000", 1]);
    expect(out.segment).toEqual([String(128 * 1024 * 1024), 5]);
    const admin = new Admin({ bootstrap });
    const names = async (): Promise<string[]> =>
      (await admin.describeTopics([])).map((d) => d.name);
    await until(
      "ck-admin gone",
      10_000,
      async () => !(await names()).includes("ck-admin") || undefined,
      { intervalMs: 200 },
    ).catch(() => undefined);
    expect(await names()).not.toContain("ck-admin");
    await admin.close();
  }, 120_000);

  it("kafkajs's admin creates topics (refusing a bad config), describes configs and deletes them", async () => {
    const { Kafka, logLevel, ConfigResourceTypes } = await import("kafkajs");
    const admin = new Kafka({
      clientId: "tern-test",
      brokers: kafkaBrokers.split(","),
      logLevel: logLevel.NOTHING,
    }).admin();
    await admin.connect();
    try {
      expect(
        await admin.createTopics({
          topics: [
            {
              topic: "kjs-admin",
              numPartitions: 3,
              replicationFactor: 3,
              configEntries: [{ name: "compression.type", value: "zstd" }],
            },
          ],
          waitForLeaders: true,
        }),
      ).toBe(true);
      const bad = await admin
        .createTopics({
          topics: [
            {
              topic: "kjs-bad",
              numPartitions: 1,
              replicationFactor: 3,
              configEntries: [{ name: "retention.ms", value: "soon" }],
            },
          ],
        })
        .then(
          () => undefined,
          (e: { errors?: Array<{ type?: string }> }) => e,
        );
      expect(bad?.errors?.map((x) => x.type)).toEqual(["INVALID_CONFIG"]);
      const described = await admin.describeConfigs({
        resources: [
          {
            type: ConfigResourceTypes.TOPIC,
            name: "kjs-admin",
            configNames: ["compression.type", "retention.ms"],
          },
        ],
        includeSynonyms: false,
      });
      const entries = Object.fromEntries(
        described.resources[0]!.configEntries.map((e) => [e.configName, e.configValue]),
      );
      expect(entries).toEqual({
        "compression.type": "zstd",
        "retention.ms": String(7 * 24 * 3600 * 1000),
      });
      const meta = await admin.fetchTopicMetadata({ topics: ["kjs-admin"] });
      expect(meta.topics[0]!.partitions.length).toBe(3);
      await admin.deleteTopics({ topics: ["kjs-admin"] });
      // Brokers learn of the deletion from the controller's metadata shortly after it commits.
      await until(
        "kjs-admin gone",
        10_000,
        async () => !(await admin.listTopics()).includes("kjs-admin") || undefined,
        { intervalMs: 200 },
      ).catch(() => undefined);
      expect(await admin.listTopics()).not.toContain("kjs-admin");
    } finally {
      await admin.disconnect();
    }
  }, 120_000);
});
