// `npm run bench -- kafka-peer [--duration-s S=10] [--rounds R=1] [--read-back-mb M=1024]
// [--partition-counts N,N=1000] [--idle-s S=20] [--warm-up-s S=5] [--workload W]...
// [--base-port P]`;
// `npm run bench -- kafka-peer --table FILE` prints a run's JSON Lines (FILE) as the markdown
// table of docs/benchmarks.md.
// tern side by side with Apache Kafka on this machine, in one run. Fetches the newest Apache
// Kafka 4.x server jars that resolve (scripts/setup/kafka-tools.sh, cached in the gitignored
// .cache) and starts a 3-node KRaft cluster on loopback (combined broker+controller JVMs,
// scripts/bench/_apache-kafka.ts) beside a local tern cluster (3 controllers, 3 brokers, 3
// coordinators). Both get the same client, Kafka's Java client (test/java, through tern's Kafka
// listener), and tern's own TypeScript client over gRPC is a third line where it applies. RF 3,
// min.insync.replicas=2, acks=all, idempotent producers, 1 KiB records. Workloads (--workload
// picks some; each alternates which system goes first, round by round):
//   produce    1 and 6 partitions: records_per_s, mb_per_s, produce_latency_p50/p99,
//              fetch_mb_per_s and server_cpu_ms_per_mb; Kafka with its default flush policy
//              (variant flush-default: durability from replication, no fsync per write) and
//              with flush.messages=1 (variant flush-every-message); tern fsyncs every commit.
//   latency    1 record in flight on 1 partition, no linger: produce_latency_p50/p99.
//   txn        6 partitions, transactions committed every 100 ms and every 10 ms against the
//              same producer without transactions: overhead_pct, commit_latency_p50/p99,
//              server_cpu_ms_per_commit (the server CPU above the idempotent run's, per commit).
//   read-back  M MB written, then read from offset 0 with read_uncommitted and read_committed:
//              fetch_mb_per_s, server and client CPU per MB.
//   failover   one record at a time to a partition whose leader is SIGKILLed (with Kafka, not
//              the node leading the metadata quorum, so that only a partition leader dies as in
//              tern, where controllers are their own processes): failover_s, from the kill to
//              the next acknowledged write.
//   partitions for each N: fresh clusters one at a time; a topic of N partitions RF 3:
//              create_to_leaders_s; after --idle-s, idle_cpu_max_pct and idle_cpu_mean_pct
//              over the brokers and rss_max_mib; then the broker with most leaders SIGKILLed:
//              kill_to_leaders_s until every partition has a live leader.
// Every line carries system (kafka|tern), version, client, variant, load_1m and the CPU each
// side used (server_cpu_ms over the whole cluster, client_cpu_ms). Needs java (17+) and mvn.
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { ApacheKafkaCluster, apacheKafkaClasspath } from "./_apache-kafka.js";
import { childJson, javaClasspath } from "./_child-json.js";
import { peerTable, type PeerLine } from "./_peer-table.js";
import { producerWindowRecords } from "./_producer-load.js";
import { cpuMs, rssMiB } from "./_storage-probes.js";
import { grpcRun, javaRun, type ClientResult, type Options as KafkaBenchOptions } from "./kafka.js";

const WORKLOADS = ["produce", "latency", "txn", "read-back", "failover", "partitions"] as const;
type Workload = (typeof WORKLOADS)[number];
const RECORD_BYTES = 1024;
const BATCH_RECORDS = 64;
const INFLIGHT_PER_PARTITION = 5;
const LINGER_MS = 5;
const RECORD_OVERHEAD_BYTES_MAX = 32;
const TXN_PARTITIONS = 6;
const TXN_INTERVALS_MS = [100, 10] as const;
const READ_BACK_PARTITIONS = 6;
const FAILOVER_PARTITIONS = 3;
const FAILOVER_DURATION_S = 25;
/** Steady writes before the kill, so the client is past its start-up. */
const FAILOVER_WARM_MS = 3_000;
const IDLE_WINDOW_MS = 10_000;
const CHILD_TIMEOUT_MS = 900_000;
const TERN_HEALTH_TIMEOUT_MS = 180_000;
const ROUNDS_MAX = 10;
const PARTITION_COUNT_MAX = 20_000;

