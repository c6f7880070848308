// `npm run bench -- txn [--duration-s S] [--partitions N] [--commit-interval-ms M]
//                        [--batch-bytes B] [--max-in-flight K] [--base-port P]`
// The cost of transactions. Starts 3 controllers, 3 brokers and 3 coordinators in a temp dir,
// creates RF 3 topics, and runs every client in a child process of its own (_txn-worker.js,
// one for all runs, a new Producer/Consumer per run): an unreported warm-up (3 s idempotent,
// 3 s transactional, so that neither case runs code the process has not compiled yet), then
// for S seconds (default 15, in ABBA halves) at full speed with 1 KiB records and acks=all:
// (a) an idempotent producer, (b) the same producer transactional, committing once a
// transaction has been open M ms (default 100; Kafka's perf-test transaction-duration-ms).
// Both write to one topic: its leaders' placement (which Raft elections decide) then is the
// same for both, where two topics' placements differed. Then it reads that topic from offset 0
// eight times, read_uncommitted and read_committed in ABBA order twice, the fastest of each
// counting. JSON Lines on stdout (CONVENTIONS.md): records_per_s and mb_per_s per case, commit
// latency (EndTxn after the data is acknowledged), the cluster's CPU per MB and per commit (by
// role), and overhead_pct for produce (transactional vs idempotent) and fetch (read_committed
// vs read_uncommitted). A read_committed read must return exactly the acknowledged idempotent
// and committed records, else a WARNING on stderr. Last, the paced case: 5 s of the idle
// cluster, then 10 small transactions per second (one record per partition) for 15 s; the
// cluster's CPU per transaction beyond idle, by role (`cluster_cpu_ms_per_txn`), is what a
// commit costs without the noise of the records' own CPU. Progress on stderr. The cluster is
// stopped on every path.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import type { FetchResult, PacedResult, ProduceResult } from "./_txn-job.js";
import { WorkerProcess } from "./_txn-worker-process.js";
import {
  fetchAnomalies,
  pacedFigures,
  txnFigures,
  type ClusterRole,
  type PacedMeasurement,
  type ProducePhase,
  type TxnMeasurements,
  type TxnSettings,
} from "./_txn-figures.js";
import { freeBasePort } from "../cluster/free-base-port.js";
import { cpuMs } from "./_storage-probes.js";

const RECORD_BYTES = 1024;
const DURATION_S_MAX = 600;
const PARTITIONS_MAX = 50;
/**
 * Batches in flight per partition: the client's default, 5. (An earlier run with 5 found
 * committed batches missing: a pipelined batch overtaking the first of its epoch. The broker
 * now requires sequence 0 first; the read-back check below would catch a regression.)
 */
const MAX_IN_FLIGHT_DEFAULT = 5;
const MAX_IN_FLIGHT_MAX = 5;
/**
 * Records handed to send() and not yet acknowledged: what the sender keeps in flight plus one
 * batch per partition. The cluster stays busy, yet a transaction holds what its 100 ms produced
 * rather than a deep client-side queue that each commit would first have to drain.
 */
function pendingRecordsMax(o: Options): number {
  return o.partitions * (o.maxInFlight + 1) * Math.ceil(o.batchBytes / o.recordBytes);
}
const LINGER_MS = 5;
const PARTITION_FETCH_BYTES_MAX = 4 * 1024 * 1024;
const FETCH_TIMEOUT_S = 60;
const PRODUCE_ORDER = ["idempotent", "transactional", "transactional", "idempotent"] as const;
/** Reads are quick: two ABBA rounds, the fastest read of each level counting. */
const FETCH_ORDER = [
  "read_uncommitted",
  "read_committed",
  "read_committed",
  "read_uncommitted",
  "read_committed",
  "read_uncommitted",
  "read_uncommitted",
  "read_committed",
] as const;
/** Unreported idempotent and transactional runs first, so neither measured case pays a warm-up. */
const WARMUP_S = 3;
/** A client process gets its job's own time plus this much (startup, drain, close) before it is killed. */
const WORKER_SLACK_MS = 90_000;
const CLUSTER_HEALTH_TIMEOUT_MS = 180_000;
const TOPIC_TIMEOUT_MS = 60_000;
const STOP_TERM_TIMEOUT_MS = 5_000;
const TOPIC_WARMUP = "bench-txn-warmup";
/** Both produce cases write here (see the header). */
const TOPIC_MEASURED = "bench-txn";
const TRANSACTIONAL_ID = "bench-txn-producer";
/**
 * The paced case: small transactions (one record per partition) at this rate for PACED_S, after
 * IDLE_S of an idle cluster; its CPU per transaction is the commit's cost without the records'.
 */
