// `npm run bench -- kafka [--duration-s S] [--partitions N] [--rounds R=2] [--one-in-flight]
// [--quotas-unreached] [--base-port P]`
// The same workload through the brokers' Kafka listeners with librdkafka (confluent-kafka for
// Python, scripts/bench/kafka-librdkafka-client.py) and with Kafka's Java client (test/java
// BenchClient, built by scripts/setup/java-clients.sh when java and mvn are there), and through
// gRPC with the libs/client Producer and Consumer, on one local cluster (3 controllers, 3
// brokers, 3 coordinators): an idempotent producer sends 1 KiB records, acks=all, round-robin
// over N partitions (RF 3) for S seconds, then everything is read back from the beginning.
// Rounds rotate the clients' order on fresh topics. JSON Lines on stdout, one line per figure and client: records_per_s, mb_per_s,
// produce_latency_p50/p99 (ms, send to acknowledgement), fetch_mb_per_s, and the brokers' CPU
// per produced MB (broker_cpu_ms_per_mb, the load-independent figure). --one-in-flight: one
// partition and one record in flight (each client's window is one record, no linger), so the
// latency is one record's end to end, client to majority fsync and back, through each client's
// path (case 1-inflight-...). Needs /usr/bin/python3 with confluent_kafka (Debian
// python3-confluent-kafka). --quotas-unreached sets a `<default>` user quota of every kind far
// above what the run reaches, so the Kafka listener's quota accounting runs on every request
// (docs/security.md, "Quotas"); each line then says quotas: "unreached".
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { childJson as childJsonOf, javaClasspath } from "./_child-json.js";
import { producerWindowRecords } from "./_producer-load.js";
import { cpuMs } from "./_storage-probes.js";

const RECORD_BYTES = 1024;
const PYTHON = "/usr/bin/python3";
const CLIENT_TIMEOUT_MS_MIN = 180_000;
const READ_BACK_TIMEOUT_MS = 120_000;
const ROUNDS_MAX = 10;
/** Through the Kafka listeners (librdkafka, the Java client) and through gRPC (libs/client). */
const CLIENTS = ["librdkafka", "grpc", "java"] as const;
/** The libs/client run's batch and in-flight settings; the librdkafka run gets the same window. */
const BATCH_RECORDS = 64;
/** A v2 record's framing around its value, at most (length, attributes, deltas, key, headers). */
const RECORD_OVERHEAD_BYTES_MAX = 32;
const INFLIGHT_PER_PARTITION = 5;
const LINGER_MS = 5;

export interface Options {
  durationS: number;
  partitions: number;
  rounds: number;
  basePort: number | undefined;
  /** One record in flight on one partition, no linger: the end-to-end latency case. */
  oneInFlight: boolean;
  /** A default-user quota of every kind, set far above the run's rates. */
  quotasUnreached: boolean;
}

export interface ClientResult {
  produced: number;
  failed: number;
  produceS: number;
  p50: number;
  p99: number;
  fetchedRecords: number;
  fetchedBytes: number;
  fetchS: number;
  /** The client process's CPU during the read-back (whether the client bounds it). */
  fetchCpuMs?: number;
}

function options(args: string[]): Options {
  const { values } = parseArgs({
    args,
    options: {
      "duration-s": { type: "string" },
      partitions: { type: "string" },
      rounds: { type: "string" },
      "base-port": { type: "string" },
      "one-in-flight": { type: "boolean" },
      "quotas-unreached": { type: "boolean" },
    },
    strict: true,
  });
  const oneInFlight = values["one-in-flight"] === true;
  const o = {
    durationS: Number(values["duration-s"] ?? 10),
    partitions: oneInFlight ? 1 : Number(values.partitions ?? 6),
    rounds: Number(values.rounds ?? 2),
    basePort: values["base-port"] === undefined ? undefined : Number(values["base-port"]),
    oneInFlight,
    quotasUnreached: values["quotas-unreached"] === true,
  };
  if (
    !(o.durationS > 0) ||
    !Number.isInteger(o.partitions) ||
    o.partitions < 1 ||
    !Number.isInteger(o.rounds) ||
    o.rounds < 1 ||
    o.rounds > ROUNDS_MAX
  ) {
    throw new Error(`bench kafka: --duration-s > 0, --partitions >= 1, --rounds 1..${ROUNDS_MAX}`);
  }
  return o;
}

/**
 * What both Kafka-listener clients take: bootstrap, topic, partitions, seconds, record bytes, the
 * window of unacknowledged records (the libs/client run's), linger ms.
 */
function kafkaClientArgs(kafkaBootstrap: string, topic: string, o: Options): string[] {
  const window = o.oneInFlight
    ? 1
    : producerWindowRecords(o.partitions, INFLIGHT_PER_PARTITION, BATCH_RECORDS);
  return [
    kafkaBootstrap,
    topic,
    String(o.partitions),
    String(o.durationS),
    String(RECORD_BYTES),
    String(window),
    String(o.oneInFlight ? 0 : LINGER_MS),
  ];
}