interface Options {
  durationS: number;
  rounds: number;
  readBackMb: number;
  partitionCounts: number[];
  idleS: number;
  /** The dropped first run per system (0: none). */
  warmUpS: number;
  workloads: Workload[];
  basePort: number | undefined;
  /** Print this run file's table instead of running. */
  table: string | undefined;
}

/** One system under test, as the workloads see it. */
interface System {
  readonly name: "kafka" | "tern";
  readonly version: string;
  /** Kafka-protocol bootstrap (tern: its brokers' Kafka listeners). */
  readonly kafkaBootstrap: string;
  /** tern's gRPC bootstrap (its controllers); undefined for Kafka. */
  readonly grpcBootstrap?: string;
  /** Every server process (Kafka: 3 JVMs; tern: 9 processes). */
  serverPids(): number[];
  /** The processes that host partitions, by Kafka node id. */
  brokerPids(): Map<number, number>;
  /** Topic configs every bench topic gets on this system. */
  readonly topicConfigs: readonly string[];
  /** A Kafka node id never to kill (Kafka: the metadata quorum's leader). */
  protectedNode(): Promise<number | undefined>;
  /** SIGKILLs the process behind a Kafka node id; the returned function starts it again. */
  kill(node: number): () => Promise<void>;
  stop(): Promise<void>;
}

function options(args: string[]): Options {
  const { values } = parseArgs({
    args,
    options: {
      "duration-s": { type: "string" },
      rounds: { type: "string" },
      "read-back-mb": { type: "string" },
      "partition-counts": { type: "string" },
      "idle-s": { type: "string" },
      "warm-up-s": { type: "string" },
      workload: { type: "string", multiple: true },
      "base-port": { type: "string" },
      table: { type: "string" },
    },
    strict: true,
  });
  const workloads = (values.workload ?? [...WORKLOADS]) as Workload[];
  const o: Options = {
    durationS: Number(values["duration-s"] ?? 10),
    rounds: Number(values.rounds ?? 1),
    readBackMb: Number(values["read-back-mb"] ?? 1024),
    partitionCounts: (values["partition-counts"] ?? "1000").split(",").map(Number),
    idleS: Number(values["idle-s"] ?? 20),
    warmUpS: Number(values["warm-up-s"] ?? 5),
    workloads,
    basePort: values["base-port"] === undefined ? undefined : Number(values["base-port"]),
    table: values.table,
  };
  if (
    !(o.durationS > 0) ||
    !Number.isInteger(o.rounds) ||
    o.rounds < 1 ||
    o.rounds > ROUNDS_MAX ||
    !(o.readBackMb > 0) ||
    !(o.idleS >= 0) ||
    !(o.warmUpS >= 0) ||
    o.partitionCounts.some((n) => !Number.isInteger(n) || n < 1 || n > PARTITION_COUNT_MAX) ||
    workloads.some((w) => !(WORKLOADS as readonly string[]).includes(w))
  )
    throw new Error(
      `bench kafka-peer: --duration-s > 0, --rounds 1..${ROUNDS_MAX}, --read-back-mb > 0, --idle-s >= 0, --warm-up-s >= 0, --partition-counts N,N (1..${PARTITION_COUNT_MAX}), --workload one of ${WORKLOADS.join(", ")}`,
    );
  return o;
}

const sumCpu = (pids: readonly number[]): number =>
  pids.reduce((n, pid) => n + (cpuMs(pid) ?? 0), 0);

/** JSON Lines on stdout: one figure per line, with the system, version and CPU of the run. */
function emitter(kase: string, system: System, extra: Record<string, unknown>) {
  return (metric: string, value: number, unit: string): void => {
    if (!Number.isFinite(value)) return;
    process.stdout.write(
      JSON.stringify({
        bench: "kafka-peer",
        case: kase,
        metric,
        value: Math.round(value * 100) / 100,
        unit,
        system: system.name,
        version: system.version,
        ...extra,
        load_1m: Math.round(loadavg()[0]! * 100) / 100,
      }) + "\n",
    );
  };
}

