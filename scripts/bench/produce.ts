// `npm run bench -- produce [--duration-s S] [--batch-records N] [--inflight K] [--case C]... [--base-port P] [--client raw|producer] [--tls]`
// Starts 3 controllers + 3 brokers, creates RF 3 topics with 1 and 6 partitions, then runs the
// client in its own process: 1 KiB records, acks=all, K requests in flight per partition for S
// seconds, then a fetch of everything from the log start (stored batches, decoded and
// CRC-checked in the client as the TypeScript Consumer does, with the next fetch in flight
// while an answer is decoded, as the Consumer pipelines its fetches). The topics keep 1 GiB per partition
// (retention.bytes) so that a run's records are all still there to read back; the default of
// 64 MiB would trim a 10 s run on a fast box. JSON Lines on stdout (CONVENTIONS.md):
// records_per_s, mb_per_s, produce_latency_p50/p99 (ms), fetch mb_per_s and the read-back's CPU
// per fetched MB (fetch_broker_cpu_ms_per_mb, fetch_client_cpu_ms_per_mb); logs on stderr.
// --client raw (default): plain Produce RPCs of N records (no idempotence). --client producer:
// one libs/client Producer (idempotent, batchSize N KiB, K ≤ 5 batches in flight per
// partition) fed as fast as its buffer accepts; latency is send() → acknowledgement per record.
// --tls: the same cases on a plaintext cluster, then on a TLS cluster (mutual TLS between the
// processes, docs/security.md) in the same run; every line says tls true/false, and
// tls_records_per_s_ratio / tls_latency_p50_ratio compare the two per case.
// Case 1-inflight (raw client): one request of one 1 KiB record in flight on a 1-partition
// topic, whatever --inflight/--batch-records say: the end-to-end commit latency (client process
// → leader broker → majority fsync → answer), produce_latency_p50/p99 in ms, plus the CPU of
// the brokers and the client per request, and first (2 s) the same path's floor without Raft:
// rpc_floor_latency_p50/p99 of ListOffsets(latest) to the leader; before both, 1 s of each
// unmeasured (the client's JIT warm-up, WARMUP_MS). It starts once every Raft
// group of every broker has a leader and is caught up (startup elections over). --case picks cases (default all three:
// 1-partition, 6-partitions, 1-inflight). --keep-data-dir leaves the cluster's directory
// (processes' stderr, e.g. TERN_RAFT_TRACE=1 output, in node-N/stderr.log) and says where.
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { percentile } from "./_txn-figures.js";
import { readBatch } from "../../libs/records/batch-reader.js";

const RECORD_BYTES = 1024;
/** USER_HZ of /proc/PID/stat times: 100 on every Linux this runs on. */
const CLOCK_TICKS_PER_S = 100;
const ATTEMPTS_MAX = 100;
const FETCH_BYTES_MAX = 16 * 1024 * 1024;
/** Bound on the fetch requests per partition in the read-back phase. */
const FETCH_REQUESTS_MAX = 1_000_000;
const BENCH_RETENTION_BYTES = 1024 * 1024 * 1024;
/** How long the 1-in-flight case first measures a round trip without Raft (ListOffsets). */
const RPC_FLOOR_MS = 2_000;
/**
 * Before measuring, the 1-in-flight client sends ListOffsets and then Produce requests for this
 * long each, unmeasured: a fresh process's first thousand calls run unoptimized code (client CPU
 * 1.2 ms per ListOffsets against 0.66 ms warm, p50 1.1-1.2 against 0.62 ms), which is the
 * client's JIT warm-up, not the path's latency.
 */
const WARMUP_MS = 1_000;
/** Bound on waiting for the brokers' groups to settle before the 1-in-flight case. */
const SETTLE_TIMEOUT_MS = 60_000;

interface Options {
  durationS: number;
  batchRecords: number;
  inflight: number;
  basePort: number | undefined;
  client: "raw" | "producer";
  tls: boolean;
  cases: readonly CaseName[];
  keepDataDir: boolean;
}