const TOPIC_PACED = "bench-txn-paced";
const PACED_TXN_PER_S = 10;
const PACED_S = 15;
const IDLE_S = 5;

const here = dirname(fileURLToPath(import.meta.url));

interface Options extends TxnSettings {
  readonly basePort: number | undefined;
}

function positiveInt(name: string, raw: string | undefined, fallback: number, max: number): number {
  const v = raw === undefined ? fallback : Number(raw);
  if (!Number.isInteger(v) || v < 1 || v > max)
    throw new Error(`--${name} must be an integer in 1..${max}, got ${raw}`);
  return v;
}

function options(args: string[]): Options {
  const { values } = parseArgs({
    args,
    strict: true,
    options: {
      "duration-s": { type: "string" },
      partitions: { type: "string" },
      "commit-interval-ms": { type: "string" },
      "batch-bytes": { type: "string" },
      "max-in-flight": { type: "string" },
      "base-port": { type: "string" },
    },
  });
  return {
    durationS: positiveInt("duration-s", values["duration-s"], 15, DURATION_S_MAX),
    partitions: positiveInt("partitions", values.partitions, 3, PARTITIONS_MAX),
    commitIntervalMs: positiveInt("commit-interval-ms", values["commit-interval-ms"], 100, 60_000),
    batchBytes: positiveInt("batch-bytes", values["batch-bytes"], 64 * 1024, 4 * 1024 * 1024),
    recordBytes: RECORD_BYTES,
    maxInFlight: positiveInt(
      "max-in-flight",
      values["max-in-flight"],
      MAX_IN_FLIGHT_DEFAULT,
      MAX_IN_FLIGHT_MAX,
    ),
    basePort:
      values["base-port"] === undefined
        ? undefined
        : positiveInt("base-port", values["base-port"], 0, 65_535),
  };
}

const startedAtMs = performance.now();

function progress(message: string): void {
  process.stderr.write(
    `bench txn [${((performance.now() - startedAtMs) / 1000).toFixed(1)} s]: ${message}\n`,
  );
}

async function createTopics(bootstrap: string, partitions: number): Promise<void> {
  const { Admin } = await import("../../libs/client/index.js");
  const admin = new Admin({ bootstrap });
  const names = [TOPIC_WARMUP, TOPIC_MEASURED, TOPIC_PACED];
  try {
    const deadlineMs = Date.now() + TOPIC_TIMEOUT_MS;
    for (let pending = names; pending.length > 0;) {
      if (Date.now() > deadlineMs)
        throw new Error(`topics ${pending.join(", ")} not created within ${TOPIC_TIMEOUT_MS} ms`);
      const outcomes = await admin
        .createTopics(pending.map((name) => ({ name, partitions, replicationFactor: 3 })))
        .catch(() => undefined);
      if (outcomes)
        pending = pending.filter((n) => {
          const e = outcomes.find((o) => o.name === n)?.error;
          return e !== undefined && e.errorName !== "TOPIC_ALREADY_EXISTS";
        });
      if (pending.length > 0) await new Promise((r) => setTimeout(r, 300));
    }
    await admin.waitForLeaders(names, TOPIC_TIMEOUT_MS);
  } finally {
    await admin.close();
  }
}

/** The CPU each role's processes used between two readings of their counters. */
function cpuDelta(
  start: Record<ClusterRole, number>,
  end: Record<ClusterRole, number>,
): Record<ClusterRole, number> {
  return {
    controller: end.controller - start.controller,
    broker: end.broker - start.broker,
    coordinator: end.coordinator - start.coordinator,
  };
}