/** The librdkafka client as a child process; its one JSON line. */
function librdkafkaRun(kafkaBootstrap: string, topic: string, o: Options): Promise<ClientResult> {
  const script = join(
    fileURLToPath(new URL("../../../scripts/bench/kafka-librdkafka-client.py", import.meta.url)),
  );
  return childJson(PYTHON, [script, ...kafkaClientArgs(kafkaBootstrap, topic, o)], o);
}

/**
 * The Java-client half (test/java BenchClient: Kafka's own Java client, built by
 * scripts/setup/java-clients.sh) through the Kafka listeners, the same arguments as librdkafka's.
 */
export function javaRun(
  classpath: string,
  kafkaBootstrap: string,
  topic: string,
  o: Options,
): Promise<ClientResult> {
  return childJson(
    "java",
    [
      "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
      "-cp",
      classpath,
      "tern.javaclient.BenchClient",
      ...kafkaClientArgs(kafkaBootstrap, topic, o),
      // batch.size: the Java default (16 KiB) would send 16-record batches, not BATCH_RECORDS.
      String(BATCH_RECORDS * (RECORD_BYTES + RECORD_OVERHEAD_BYTES_MAX)),
    ],
    o,
  );
}

/** The libs/client half in its own process (like the librdkafka one): this file with --grpc-client. */
export function grpcRun(bootstrap: string, topic: string, o: Options): Promise<ClientResult> {
  return childJson(
    process.execPath,
    [
      // TERN_NODE_EXEC_ARGV="--cpu-prof --cpu-prof-dir=D" profiles this client like the services.
      ...(process.env.TERN_NODE_EXEC_ARGV ?? "").split(" ").filter((a) => a.length > 0),
      fileURLToPath(import.meta.url),
      "--grpc-client",
      bootstrap,
      topic,
      JSON.stringify(o),
    ],
    o,
  );
}

function childJson(command: string, args: string[], o: Options): Promise<ClientResult> {
  return childJsonOf<ClientResult>(
    command,
    args,
    Math.max(CLIENT_TIMEOUT_MS_MIN, o.durationS * 1000 * 4),
  );
}

/** Produce with the libs/client Producer, then read everything back with its Consumer. */
async function grpcClient(bootstrap: string, topic: string, o: Options): Promise<void> {
  const { producerLoad } = await import("./_producer-load.js");
  const { Consumer } = await import("../../libs/client/index.js");
  const r = await producerLoad({
    bootstrap,
    topic,
    partitions: o.partitions,
    durationS: o.durationS,
    recordBytes: RECORD_BYTES,
    ...(o.oneInFlight
      ? { batchRecords: 1, inflight: 1, lingerMs: 0, windowRecords: 1 }
      : { batchRecords: BATCH_RECORDS, inflight: INFLIGHT_PER_PARTITION, lingerMs: LINGER_MS }),
  });
  const consumer = new Consumer({ bootstrap, isolationLevel: "read_uncommitted" });
  const tps = Array.from({ length: o.partitions }, (_, partition) => ({ topic, partition }));
  consumer.assign(tps);
  for (const tp of tps) consumer.seek(tp, 0n);
  let fetchedRecords = 0;
  let fetchedBytes = 0;
  const start = performance.now();
  const cpuStart = process.cpuUsage();
  // The first record of partition 0 was the warm-up send.
  const expected = r.produced + 1;
  while (fetchedRecords < expected && performance.now() - start < READ_BACK_TIMEOUT_MS) {
    for (const rec of await consumer.poll({ maxPollRecords: 10_000, timeoutMs: 1_000 })) {
      fetchedRecords += 1;
      fetchedBytes += rec.value?.length ?? 0;
    }
  }
  const fetchS = (performance.now() - start) / 1000;
  const cpu = process.cpuUsage(cpuStart);
  const fetchCpuMs = (cpu.user + cpu.system) / 1000;
  await consumer.close();
  process.stdout.write(
    JSON.stringify({ ...r, fetchedRecords, fetchedBytes, fetchS, fetchCpuMs }) + "\n",
  );
}