const CASES = ["1-partition", "6-partitions", "1-inflight"] as const;
type CaseName = (typeof CASES)[number];

function options(args: string[]): Options {
  const { values } = parseArgs({
    args,
    options: {
      "duration-s": { type: "string" },
      "batch-records": { type: "string" },
      inflight: { type: "string" },
      "base-port": { type: "string" },
      client: { type: "string" },
      tls: { type: "boolean" },
      case: { type: "string", multiple: true },
      "keep-data-dir": { type: "boolean" },
    },
    strict: true,
  });
  for (const c of values.case ?? []) {
    if (!(CASES as readonly string[]).includes(c))
      throw Object.assign(new Error(`--case must be one of ${CASES.join(", ")}, got "${c}"`), {
        code: "ERR_PARSE_ARGS_INVALID_OPTION_VALUE",
      });
  }
  const client = values.client === "producer" ? "producer" : "raw";
  return {
    durationS: Number(values["duration-s"] ?? 10),
    batchRecords: Number(values["batch-records"] ?? 64),
    inflight: Number(values.inflight ?? 4),
    basePort: values["base-port"] === undefined ? undefined : Number(values["base-port"]),
    client,
    tls: values.tls === true,
    // 1-inflight measures the raw Produce path; the Producer batches on its own.
    keepDataDir: values["keep-data-dir"] === true,
    cases: ((values.case as CaseName[] | undefined) ?? [...CASES]).filter(
      (c) => client === "raw" || c !== "1-inflight",
    ),
  };
}

/** CPU time (user + system, ms) and minor page faults a process has had so far; zeros when unreadable (not Linux). */
interface ProcessCounters {
  cpuMs: number;
  minorFaults: number;
  /** Context switches of every thread (event loop, thread pool, V8's): the process's wake-ups and hand-offs. */
  contextSwitches: number;
}

function processCounters(pid: number | undefined): ProcessCounters {
  if (pid === undefined) return { cpuMs: 0, minorFaults: 0, contextSwitches: 0 };
  try {
    // /proc/PID/stat: fields after the ")" that ends the command name; minflt, utime and stime are 10, 14 and 15.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return {
      cpuMs: ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_S,
      minorFaults: Number(fields[7]),
      contextSwitches: threadContextSwitches(pid),
    };
  } catch {
    return { cpuMs: 0, minorFaults: 0, contextSwitches: 0 };
  }
}