class Peer {
  private topicSeq = 0;

  constructor(
    private readonly o: Options,
    private readonly javaCp: string,
  ) {}

  java<T>(main: string, args: readonly (string | number)[], onLine?: (l: string) => void) {
    return childJson<T>(
      "java",
      [
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=error",
        "-cp",
        this.javaCp,
        `tern.javaclient.${main}`,
        ...args.map(String),
      ],
      CHILD_TIMEOUT_MS,
      onLine,
    );
  }

  /** A fresh topic on `system` (plus extra configs); resolves once every partition has a leader. */
  async topic(
    system: System,
    partitions: number,
    extraConfigs: readonly string[] = [],
  ): Promise<{ name: string; leadersMs: number }> {
    const name = `peer-${system.name}-${++this.topicSeq}-${randomUUID().slice(0, 8)}`;
    const r = await this.java<{ leadersMs: number; leaderless: number }>("PeerAdmin", [
      "create",
      system.kafkaBootstrap,
      name,
      partitions,
      3,
      ...system.topicConfigs,
      ...extraConfigs,
    ]);
    if (r.leaderless !== 0)
      throw new Error(`${system.name}: ${name} has ${r.leaderless} partitions without a leader`);
    return { name, leadersMs: r.leadersMs };
  }

  /** The node leading Apache Kafka's metadata quorum (undefined when it cannot be read). */
  quorumLeader(bootstrap: string): Promise<number | undefined> {
    return this.java<{ leaderId: number }>("PeerAdmin", ["quorum-leader", bootstrap]).then(
      (r) => r.leaderId,
      () => undefined,
    );
  }

  leaders(system: System, topic: string): Promise<Map<number, number>> {
    return this.java<{ leaders: Record<string, number> }>("PeerAdmin", [
      "leaders",
      system.kafkaBootstrap,
      topic,
    ]).then((r) => new Map(Object.entries(r.leaders).map(([p, l]) => [Number(p), l])));
  }

  private benchOptions(partitions: number, oneInFlight: boolean): KafkaBenchOptions {
    return {
      durationS: this.o.durationS,
      partitions,
      rounds: 1,
      basePort: undefined,
      oneInFlight,
      quotasUnreached: false,
    };
  }

  /** A run whose figures are dropped: the JVMs' JIT and both clusters' caches warm up first. */
  async warmUp(system: System): Promise<void> {
    const { name } = await this.topic(system, 6);
    await javaRun(this.javaCp, system.kafkaBootstrap, name, {
      ...this.benchOptions(6, false),
      durationS: this.o.warmUpS,
    });
  }

  /** The throughput or latency run of one client on a fresh topic. */
  async produce(
    system: System,
    kase: string,
    partitions: number,
    oneInFlight: boolean,
    client: "java" | "grpc",
    variant: string,
    extraConfigs: readonly string[] = [],
  ): Promise<void> {
    const { name } = await this.topic(system, partitions, extraConfigs);
    const bo = this.benchOptions(partitions, oneInFlight);
    const cpu0 = sumCpu(system.serverPids());
    const r: ClientResult & { produceCpuMs?: number; fetchCpuMs?: number } =
      client === "java"
        ? await javaRun(this.javaCp, system.kafkaBootstrap, name, bo)
        : await grpcRun(system.grpcBootstrap!, name, bo);
    const serverCpuMs = sumCpu(system.serverPids()) - cpu0;
    const clientCpuMs =
      r.produceCpuMs === undefined ? undefined : r.produceCpuMs + (r.fetchCpuMs ?? 0);
    const line = emitter(kase, system, {
      client,
      variant,
      duration_s: this.o.durationS,
      server_cpu_ms: Math.round(serverCpuMs),
      ...(clientCpuMs === undefined ? {} : { client_cpu_ms: clientCpuMs }),
    });
    const producedMb = (r.produced * RECORD_BYTES) / 1e6;
    line("records_per_s", r.produced / r.produceS, "1/s");
    if (!oneInFlight) line("mb_per_s", producedMb / r.produceS, "MB/s");
    line("produce_latency_p50", r.p50, "ms");
    line("produce_latency_p99", r.p99, "ms");
    if (!oneInFlight) line("fetch_mb_per_s", r.fetchedBytes / r.fetchS / 1e6, "MB/s");
    if (producedMb > 0) line("server_cpu_ms_per_mb", serverCpuMs / producedMb, "ms/MB");
    if (oneInFlight && r.produced > 0)
      line("server_cpu_ms_per_record", serverCpuMs / r.produced, "ms");
    if (r.failed > 0) line("failed_sends", r.failed, "1");
  }