export async function run(args: string[]): Promise<number> {
  const o = options(args);
  const probe = spawnSync(PYTHON, ["-c", "import confluent_kafka"], { encoding: "utf8" });
  if (probe.status !== 0) {
    process.stderr.write(
      "bench kafka: /usr/bin/python3 cannot import confluent_kafka; install it with: apt-get install -y python3-confluent-kafka\n",
    );
    return 1;
  }
  const classpath = javaClasspath("kafka");
  const clients = classpath === undefined ? CLIENTS.slice(0, 2) : CLIENTS;
  const { startCluster } = await import("../cluster/process-cluster.js");
  const { freeBasePort } = await import("../cluster/free-base-port.js");
  const { Admin } = await import("../../libs/client/index.js");
  const dataDir = mkdtempSync(join(tmpdir(), "tern-bench-kafka-"));
  process.stderr.write(
    `bench kafka: starting 3 controllers + 3 brokers + 3 coordinators in ${dataDir}\n`,
  );
  const cluster = await startCluster({
    dataDir,
    basePort: o.basePort ?? (await freeBasePort()),
    env: { TERN_LOG_LEVEL: "warn" },
    healthTimeoutMs: 180_000,
  });
  const bootstrap = cluster.addresses("controller").join(",");
  const kafkaBootstrap = [0, 1, 2]
    .map((i) => `127.0.0.1:${cluster.spec("broker", i).kafkaPort}`)
    .join(",");
  const admin = new Admin({ bootstrap });
  if (o.quotasUnreached)
    await admin.alterClientQuotas([
      {
        entity: { user: null },
        ops: [
          { key: "producer_byte_rate", value: 1e12 },
          { key: "consumer_byte_rate", value: 1e12 },
          { key: "request_percentage", value: 100_000 },
        ],
      },
    ]);
  const brokerCpuMs = (): number =>
    [0, 1, 2].reduce((n, id) => {
      const pid = cluster.pid("broker", id);
      return n + ((pid === undefined ? undefined : cpuMs(pid)) ?? 0);
    }, 0);
  const kase = o.oneInFlight
    ? "1-inflight-1kib-acks-all-rf3-idempotent"
    : `${o.partitions}-partition${o.partitions > 1 ? "s" : ""}-1kib-acks-all-rf3-idempotent`;
  try {
    for (let round = 0; round < o.rounds; round++) {
      // Rotate which client goes first, so that none always meets a warmer cluster.
      const order = clients.map((_, i) => clients[(i + round) % clients.length]!);
      for (const client of order) {
        const topic = `bench-kafka-${client}-${round}`;
        const created = await admin.createTopics([
          { name: topic, partitions: o.partitions, replicationFactor: 3 },
        ]);
        if (created[0]?.error) throw created[0].error;
        await admin.waitForLeaders([topic]);
        const cpu0 = brokerCpuMs();
        const r =
          client === "librdkafka"
            ? await librdkafkaRun(kafkaBootstrap, topic, o)
            : client === "java"
              ? await javaRun(classpath!, kafkaBootstrap, topic, o)
              : await grpcRun(bootstrap, topic, o);
        const brokerCpu = brokerCpuMs() - cpu0;
        const producedMb = (r.produced * RECORD_BYTES) / 1e6;
        const extra = {
          client,
          round,
          duration_s: o.durationS,
          quotas: o.quotasUnreached ? "unreached" : "none",
          load_1m: Math.round(loadavg()[0]! * 100) / 100,
        };
        const line = (metric: string, value: number, unit: string): void => {
          process.stdout.write(
            JSON.stringify({
              bench: "kafka",
              case: kase,
              metric,
              value: Math.round(value * 100) / 100,
              unit,
              ...extra,
            }) + "\n",
          );
        };
        line("records_per_s", r.produced / r.produceS, "1/s");
        line("mb_per_s", producedMb / r.produceS, "MB/s");
        line("produce_latency_p50", r.p50, "ms");
        line("produce_latency_p99", r.p99, "ms");
        line("fetch_mb_per_s", r.fetchedBytes / r.fetchS / 1e6, "MB/s");
        // Produce and read-back together: the brokers' CPU per produced MB.
        if (producedMb > 0) line("broker_cpu_ms_per_mb", brokerCpu / producedMb, "ms/MB");
        if (r.failed > 0) line("failed_sends", r.failed, "1");
        // Which side bounds the read-back: the client's CPU over its wall time (stderr, not a figure).
        if (r.fetchCpuMs !== undefined && r.fetchS > 0)
          process.stderr.write(
            `bench kafka: ${client} read-back ${r.fetchS.toFixed(2)} s, client CPU ${(r.fetchCpuMs / 1000).toFixed(2)} s (${Math.round(r.fetchCpuMs / 10 / r.fetchS)} %)\n`,
          );
        if (r.fetchedRecords < r.produced)
          process.stderr.write(
            `bench kafka: ${client} read back ${r.fetchedRecords} of ${r.produced} records\n`,
          );
      }
    }
    return 0;
  } finally {
    await admin.close();
    await cluster.stop({ termTimeoutMs: 5_000 });
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (process.argv[2] === "--grpc-client") {
  const [bootstrap, topic, opts] = process.argv.slice(3);
  await grpcClient(bootstrap!, topic!, JSON.parse(opts!) as Options);
  process.exit(0);
}