/** Voluntary + involuntary context switches summed over the threads alive now (/proc/PID/task). */
function threadContextSwitches(pid: number): number {
  let n = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const status = readFileSync(`/proc/${pid}/task/${tid}/status`, "utf8");
      for (const m of status.matchAll(/^(?:non)?voluntary_ctxt_switches:\s+(\d+)$/gm))
        n += Number(m[1]);
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return n;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The client half: runs in its own process, prints one JSON object. */
async function client(
  brokers: string[],
  controllersFlag: string,
  topic: string,
  partitions: number,
  o: Options,
  brokerPids: number[],
): Promise<void> {
  const { BrokerClient } = await import("../../services/broker/broker-client.js");
  const { ControllerClient } = await import("../../libs/metadata/controller-client.js");
  const { parsePeers } = await import("../../libs/common/config.js");
  const { silentLogger } = await import("../../libs/common/logger.js");
  const controller = new ControllerClient({
    controllers: parsePeers(controllersFlag, "controllers"),
    logger: silentLogger(),
  });
  const clients = new Map(brokers.map((a) => [a, new BrokerClient(a)]));
  const leaders = new Map<number, string>();
  const refresh = async (): Promise<void> => {
    const m = await controller.metadata();
    for (const p of m.topics.find((t) => t.name === topic)?.partitions ?? []) {
      const n = m.nodes.find((x) => x.role === "broker" && x.nodeId === p.leader);
      if (n) leaders.set(p.partition, n.address);
    }
  };
  for (let i = 0; i < ATTEMPTS_MAX && leaders.size < partitions; i++) {
    await refresh().catch(() => undefined);
    if (leaders.size < partitions) await sleep(200);
  }
  if (o.client === "producer") return producerClient(controllersFlag, topic, partitions, o);
  const value = Buffer.alloc(RECORD_BYTES, 120);
  const records = Array.from({ length: o.batchRecords }, () => ({ value }));
  // 1 in flight: first the floor of this path without Raft, ListOffsets(latest) to the same
  // leader one at a time (an in-memory answer: client and broker event loops, gRPC, loopback).
  const rpcMs: number[] = [];
  if (o.inflight === 1 && partitions === 1) {
    const request = { partitions: [{ topic, partition: 0, timestampMs: "-1" }] };
    const leader = clients.get(leaders.get(0)!)!;
    for (const endMs = performance.now() + WARMUP_MS; performance.now() < endMs;)
      await leader.listOffsets(request).catch(() => undefined);
    const warmup = {
      acks: -1,
      partitions: [{ topic, partition: 0, batch: { producerId: "-1", records } }],
    };
    for (const endMs = performance.now() + WARMUP_MS; performance.now() < endMs;)
      await leader.produce(warmup).catch(() => undefined);
    const rpcEndMs = performance.now() + RPC_FLOOR_MS;
    while (performance.now() < rpcEndMs) {
      const t0 = performance.now();
      const r = await clients
        .get(leaders.get(0)!)!
        .listOffsets(request)
        .catch(() => undefined);
      if (r?.partitions[0].errorCode === "NONE") rpcMs.push(performance.now() - t0);
    }
    rpcMs.sort((a, b) => a - b);
  }
  const latenciesMs: number[] = [];
  let produced = 0;
  const endMs = performance.now() + o.durationS * 1000;
  const startMs = performance.now();
  const cpuStart = process.cpuUsage();
  const brokersCounters = (): ProcessCounters => {
    const all = brokerPids.map(processCounters);
    return {
      cpuMs: all.reduce((n, c) => n + c.cpuMs, 0),
      minorFaults: all.reduce((n, c) => n + c.minorFaults, 0),
      contextSwitches: all.reduce((n, c) => n + c.contextSwitches, 0),
    };
  };
  const brokerStart = brokersCounters();
  const worker = async (partition: number): Promise<void> => {
    while (performance.now() < endMs) {
      const address = leaders.get(partition)!;
      const t0 = performance.now();
      const r = await clients
        .get(address)!
        .produce({
          acks: -1,
          partitions: [{ topic, partition, batch: { producerId: "-1", records } }],
        })
        .catch(() => undefined);
      if (r?.partitions[0].errorCode === "NONE") {
        latenciesMs.push(performance.now() - t0);
        produced += o.batchRecords;
      } else {
        await refresh().catch(() => undefined);
      }
    }
  };
  await Promise.all(
    Array.from({ length: partitions * o.inflight }, (_, i) => worker(i % partitions)),
  );
  const produceS = (performance.now() - startMs) / 1000;
  const cpu = process.cpuUsage(cpuStart);
  const clientCpuMs = (cpu.user + cpu.system) / 1000;
  const brokerEnd = brokersCounters();
  const brokerCpuMs = brokerEnd.cpuMs - brokerStart.cpuMs;
  const brokerMinorFaults = brokerEnd.minorFaults - brokerStart.minorFaults;
  const brokerContextSwitches = brokerEnd.contextSwitches - brokerStart.contextSwitches;
  // Fetch everything back from the log start, until the high watermark each answer reports. An
  // error is retried (a leader may have moved during the produce phase: refresh first) and
  // said on stderr, never swallowed: a silent stop used to report 0 MB/s.
  let fetchedBytes = 0;
  let fetchedRecords = 0;
  const fetchStart = performance.now();
  const fetchCpuStart = process.cpuUsage();
  const fetchBrokerStart = brokersCounters().cpuMs;
  for (let partition = 0; partition < partitions; partition++) {
    let offset = 0n;
    let failures = 0;
    const fetchAt = (at: bigint) =>
      clients
        .get(leaders.get(partition)!)!
        .fetch({
          maxWaitMs: 0,
          maxBytes: FETCH_BYTES_MAX,
          decodeRecords: false, // stored batches, decoded here as the TypeScript Consumer does
          partitions: [
            {
              topic,
              partition,
              fetchOffset: at.toString(),
              partitionMaxBytes: FETCH_BYTES_MAX,
            },
          ],
        })
        .catch((e: unknown) => ({ failure: e instanceof Error ? e.message : String(e) }));
    let pending = fetchAt(offset);
    for (let i = 0; i < FETCH_REQUESTS_MAX; i++) {
      const r = await pending;
      const p = "failure" in r ? undefined : r.partitions[0];
      if (p?.errorCode === "OFFSET_OUT_OF_RANGE" && offset < BigInt(p.logStartOffset)) {
        process.stderr.write(
          `bench fetch: ${topic}/${partition}: retention trimmed ${p.logStartOffset} records; reading from there\n`,
        );
        offset = BigInt(p.logStartOffset);
        pending = fetchAt(offset);
        continue;
      }
      if (p === undefined || p.errorCode !== "NONE") {
        failures += 1;
        process.stderr.write(
          `bench fetch: ${topic}/${partition} at ${offset}: ${p ? `${p.errorCode} ${p.errorMessage}` : (r as { failure: string }).failure}\n`,
        );
        if (failures >= ATTEMPTS_MAX) break;
        await refresh().catch(() => undefined);
        await sleep(100);
        pending = fetchAt(offset);
        continue;
      }
      offset = BigInt(p.nextFetchOffset);
      const done = offset >= BigInt(p.highWatermark);
      // Fetch pipelining, as the TypeScript Consumer (and Kafka's) does: the next fetch is in
      // flight while this answer is decoded, so the broker reads while the client decodes.
      if (!done) pending = fetchAt(offset);
      for (const b of p.batches) {
        const read = await readBatch(b.kafkaBatch, (_o, _t, key, value) => {
          fetchedBytes += (key?.length ?? 0) + (value?.length ?? 0);
        });
        if (!read.header.isControl) fetchedRecords += read.records.length;
      }
      if (done) break;
    }
  }
  if (fetchedRecords < produced)
    process.stderr.write(
      `bench fetch: ${topic}: fetched ${fetchedRecords} records, fewer than the ${produced} acknowledged\n`,
    );
  const fetchS = (performance.now() - fetchStart) / 1000;
  const fetchCpu = process.cpuUsage(fetchCpuStart);
  const fetchClientCpuMs = (fetchCpu.user + fetchCpu.system) / 1000;
  const fetchBrokerCpuMs = brokersCounters().cpuMs - fetchBrokerStart;
  latenciesMs.sort((a, b) => a - b);
  process.stdout.write(
    JSON.stringify({
      produced,
      produceS,
      p50: percentile(latenciesMs, 50),
      p99: percentile(latenciesMs, 99),
      ...(rpcMs.length > 0 ? { rpcP50: percentile(rpcMs, 50), rpcP99: percentile(rpcMs, 99) } : {}),
      fetchedBytes,
      fetchedRecords,
      fetchS,
      fetchClientCpuMs,
      fetchBrokerCpuMs,
      clientCpuMs,
      brokerCpuMs,
      brokerMinorFaults,
      brokerContextSwitches,
    }) + "\n",
  );
  for (const c of clients.values()) c.close();
  controller.close();
}

/** The libs/client Producer at full speed (scripts/bench/_producer-load.ts). */
async function producerClient(
  controllersFlag: string,
  topic: string,
  partitions: number,
  o: Options,
): Promise<void> {
  const { producerLoad } = await import("./_producer-load.js");
  const bootstrap = controllersFlag
    .split(",")
    .map((x) => x.slice(x.indexOf("@") + 1))
    .join(",");
  const r = await producerLoad({
    bootstrap,
    topic,
    partitions,
    durationS: o.durationS,
    recordBytes: RECORD_BYTES,
    batchRecords: o.batchRecords,
    inflight: o.inflight,
    lingerMs: 2,
  });
  if (r.failed > 0) process.stderr.write(`bench produce: ${r.failed} sends failed\n`);
  process.stdout.write(JSON.stringify({ ...r, fetchedBytes: 0, fetchS: 1 }) + "\n");
}

/** Sum of every *_fsyncs_total counter of the three brokers; undefined when one cannot be read. */
async function brokerFsyncs(cluster: {
  spec(role: "broker", id: number): { metricsAddress: string };
}): Promise<number | undefined> {
  const { scrape, sumOf } = await import("./_storage-probes.js");
  let total = 0;
  for (const id of [0, 1, 2]) {
    const samples = await scrape(cluster.spec("broker", id).metricsAddress, 5_000);
    const n = samples && sumOf(samples, (name) => name.endsWith("fsyncs_total"));
    if (n === undefined) return undefined;
    total += n;
  }
  return total;
}

/** A bench client process's last line: every client's counts; the raw client adds fetch and CPU figures. */
interface ClientFigures {
  readonly produced: number;
  readonly produceS: number;
  readonly p50: number;
  readonly p99: number;
  readonly rpcP50?: number;
  readonly rpcP99?: number;
  readonly failed: number;
  readonly fetchedBytes: number;
  readonly fetchS: number;
  /** CPU of the client and of the three brokers during the read-back. */
  readonly fetchClientCpuMs?: number;
  readonly fetchBrokerCpuMs?: number;
  readonly clientCpuMs: number;
  readonly brokerCpuMs: number;
  readonly brokerMinorFaults: number;
  readonly brokerContextSwitches?: number;
}

function runClientProcess(args: string[], env: NodeJS.ProcessEnv = {}): Promise<ClientFigures> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [fileURLToPath(import.meta.url), "--bench-client", ...args],
      { stdio: ["ignore", "pipe", "inherit"], env: { ...process.env, ...env } },
    );
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.on("exit", (code) =>
      code === 0
        ? resolve(JSON.parse(out.trim().split("\n").pop()!) as ClientFigures)
        : reject(new Error(`bench client exited ${code}`)),
    );
  });
}