  async txn(system: System): Promise<void> {
    const window = producerWindowRecords(TXN_PARTITIONS, INFLIGHT_PER_PARTITION, BATCH_RECORDS);
    const batchBytes = BATCH_RECORDS * (RECORD_BYTES + RECORD_OVERHEAD_BYTES_MAX);
    interface TxnResult {
      produced: number;
      failed: number;
      produceS: number;
      commits: number;
      commitP50: number;
      commitP99: number;
      clientCpuMs: number;
    }
    const runOne = async (intervalMs: number) => {
      const { name } = await this.topic(system, TXN_PARTITIONS);
      const cpu0 = sumCpu(system.serverPids());
      const r = await this.java<TxnResult>("TxnBenchClient", [
        system.kafkaBootstrap,
        name,
        TXN_PARTITIONS,
        this.o.durationS,
        RECORD_BYTES,
        window,
        LINGER_MS,
        batchBytes,
        intervalMs,
        `peer-txn-${randomUUID()}`,
      ]);
      return { ...r, serverCpuMs: sumCpu(system.serverPids()) - cpu0 };
    };
    const idem = await runOne(0);
    const idemRate = idem.produced / idem.produceS;
    const idemCpuPerRecord = idem.serverCpuMs / Math.max(1, idem.produced);
    const base = {
      client: "java",
      duration_s: this.o.durationS,
    };
    emitter(`txn-${TXN_PARTITIONS}-partitions`, system, {
      ...base,
      variant: "idempotent",
      server_cpu_ms: Math.round(idem.serverCpuMs),
      client_cpu_ms: idem.clientCpuMs,
    })("records_per_s", idemRate, "1/s");
    for (const intervalMs of TXN_INTERVALS_MS) {
      const t = await runOne(intervalMs);
      const rate = t.produced / t.produceS;
      const line = emitter(`txn-${TXN_PARTITIONS}-partitions`, system, {
        ...base,
        variant: `commit-every-${intervalMs}ms`,
        server_cpu_ms: Math.round(t.serverCpuMs),
        client_cpu_ms: t.clientCpuMs,
      });
      line("records_per_s", rate, "1/s");
      line("overhead_pct", (1 - rate / idemRate) * 100, "%");
      line("commits_per_s", t.commits / t.produceS, "1/s");
      line("commit_latency_p50", t.commitP50, "ms");
      line("commit_latency_p99", t.commitP99, "ms");
      if (t.commits > 0)
        line(
          "server_cpu_ms_per_commit",
          (t.serverCpuMs - idemCpuPerRecord * t.produced) / t.commits,
          "ms",
        );
      if (t.failed > 0) line("failed_sends", t.failed, "1");
    }
  }