async function measure(
  bootstrap: string,
  o: Options,
  clusterCpuMs: () => Record<ClusterRole, number>,
): Promise<TxnMeasurements & { paced: PacedMeasurement }> {
  const worker = new WorkerProcess(join(here, "_txn-worker.js"));
  try {
    const m = await measureWith(worker, bootstrap, o, clusterCpuMs);
    return { ...m, paced: await measurePaced(worker, bootstrap, o, clusterCpuMs) };
  } finally {
    await worker.close();
  }
}

async function measureWith(
  worker: WorkerProcess,
  bootstrap: string,
  o: Options,
  clusterCpuMs: () => Record<ClusterRole, number>,
): Promise<TxnMeasurements> {
  const produceJob = {
    kind: "produce" as const,
    bootstrap,
    durationS: o.durationS,
    recordBytes: o.recordBytes,
    batchBytes: o.batchBytes,
    lingerMs: LINGER_MS,
    maxInFlightPerPartition: o.maxInFlight,
    pendingRecordsMax: pendingRecordsMax(o),
    commitIntervalMs: o.commitIntervalMs,
  };
  for (const isTxn of [false, true]) {
    progress(
      `warm-up: ${isTxn ? "transactional" : "idempotent"} producer for ${WARMUP_S} s (not reported)`,
    );
    await worker.run<ProduceResult>(
      {
        ...produceJob,
        topic: TOPIC_WARMUP,
        durationS: WARMUP_S,
        ...(isTxn ? { transactionalId: TRANSACTIONAL_ID } : {}),
      },
      WARMUP_S * 1000 + WORKER_SLACK_MS,
    );
  }
  // ABBA in halves: machine load that drifts during the run hits both cases alike.
  const halfS = o.durationS / 2;
  const idempotent: ProducePhase[] = [];
  const transactional: ProducePhase[] = [];
  for (const kase of PRODUCE_ORDER) {
    const isTxn = kase === "transactional";
    progress(
      `${kase} producer for ${halfS} s${isTxn ? `, commit every ${o.commitIntervalMs} ms` : ""}`,
    );
    const job = {
      ...produceJob,
      durationS: halfS,
      topic: TOPIC_MEASURED,
      ...(isTxn ? { transactionalId: TRANSACTIONAL_ID } : {}),
    };
    const cpuStart = clusterCpuMs();
    const r = await worker.run<ProduceResult>(job, Math.ceil(halfS * 1000) + WORKER_SLACK_MS);
    const phase: ProducePhase = { ...r, cpuMsByRole: cpuDelta(cpuStart, clusterCpuMs()) };
    progress(
      `${kase}: ${r.records} records${isTxn ? ` in ${r.commits} commits (${r.aborts} aborts)` : ""} in ${r.elapsedS.toFixed(2)} s`,
    );
    (isTxn ? transactional : idempotent).push(phase);
  }
  const fetchJob = {
    kind: "fetch" as const,
    bootstrap,
    topic: TOPIC_MEASURED,
    partitions: o.partitions,
    partitionMaxBytes: PARTITION_FETCH_BYTES_MAX,
    timeoutS: FETCH_TIMEOUT_S,
  };
  const fetchTimeoutMs = FETCH_TIMEOUT_S * 1000 + WORKER_SLACK_MS;
  const readUncommitted: FetchResult[] = [];
  const readCommitted: FetchResult[] = [];
  // ABBA order, so neither level always reads second (warmer caches) or first.
  for (const isolation of FETCH_ORDER) {
    const r = await worker.run<FetchResult>({ ...fetchJob, isolation }, fetchTimeoutMs);
    progress(
      `read of ${TOPIC_MEASURED}, ${isolation}: ${r.records} records in ${r.elapsedS.toFixed(2)} s`,
    );
    (isolation === "read_committed" ? readCommitted : readUncommitted).push(r);
  }
  return { idempotent, transactional, readUncommitted, readCommitted };
}