export async function run(args: string[]): Promise<number> {
  const o = options(args);
  const figures = new Map<string, { rps: number; p50: number }>();
  // Plaintext first: starting the TLS cluster switches this process's channels to TLS.
  for (const tls of o.tls ? [false, true] : [false]) {
    const code = await runOnce(o, tls, figures);
    if (code !== 0) return code;
  }
  if (o.tls) {
    for (const [kase, plain] of figures) {
      if (kase.endsWith("/tls")) continue;
      const secure = figures.get(`${kase}/tls`);
      if (!secure) continue;
      const extra = {
        client: o.client,
        batch_records: o.batchRecords,
        inflight_per_partition: o.inflight,
        duration_s: o.durationS,
      };
      process.stdout.write(
        JSON.stringify({
          bench: "produce",
          case: kase,
          metric: "tls_records_per_s_ratio",
          value: Math.round((secure.rps / plain.rps) * 1000) / 1000,
          unit: "1",
          ...extra,
        }) + "\n",
      );
      process.stdout.write(
        JSON.stringify({
          bench: "produce",
          case: kase,
          metric: "tls_latency_p50_ratio",
          value: Math.round((secure.p50 / plain.p50) * 1000) / 1000,
          unit: "1",
          ...extra,
        }) + "\n",
      );
    }
  }
  return 0;
}