  async readBack(system: System): Promise<void> {
    const records = Math.ceil((this.o.readBackMb * 1e6) / RECORD_BYTES);
    const { name } = await this.topic(system, READ_BACK_PARTITIONS);
    const window = producerWindowRecords(
      READ_BACK_PARTITIONS,
      INFLIGHT_PER_PARTITION,
      BATCH_RECORDS,
    );
    const fill = await this.java<{ produced: number; failed: number; produceS: number }>(
      "ReadBackClient",
      ["fill", system.kafkaBootstrap, name, READ_BACK_PARTITIONS, records, RECORD_BYTES, window],
    );
    const base = { client: "java", read_back_mb: this.o.readBackMb };
    emitter(`read-back-${this.o.readBackMb}mb`, system, { ...base, variant: "fill" })(
      "records_per_s",
      fill.produced / fill.produceS,
      "1/s",
    );
    for (const isolation of ["read_uncommitted", "read_committed"]) {
      const cpu0 = sumCpu(system.serverPids());
      const r = await this.java<{
        fetchedRecords: number;
        fetchedBytes: number;
        fetchS: number;
        clientCpuMs: number;
      }>("ReadBackClient", [
        "read",
        system.kafkaBootstrap,
        name,
        READ_BACK_PARTITIONS,
        fill.produced,
        isolation,
      ]);
      const serverCpuMs = sumCpu(system.serverPids()) - cpu0;
      const mb = r.fetchedBytes / 1e6;
      const line = emitter(`read-back-${this.o.readBackMb}mb`, system, {
        ...base,
        variant: isolation,
        server_cpu_ms: Math.round(serverCpuMs),
        client_cpu_ms: r.clientCpuMs,
      });
      line("fetch_mb_per_s", mb / r.fetchS, "MB/s");
      if (mb > 0) {
        line("server_cpu_ms_per_mb", serverCpuMs / mb, "ms/MB");
        line("client_cpu_ms_per_mb", r.clientCpuMs / mb, "ms/MB");
      }
      if (r.fetchedRecords < fill.produced)
        process.stderr.write(
          `bench kafka-peer: ${system.name} read back ${r.fetchedRecords} of ${fill.produced} records (${isolation})\n`,
        );
    }
  }

  /** A leader to kill: of a partition not led by the protected node. */
  private async victim(
    system: System,
    topic: string,
  ): Promise<{ partition: number; node: number }> {
    const avoid = await system.protectedNode();
    const leaders = await this.leaders(system, topic);
    for (const [partition, node] of leaders)
      if (node >= 0 && node !== avoid) return { partition, node };
    throw new Error(`${system.name}: no partition of ${topic} led outside node ${avoid}`);
  }

  async failover(system: System): Promise<void> {
    const { name } = await this.topic(system, FAILOVER_PARTITIONS);
    const { partition, node } = await this.victim(system, name);
    let killedAt = 0;
    let restart: (() => Promise<void>) | undefined;
    const r = await this.java<{ acked: number; failed: number; gaps: [number, number][] }>(
      "FailoverClient",
      [system.kafkaBootstrap, name, partition, FAILOVER_DURATION_S, RECORD_BYTES],
      (l) => {
        if (l.trim() !== "ready") return;
        setTimeout(() => {
          killedAt = Date.now();
          restart = system.kill(node);
        }, FAILOVER_WARM_MS);
      },
    );
    const gap = r.gaps.find(([from, to]) => from <= killedAt + 5 && to > killedAt);
    const line = emitter("failover-leader-sigkill", system, {
      client: "java",
      variant: "leader-sigkill",
      acked: r.acked,
    });
    if (killedAt === 0 || gap === undefined)
      process.stderr.write(
        `bench kafka-peer: ${system.name} failover: ${killedAt === 0 ? "no kill" : "no pause around the kill"} (gaps ${JSON.stringify(r.gaps)})\n`,
      );
    else line("failover_s", (gap[1] - killedAt) / 1000, "s");
    await restart?.();
  }

