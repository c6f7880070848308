// `npm run bench -- produce [--duration-s S] [--batch-records N] [--inflight K] [--base-port P]`
// Starts 3 controllers + 3 brokers, creates RF 3 topics with 1 and 6 partitions, then runs the
// client in its own process: 1 KiB records, acks=all, K requests in flight per partition for S
// seconds, then a fetch of everything from offset 0. JSON Lines on stdout (CONVENTIONS.md):
// records_per_s, mb_per_s, produce_latency_p50/p99 (ms), fetch mb_per_s; logs on stderr.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const RECORD_BYTES = 1024;
const ATTEMPTS_MAX = 100;
const FETCH_BYTES_MAX = 16 * 1024 * 1024;

interface Options {
  durationS: number;
  batchRecords: number;
  inflight: number;
  basePort: number;
}

function options(args: string[]): Options {
  const { values } = parseArgs({ args, options: { "duration-s": { type: "string" }, "batch-records": { type: "string" }, inflight: { type: "string" }, "base-port": { type: "string" } }, strict: true });
  return {
    durationS: Number(values["duration-s"] ?? 10),
    batchRecords: Number(values["batch-records"] ?? 64),
    inflight: Number(values.inflight ?? 4),
    basePort: Number(values["base-port"] ?? 43_000),
  };
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The client half: runs in its own process, prints one JSON object. */
async function client(brokers: string[], controllersFlag: string, topic: string, partitions: number, o: Options): Promise<void> {
  const { BrokerClient } = await import("../../services/broker/broker-client.js");
  const { ControllerClient } = await import("../../libs/metadata/controller-client.js");
  const { parsePeers } = await import("../../libs/common/config.js");
  const { silentLogger } = await import("../../libs/common/logger.js");
  const controller = new ControllerClient({ controllers: parsePeers(controllersFlag, "controllers"), logger: silentLogger() });
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
  const value = Buffer.alloc(RECORD_BYTES, 120);
  const records = Array.from({ length: o.batchRecords }, () => ({ value }));
  const latenciesMs: number[] = [];
  let produced = 0;
  const endMs = performance.now() + o.durationS * 1000;
  const startMs = performance.now();
  const worker = async (partition: number): Promise<void> => {
    while (performance.now() < endMs) {
      const address = leaders.get(partition)!;
      const t0 = performance.now();
      const r = await clients.get(address)!.produce({ acks: -1, partitions: [{ topic, partition, batch: { producerId: "-1", records } }] }).catch(() => undefined);
      if (r?.partitions[0].errorCode === "NONE") {
        latenciesMs.push(performance.now() - t0);
        produced += o.batchRecords;
      } else {
        await refresh().catch(() => undefined);
      }
    }
  };
  await Promise.all(Array.from({ length: partitions * o.inflight }, (_, i) => worker(i % partitions)));
  const produceS = (performance.now() - startMs) / 1000;
  let fetchedBytes = 0;
  const fetchStart = performance.now();
  for (let partition = 0; partition < partitions; partition++) {
    let offset = 0n;
    for (let i = 0; i < 1_000_000; i++) {
      const r = await clients.get(leaders.get(partition)!)!.fetch({ maxWaitMs: 0, maxBytes: FETCH_BYTES_MAX, partitions: [{ topic, partition, fetchOffset: offset.toString(), partitionMaxBytes: FETCH_BYTES_MAX }] });
      const p = r.partitions[0];
      if (p.errorCode !== "NONE" || p.batches.length === 0) break;
      for (const b of p.batches) for (const rec of b.records) fetchedBytes += rec.value.length + rec.key.length;
      offset = BigInt(p.nextFetchOffset);
    }
  }
  const fetchS = (performance.now() - fetchStart) / 1000;
  latenciesMs.sort((a, b) => a - b);
  process.stdout.write(JSON.stringify({ produced, produceS, p50: percentile(latenciesMs, 50), p99: percentile(latenciesMs, 99), fetchedBytes, fetchS }) + "\n");
  for (const c of clients.values()) c.close();
  controller.close();
}

function runClientProcess(args: string[]): Promise<any> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [fileURLToPath(import.meta.url), "--bench-client", ...args], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.on("exit", (code) => (code === 0 ? resolve(JSON.parse(out.trim().split("\n").pop()!)) : reject(new Error(`bench client exited ${code}`))));
  });
}

export async function run(args: string[]): Promise<number> {
  const o = options(args);
  const { startCluster } = await import("../cluster/process-cluster.js");
  const { ControllerClient } = await import("../../libs/metadata/controller-client.js");
  const { parsePeers } = await import("../../libs/common/config.js");
  const { silentLogger } = await import("../../libs/common/logger.js");
  const dataDir = mkdtempSync(join(tmpdir(), "tern-bench-produce-"));
  process.stderr.write(`bench produce: starting 3 controllers + 3 brokers in ${dataDir}\n`);
  const cluster = await startCluster({ dataDir, controllers: 3, brokers: 3, coordinators: 0, basePort: o.basePort, env: { TERN_LOG_LEVEL: "warn" }, healthTimeoutMs: 180_000 });
  const controller = new ControllerClient({ controllers: parsePeers(cluster.controllers, "controllers"), logger: silentLogger() });
  try {
    for (const partitions of [1, 6]) {
      const topic = `bench-${partitions}`;
      for (let i = 0; i < ATTEMPTS_MAX; i++) {
        const out = await controller.createTopics([{ name: topic, partitions, replicationFactor: 3 }]).catch(() => undefined);
        if (out?.every((x) => !x.error || x.error.errorName === "TOPIC_ALREADY_EXISTS")) break;
        await sleep(300);
      }
      const r = await runClientProcess([JSON.stringify(cluster.addresses("broker")), cluster.controllers, topic, String(partitions), JSON.stringify(o)]);
      const kase = `${partitions}-partition${partitions > 1 ? "s" : ""}-1kib-acks-all-rf3`;
      const extra = { batch_records: o.batchRecords, inflight_per_partition: o.inflight, duration_s: o.durationS };
      const line = (metric: string, value: number, unit: string): void => {
        process.stdout.write(JSON.stringify({ bench: "produce", case: kase, metric, value: Math.round(value * 100) / 100, unit, ...extra }) + "\n");
      };
      line("records_per_s", r.produced / r.produceS, "1/s");
      line("mb_per_s", (r.produced * RECORD_BYTES) / r.produceS / 1e6, "MB/s");
      line("produce_latency_p50", r.p50, "ms");
      line("produce_latency_p99", r.p99, "ms");
      line("fetch_mb_per_s", r.fetchedBytes / r.fetchS / 1e6, "MB/s");
    }
    return 0;
  } finally {
    controller.close();
    await cluster.stop({ termTimeoutMs: 5_000 });
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (process.argv[2] === "--bench-client") {
  const [brokers, controllersFlag, topic, partitions, opts] = process.argv.slice(3);
  await client(JSON.parse(brokers!), controllersFlag!, topic!, Number(partitions), JSON.parse(opts!));
  process.exit(0);
}