async function runOnce(
  o: Options,
  tls: boolean,
  figures: Map<string, { rps: number; p50: number }>,
): Promise<number> {
  const { startCluster } = await import("../cluster/process-cluster.js");
  const { ControllerClient } = await import("../../libs/metadata/controller-client.js");
  const { processCredentials } = await import("../../libs/server/tls/credentials.js");
  const { parsePeers } = await import("../../libs/common/config.js");
  const { silentLogger } = await import("../../libs/common/logger.js");
  const dataDir = mkdtempSync(join(tmpdir(), "tern-bench-produce-"));
  process.stderr.write(
    `bench produce: starting 3 controllers + 3 brokers${o.client === "producer" ? " + 3 coordinators" : ""}${tls ? " with TLS" : ""} in ${dataDir}\n`,
  );
  // The idempotent Producer takes its producer id from a coordinator.
  const { freeBasePort } = await import("../cluster/free-base-port.js");
  const basePort = o.basePort !== undefined && !tls ? o.basePort : await freeBasePort();
  const cluster = await startCluster({
    dataDir,
    controllers: 3,
    brokers: 3,
    coordinators: o.client === "producer" ? 3 : 0,
    basePort,
    env: { TERN_LOG_LEVEL: "warn" },
    healthTimeoutMs: 180_000,
    tls,
  });
  const clientEnv = cluster.tls
    ? {
        TERN_TLS_CA_FILE: cluster.tls.caFile,
        TERN_TLS_CERT_FILE: cluster.tls.client.certFile,
        TERN_TLS_KEY_FILE: cluster.tls.client.keyFile,
      }
    : {};
  const controller = new ControllerClient({
    controllers: parsePeers(cluster.controllers, "controllers"),
    logger: silentLogger(),
    channelCredentials: processCredentials(), // startCluster set this process's TLS
  });
  try {
    for (const name of o.cases) {
      const partitions = name === "6-partitions" ? 6 : 1;
      const co: Options = name === "1-inflight" ? { ...o, inflight: 1, batchRecords: 1 } : o;
      const topic = `bench-${partitions}`;
      for (let i = 0; i < ATTEMPTS_MAX; i++) {
        const out = await controller
          .createTopics([
            {
              name: topic,
              partitions,
              replicationFactor: 3,
              config: { "retention.bytes": String(BENCH_RETENTION_BYTES) },
            },
          ])
          .catch(() => undefined);
        if (out?.every((x) => !x.error || x.error.errorName === "TOPIC_ALREADY_EXISTS")) break;
        await sleep(300);
      }
      if (name === "1-inflight") {
        // One request at a time is sensitive to anything else the brokers do: start once the
        // startup work is over (every Raft group of every broker has a leader and is caught up:
        // the 50 __consumer_offsets groups elect and quiesce during the first seconds).
        const { waitForRejoin } = await import("./_rejoin.js");
        const metrics = new Map(
          [0, 1, 2].map((id) => [id, cluster.spec("broker", id).metricsAddress]),
        );
        for (const id of metrics.keys()) await waitForRejoin(id, metrics, SETTLE_TIMEOUT_MS);
      }
      const fsyncsBefore = await brokerFsyncs(cluster);
      const r = await runClientProcess(
        [
          JSON.stringify(cluster.addresses("broker")),
          cluster.controllers,
          topic,
          String(partitions),
          JSON.stringify(co),
          JSON.stringify([0, 1, 2].map((id) => cluster.pid("broker", id))),
        ],
        clientEnv,
      );
      const fsyncsAfter = await brokerFsyncs(cluster);
      const kase =
        name === "1-inflight"
          ? name
          : `${partitions}-partition${partitions > 1 ? "s" : ""}-1kib-acks-all-rf3`;
      figures.set(tls ? `${kase}/tls` : kase, { rps: r.produced / r.produceS, p50: r.p50 });
      const extra = {
        tls,
        client: o.client,
        batch_records: co.batchRecords,
        inflight_per_partition: co.inflight,
        duration_s: o.durationS,
        load_1m: Math.round(loadavg()[0]! * 100) / 100,
      };
      const line = (metric: string, value: number, unit: string): void => {
        process.stdout.write(
          JSON.stringify({
            bench: "produce",
            case: kase,
            metric,
            value: Math.round(value * 100) / 100,
            unit,
            ...extra,
          }) + "\n",
        );
      };
      line("records_per_s", r.produced / r.produceS, "1/s");
      line("mb_per_s", (r.produced * RECORD_BYTES) / r.produceS / 1e6, "MB/s");
      line("produce_latency_p50", r.p50, "ms");
      line("produce_latency_p99", r.p99, "ms");
      if (r.rpcP50 !== undefined && r.rpcP99 !== undefined) {
        line("rpc_floor_latency_p50", r.rpcP50, "ms");
        line("rpc_floor_latency_p99", r.rpcP99, "ms");
      }
      // Every fsync of the three brokers (Raft host batches, entry journal, segment files) per 1,000 records.
      if (fsyncsBefore !== undefined && fsyncsAfter !== undefined && r.produced > 0)
        line("fsyncs_per_1000_records", ((fsyncsAfter - fsyncsBefore) * 1000) / r.produced, "1");
      if (o.client === "raw") {
        line("fetch_mb_per_s", r.fetchedBytes / r.fetchS / 1e6, "MB/s");
        // The read-back's load-independent cost: CPU per fetched MB, brokers and client apart
        // (the rate is bound by the busier side; both work at once, fetches being pipelined).
        const fetchedMb = r.fetchedBytes / 1e6;
        if (fetchedMb > 0 && r.fetchBrokerCpuMs !== undefined && r.fetchClientCpuMs !== undefined) {
          line("fetch_broker_cpu_ms_per_mb", r.fetchBrokerCpuMs / fetchedMb, "ms/MB");
          line("fetch_client_cpu_ms_per_mb", r.fetchClientCpuMs / fetchedMb, "ms/MB");
        }
        // Load-independent: CPU spent per produced MB (all three brokers; the client alone).
        const producedMb = (r.produced * RECORD_BYTES) / 1e6;
        if (producedMb > 0 && r.brokerCpuMs > 0)
          line("broker_cpu_ms_per_mb", r.brokerCpuMs / producedMb, "ms/MB");
        // Page faults are costly on this VM (~18 µs each, measured): fresh memory is CPU too.
        if (producedMb > 0 && r.brokerMinorFaults > 0)
          line("broker_minor_faults_per_mb", r.brokerMinorFaults / producedMb, "1/MB");
        if (producedMb > 0) line("client_cpu_ms_per_mb", r.clientCpuMs / producedMb, "ms/MB");
        // One record per request: CPU per acknowledged request, all three brokers and the client.
        if (name === "1-inflight" && r.produced > 0) {
          line("broker_cpu_ms_per_request", r.brokerCpuMs / r.produced, "ms");
          line("client_cpu_ms_per_request", r.clientCpuMs / r.produced, "ms");
          // Load-independent count of the hand-offs per request (event-loop wake-ups, thread-pool tasks).
          if (r.brokerContextSwitches !== undefined)
            line("broker_context_switches_per_request", r.brokerContextSwitches / r.produced, "1");
        }
      } else line("failed_sends", r.failed, "1");
    }
    return 0;
  } finally {
    controller.close();
    await cluster.stop({ termTimeoutMs: 5_000 });
    if (o.keepDataDir) process.stderr.write(`bench produce: kept ${dataDir}\n`);
    else rmSync(dataDir, { recursive: true, force: true });
  }
}

if (process.argv[2] === "--bench-client") {
  const [brokers, controllersFlag, topic, partitions, opts, pids] = process.argv.slice(3);
  await client(
    JSON.parse(brokers!),
    controllersFlag!,
    topic!,
    Number(partitions),
    JSON.parse(opts!),
    JSON.parse(pids ?? "[]"),
  );
  process.exit(0);
}