  async partitions(system: System, count: number): Promise<void> {
    const { name, leadersMs } = await this.topic(system, count);
    const line = emitter(`partitions-${count}`, system, { client: "java", partitions: count });
    line("create_to_leaders_s", leadersMs / 1000, "s");
    await new Promise((r) => setTimeout(r, this.o.idleS * 1000));
    const brokers = system.brokerPids();
    const before = new Map([...brokers].map(([n, pid]) => [n, cpuMs(pid) ?? 0]));
    const t0 = performance.now();
    await new Promise((r) => setTimeout(r, IDLE_WINDOW_MS));
    const wallMs = performance.now() - t0;
    const idlePct = [...brokers].map(
      ([n, pid]) => (((cpuMs(pid) ?? 0) - before.get(n)!) / wallMs) * 100,
    );
    line("idle_cpu_max_pct", Math.max(...idlePct), "%");
    line("idle_cpu_mean_pct", idlePct.reduce((a, b) => a + b, 0) / idlePct.length, "%");
    line("rss_max_mib", Math.max(...[...brokers.values()].map((pid) => rssMiB(pid) ?? 0)), "MiB");
    const leaders = await this.leaders(system, name);
    const avoid = await system.protectedNode();
    const counts = new Map<number, number>();
    for (const l of leaders.values()) if (l >= 0) counts.set(l, (counts.get(l) ?? 0) + 1);
    const [node, led] = [...counts].filter(([n]) => n !== avoid).sort((a, b) => b[1] - a[1])[0]!;
    line("leaders_on_busiest_pct", (Math.max(...counts.values()) / count) * 100, "%");
    const killedAt = Date.now();
    const restart = system.kill(node);
    const w = await this.java<{ doneAt: number; remaining: number }>("PeerAdmin", [
      "wait-leaders",
      system.kafkaBootstrap,
      name,
      node,
    ]);
    emitter(`partitions-${count}`, system, {
      client: "java",
      partitions: count,
      killed_leaders: led,
      remaining: w.remaining,
    })("kill_to_leaders_s", (w.doneAt - killedAt) / 1000, "s");
    await restart();
  }
}

async function startKafka(dir: string, basePort: number, classpath: string, peer: Peer) {
  const kafka = await ApacheKafkaCluster.start({ dir, basePort }, classpath);
  const system: System = {
    name: "kafka",
    version: kafka.version,
    kafkaBootstrap: kafka.bootstrap,
    serverPids: () => kafka.pids(),
    brokerPids: () => new Map([1, 2, 3].flatMap((n) => (kafka.pid(n) ? [[n, kafka.pid(n)!]] : []))),
    topicConfigs: ["min.insync.replicas=2"],
    protectedNode: () => peer.quorumLeader(kafka.bootstrap),
    kill: (node) => {
      kafka.kill(node);
      return () => kafka.restart(node);
    },
    stop: () => kafka.stop(),
  };
  return system;
}

async function startTern(dataDir: string, basePort: number | undefined): Promise<System> {
  const { startCluster, waitForHealth } = await import("../cluster/process-cluster.js");
  const { freeBasePort } = await import("../cluster/free-base-port.js");
  const cluster = await startCluster({
    dataDir,
    basePort: basePort ?? (await freeBasePort()),
    env: { TERN_LOG_LEVEL: "warn" },
    healthTimeoutMs: TERN_HEALTH_TIMEOUT_MS,
  });
  const pkg = JSON.parse(
    readFileSync(fileURLToPath(new URL("../../../package.json", import.meta.url)), "utf8"),
  ) as { version: string };
  const brokers = [0, 1, 2];
  return {
    name: "tern",
    version: pkg.version,
    kafkaBootstrap: brokers
      .map((i) => `127.0.0.1:${cluster.spec("broker", i).kafkaPort}`)
      .join(","),
    grpcBootstrap: cluster.addresses("controller").join(","),
    serverPids: () => cluster.processes().flatMap((p) => (p.alive ? [p.pid] : [])),
    brokerPids: () =>
      new Map(
        brokers.flatMap((i) => (cluster.pid("broker", i) ? [[i, cluster.pid("broker", i)!]] : [])),
      ),
    // Every bench topic keeps what the run writes (the default retention.bytes is 64 MiB).
    topicConfigs: ["min.insync.replicas=2", `retention.bytes=${2 * 1024 * 1024 * 1024}`],
    protectedNode: () => Promise.resolve(undefined),
    kill: (node) => {
      cluster.kill("broker", node);
      return async () => {
        await cluster.waitForExit("broker", node, 30_000);
        cluster.start("broker", node);
        await waitForHealth([cluster.address("broker", node)], {
          timeoutMs: TERN_HEALTH_TIMEOUT_MS,
        });
      };
    },
    stop: async () => {
      await cluster.stop({ termTimeoutMs: 5_000 });
    },
  };
}