async function measurePaced(
  worker: WorkerProcess,
  bootstrap: string,
  o: Options,
  clusterCpuMs: () => Record<ClusterRole, number>,
): Promise<PacedMeasurement> {
  progress(`paced: the idle cluster for ${IDLE_S} s`);
  const idleStart = clusterCpuMs();
  const idleStartMs = performance.now();
  await new Promise((resolve) => setTimeout(resolve, IDLE_S * 1000));
  const idleS = (performance.now() - idleStartMs) / 1000;
  const idleCpuMsByRole = cpuDelta(idleStart, clusterCpuMs());
  progress(`paced: ${PACED_TXN_PER_S} transactions/s of ${o.partitions} records for ${PACED_S} s`);
  const start = clusterCpuMs();
  const run = await worker.run<PacedResult>(
    {
      kind: "paced",
      bootstrap,
      topic: TOPIC_PACED,
      partitions: o.partitions,
      transactionalId: `${TRANSACTIONAL_ID}-paced`,
      transactionsPerS: PACED_TXN_PER_S,
      durationS: PACED_S,
      recordBytes: o.recordBytes,
    },
    PACED_S * 1000 + WORKER_SLACK_MS,
  );
  const cpuMsByRole = cpuDelta(start, clusterCpuMs());
  progress(`paced: ${run.commits} commits (${run.aborts} aborts) in ${run.elapsedS.toFixed(2)} s`);
  return {
    idleS,
    idleCpuMsByRole,
    run,
    transactionsPerS: PACED_TXN_PER_S,
    cpuMsByRole,
  };
}

export async function run(args: string[]): Promise<void> {
  const o = options(args);
  const { startCluster } = await import("../cluster/process-cluster.js");
  const basePort = o.basePort ?? (await freeBasePort());
  const dataDir = mkdtempSync(join(tmpdir(), "tern-bench-txn-"));
  progress(
    `starting 3 controllers + 3 brokers + 3 coordinators in ${dataDir} (base port ${basePort})`,
  );
  let cluster: Awaited<ReturnType<typeof startCluster>> | undefined;
  let succeeded = false;
  // A Ctrl-C must not leave nine processes behind: stop them, then exit.
  const onSignal = (signal: NodeJS.Signals): void => {
    progress(`${signal}: stopping the cluster`);
    void (cluster?.stop({ termTimeoutMs: STOP_TERM_TIMEOUT_MS }) ?? Promise.resolve()).finally(() =>
      process.exit(130),
    );
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  try {
    cluster = await startCluster({
      dataDir,
      controllers: 3,
      brokers: 3,
      coordinators: 3,
      basePort,
      env: { TERN_LOG_LEVEL: "warn" },
      healthTimeoutMs: CLUSTER_HEALTH_TIMEOUT_MS,
    });
    const bootstrap = cluster.controllers;
    await createTopics(bootstrap, o.partitions);
    progress(`topics ${TOPIC_WARMUP}, ${TOPIC_MEASURED}: ${o.partitions} partitions, RF 3`);
    const processes = cluster.processes();
    const clusterCpuMs = (): Record<ClusterRole, number> => {
      const byRole = { controller: 0, broker: 0, coordinator: 0 };
      for (const p of processes) byRole[p.role] += cpuMs(p.pid) ?? 0;
      return byRole;
    };
    const m = await measure(bootstrap, o, clusterCpuMs);
    for (const anomaly of fetchAnomalies(m)) progress(`WARNING: ${anomaly}`);
    for (const figure of [...txnFigures(m, o), ...pacedFigures(m.paced, o)])
      process.stdout.write(`${JSON.stringify(figure)}\n`);
    succeeded = true;
  } finally {
    process.removeListener("SIGINT", onSignal);
    process.removeListener("SIGTERM", onSignal);
    if (cluster) await cluster.stop({ termTimeoutMs: STOP_TERM_TIMEOUT_MS });
    // A failed run keeps the processes' logs for the post-mortem.
    if (succeeded && process.env.KEEP !== "1") rmSync(dataDir, { recursive: true, force: true });
    else progress(`failed; cluster logs kept in ${join(dataDir, "logs")}`);
  }
}

// Also runnable directly: node dist/scripts/bench/txn.js [options]
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await run(process.argv.slice(2));
  process.exit(0);
}