export async function run(args: string[]): Promise<number> {
  const o = options(args);
  if (o.table !== undefined) {
    const lines = readFileSync(o.table, "utf8")
      .split("\n")
      .filter((l) => l.trim().startsWith("{"))
      .map((l) => JSON.parse(l) as PeerLine);
    process.stdout.write(peerTable(lines));
    return 0;
  }
  const kafkaCp = apacheKafkaClasspath();
  if (kafkaCp instanceof Error) {
    process.stderr.write(`bench kafka-peer: no Apache Kafka: ${kafkaCp.message}\n`);
    return 1;
  }
  const javaCp = javaClasspath("kafka-peer");
  if (javaCp === undefined) return 1;
  const { freeBasePort } = await import("../cluster/free-base-port.js");
  const peer = new Peer(o, javaCp);
  const root = mkdtempSync(join(tmpdir(), "tern-bench-kafka-peer-"));
  let seq = 0;
  const fresh = async (name: "kafka" | "tern"): Promise<System> => {
    const dir = join(root, `${name}-${++seq}`);
    process.stderr.write(`bench kafka-peer: starting ${name} in ${dir}\n`);
    return name === "kafka"
      ? startKafka(dir, await freeBasePort(), kafkaCp, peer)
      : startTern(dir, o.basePort);
  };
  const started: System[] = [];
  try {
    const steady = o.workloads.filter((w) => w !== "partitions");
    if (steady.length > 0) {
      const kafka = await fresh("kafka");
      started.push(kafka);
      const tern = await fresh("tern");
      started.push(tern);
      if (o.warmUpS > 0) for (const s of started) await peer.warmUp(s);
      let turn = 0;
      const each = async (f: (s: System) => Promise<void>) => {
        for (let round = 0; round < o.rounds; round++) {
          const order = turn++ % 2 === 0 ? [kafka, tern] : [tern, kafka];
          for (const s of order) await f(s);
        }
      };
      for (const w of steady) {
        process.stderr.write(`bench kafka-peer: ${w}\n`);
        if (w === "produce")
          for (const partitions of [1, 6]) {
            const kase = `produce-${partitions}-partition${partitions > 1 ? "s" : ""}-1kib`;
            await each(async (s) => {
              if (s.name === "kafka") {
                await peer.produce(s, kase, partitions, false, "java", "flush-default");
                await peer.produce(s, kase, partitions, false, "java", "flush-every-message", [
                  "flush.messages=1",
                ]);
              } else {
                await peer.produce(s, kase, partitions, false, "java", "fsync-every-commit");
                await peer.produce(s, kase, partitions, false, "grpc", "fsync-every-commit");
              }
            });
          }
        if (w === "latency")
          await each(async (s) => {
            const kase = "latency-1-inflight-1kib";
            if (s.name === "kafka") {
              await peer.produce(s, kase, 1, true, "java", "flush-default");
              await peer.produce(s, kase, 1, true, "java", "flush-every-message", [
                "flush.messages=1",
              ]);
            } else {
              await peer.produce(s, kase, 1, true, "java", "fsync-every-commit");
              await peer.produce(s, kase, 1, true, "grpc", "fsync-every-commit");
            }
          });
        if (w === "txn") await each((s) => peer.txn(s));
        if (w === "read-back") await each((s) => peer.readBack(s));
        if (w === "failover") await each((s) => peer.failover(s));
      }
      for (const s of started.splice(0)) await s.stop();
    }
    if (o.workloads.includes("partitions"))
      for (const [i, count] of o.partitionCounts.entries()) {
        // One cluster at a time: an idle figure is not another system's idle cost.
        for (const name of i % 2 === 0
          ? (["kafka", "tern"] as const)
          : (["tern", "kafka"] as const)) {
          const s = await fresh(name);
          started.push(s);
          await peer.partitions(s, count);
          await started.pop()!.stop();
        }
      }
    return 0;
  } finally {
    for (const s of started) await s.stop().catch(() => undefined);
    rmSync(root, { recursive: true, force: true });
  }
}
