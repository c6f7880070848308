// `npm run bench -- storage [--gb G] [--data-dir DIR] [--keep] [--base-port P] [--timeout-s S]`
// Partition storage under retention (issue 14). Starts 3 controllers + 3 brokers (separate
// processes, loopback only) and one topic of 3 partitions, RF 3, default configs; writes G GB
// (default 4) of 1 KiB records with the libs/client Producer (acks=all), and prints as JSON Lines:
//   rss_mb                 each broker's RSS at 0, ¼, ½ and all of G retained ("retained-1gb", ...),
//                          once it settles with the writes paused (busy_rss_mib: when they paused);
//   catchup_mb_per_s       a broker SIGKILLed at ½ G and started again at ⅝ G: the bytes it missed
//                          over the seconds from its restart until, on every partition, its applied
//                          index reaches the leader's commit index (writes pause meanwhile);
//   restart_s              SIGKILL all three brokers, start them again: seconds until a produce to
//                          each partition succeeds;
//   fetch_mb_per_s         read-back of everything from offset 0 with the Consumer;
//   records_lost           acknowledged records (by id) missing from the read-back: must be 0;
//   broker_cpu_ms_per_mb   CPU of all brokers (utime+stime) per MB written, catch-up excluded;
//   fsyncs_per_1000_records from the brokers' *_fsyncs_total counters, when they expose one.
// Progress on stderr. Every wait is a bounded poll; the cluster is killed on any exit.
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statfsSync,
} from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import type { ProcessCluster } from "../cluster/process-cluster.js";
import type { Producer } from "../../libs/client/index.js";
import { RecordLedger } from "./_storage-ledger.js";
import {
  BYTES_PER_GB,
  RECORD_BYTES,
  storagePlan,
  gbLabel,
  type RssPoint,
} from "./_storage-plan.js";
import { byGroup, cpuMs, rssMiB, scrape, sumOf, type Sample } from "./_storage-probes.js";
import type { BrokerClient } from "../../services/broker/broker-client.js";

const TOPIC = "bench-storage";
const PARTITIONS = 3;
const BROKERS = [0, 1, 2] as const;
const EXIT_USAGE = 2;
const SEC = 1000;

/** Records sent and not yet acknowledged (≈ 20 MB, inside the Producer's 32 MiB buffer). */
const WINDOW_RECORDS = 20_000;
/** A write phase fails when nothing is acknowledged for this long. */
const STALL_MS = 120 * SEC;
const SEND_FAILURES_MAX = 100_000;
const PROGRESS_EVERY_MS = 10 * SEC;
const METRICS_TIMEOUT_MS = 3 * SEC;
const POLL_MS = 200;
/** RSS samples wait (writes paused) until no broker's RSS moves by more than this for the window. */
const RSS_SETTLED_MIB = 2;
const RSS_SETTLE_WINDOW_MS = 2 * SEC;
const RSS_SETTLE_POLL_MS = 250;
const RSS_SETTLE_MS = 15 * SEC;
const HEALTH_TIMEOUT_MS = 180 * SEC;
const EXIT_WAIT_MS = 10 * SEC;
const CATCHUP_TIMEOUT_MS = 600 * SEC;
/** Fallback only (no position gauges): the restarted broker's applied counter unchanged this long. */
const APPLIED_QUIET_MS = 5 * SEC;
const RESTART_TIMEOUT_MS = 180 * SEC;
const RESTART_PROBE_MS = 50;
const PROBE_DEADLINE_MS = 2 * SEC;
const READ_STALL_MS = 60 * SEC;
const POLL_RECORDS_MAX = 50_000;
const PARTITION_FETCH_BYTES = 8 * 1024 * 1024;
/** Free space wanted: 3 replicas of the data, with room for indexes and Raft metadata. */
const DISK_FACTOR = 3 * 1.5;
const DISK_SLACK_BYTES = 2 * BYTES_PER_GB;
const LOG_TAIL_LINES = 3;
const LOG_LINE_CHARS_MAX = 400;

interface Options {
  gb: number;
  dataDir: string | undefined;
  keep: boolean;
  basePort: number | undefined;
  timeoutS: number;
}

function options(args: string[]): Options {
  const { values } = parseArgs({
    args,
    strict: true,
    options: {
      gb: { type: "string" },
      "data-dir": { type: "string" },
      keep: { type: "boolean" },
      "base-port": { type: "string" },
      "timeout-s": { type: "string" },
    },
  });
  const gb = Number(values.gb ?? 4);
  return {
    gb,
    dataDir: values["data-dir"],
    keep: values.keep ?? false,
    basePort: values["base-port"] === undefined ? undefined : Number(values["base-port"]),
    timeoutS: Number(values["timeout-s"] ?? Math.round(900 + 900 * gb)),
  };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const log = (msg: string): void => void process.stderr.write(`bench storage: ${msg}\n`);
const round2 = (x: number): number => Math.round(x * 100) / 100;
const mb = (records: number): number => (records * RECORD_BYTES) / 1e6;

/** Resolves undefined after ms instead of hanging on a call that has no deadline of its own. */
function within<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p.catch(() => undefined),
    new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), ms))),
  ]).finally(() => clearTimeout(timer));
}

/** The last lines of a service's log, for an error message (the data dir may be removed next). */
function logTail(path: string): string {
  try {
    return readFileSync(path, "utf8")
      .trimEnd()
      .split("\n")
      .slice(-LOG_TAIL_LINES)
      .map((l) => `    ${l.slice(0, LOG_LINE_CHARS_MAX)}`)
      .join("\n");
  } catch {
    return "    (no log)";
  }
}

/** Per-broker counters at one moment; deltas count only brokers whose pid did not change. */
interface Counters {
  readonly pids: Map<number, number>;
  readonly cpuMs: Map<number, number>;
  readonly fsyncs: Map<number, number>;
  /** The same, per counter name (tern_raft_fsyncs_total, tern_segment_fsyncs_total, ...). */
  readonly fsyncsByName: Map<number, Map<string, number>>;
}

async function counters(cluster: ProcessCluster): Promise<Counters> {
  const out: Counters = {
    pids: new Map(),
    cpuMs: new Map(),
    fsyncs: new Map(),
    fsyncsByName: new Map(),
  };
  await Promise.all(
    BROKERS.map(async (b) => {
      const pid = cluster.pid("broker", b);
      const cpu = pid === undefined ? undefined : cpuMs(pid);
      if (pid === undefined || cpu === undefined) return;
      out.pids.set(b, pid);
      out.cpuMs.set(b, cpu);
      const samples = await scrape(cluster.spec("broker", b).metricsAddress, METRICS_TIMEOUT_MS);
      const fsyncs = samples && sumOf(samples, (n) => n.endsWith("fsyncs_total"));
      if (fsyncs !== undefined) out.fsyncs.set(b, fsyncs);
      const byName = new Map<string, number>();
      for (const x of samples ?? [])
        if (x.name.endsWith("fsyncs_total"))
          byName.set(x.name, (byName.get(x.name) ?? 0) + x.value);
      out.fsyncsByName.set(b, byName);
    }),
  );
  return out;
}

/** Per counter name, over the brokers whose pid did not change. */
function deltaByName(a: Counters, b: Counters, into: Map<string, number>): void {
  for (const [broker, pid] of a.pids) {
    const x = a.fsyncsByName.get(broker);
    const y = b.fsyncsByName.get(broker);
    if (b.pids.get(broker) !== pid || !x || !y) continue;
    for (const [name, v] of y) into.set(name, (into.get(name) ?? 0) + v - (x.get(name) ?? 0));
  }
}

function delta(a: Counters, b: Counters, field: "cpuMs" | "fsyncs"): number | undefined {
  let sum: number | undefined;
  for (const [broker, pid] of a.pids) {
    const x = a[field].get(broker);
    const y = b[field].get(broker);
    if (b.pids.get(broker) !== pid || x === undefined || y === undefined) continue;
    sum = (sum ?? 0) + (y - x);
  }
  return sum;
}

export async function run(args: string[]): Promise<number> {
  let o: Options;
  let plan: ReturnType<typeof storagePlan>;
  try {
    o = options(args);
    plan = storagePlan(o.gb);
    if (!(o.timeoutS > 0)) throw new RangeError(`--timeout-s must be positive, got ${o.timeoutS}`);
  } catch (e) {
    log(
      `${(e as Error).message}\nusage: npm run bench -- storage [--gb G] [--data-dir DIR] [--keep] [--base-port P] [--timeout-s S]`,
    );
    return EXIT_USAGE;
  }
  let dataDir: string;
  if (o.dataDir === undefined) dataDir = mkdtempSync(join(tmpdir(), "tern-bench-storage-"));
  else {
    dataDir = resolve(o.dataDir);
    // Never reuse (or later delete) someone's data: the directory must be new or empty.
    if (existsSync(dataDir) && readdirSync(dataDir).length > 0) {
      log(`--data-dir ${dataDir} is not empty; give a new or empty directory`);
      return EXIT_USAGE;
    }
    mkdirSync(dataDir, { recursive: true });
  }
  const removeDir = (): void => {
    if (!o.keep) rmSync(dataDir, { recursive: true, force: true });
  };
  const fs = statfsSync(dataDir);
  const needBytes = plan.totalRecords * RECORD_BYTES * DISK_FACTOR + DISK_SLACK_BYTES;
  if (fs.bavail * fs.bsize < needBytes) {
    log(
      `${dataDir} has ${((fs.bavail * fs.bsize) / BYTES_PER_GB).toFixed(1)} GB free; --gb ${o.gb} wants about ${(needBytes / BYTES_PER_GB).toFixed(1)} GB`,
    );
    removeDir();
    return EXIT_USAGE;
  }

  const { createCluster } = await import("../cluster/process-cluster.js");
  const { freeBasePort } = await import("../cluster/free-base-port.js");
  const basePort =
    o.basePort ?? (await freeBasePort({ controllers: 3, brokers: 3, coordinators: 0 }));
  const cluster = createCluster({
    dataDir,
    controllers: 3,
    brokers: 3,
    coordinators: 0,
    basePort,
    env: { TERN_LOG_LEVEL: "warn" },
  });
  // The services run detached (own process groups): kill them on every way out, a signal included.
  const killAll = (): void => {
    for (const p of cluster.processes())
      if (p.alive)
        try {
          process.kill(p.pid, "SIGKILL");
        } catch {
          /* already gone */
        }
  };
  const onSignal = (signal: NodeJS.Signals): void => {
    log(`${signal}: killing the cluster`);
    killAll();
    removeDir();
    process.exit(signal === "SIGINT" ? 130 : 143);
  };
  process.on("exit", killAll);
  for (const s of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.once(s, onSignal);
  log(
    `${o.gb} GB of 1 KiB records (${plan.totalRecords} records); cluster of 3 controllers + 3 brokers in ${dataDir}, base port ${basePort}`,
  );
  try {
    cluster.startAll();
    await cluster.waitForHealth({ timeoutMs: HEALTH_TIMEOUT_MS });
    return await measure(cluster, o, plan);
  } catch (e) {
    log(`failed: ${(e as Error).stack ?? String(e)}`);
    return 1;
  } finally {
    await cluster.stop({ termTimeoutMs: 5_000 }).catch((e: unknown) => log(`stop: ${String(e)}`));
    killAll();
    process.off("exit", killAll);
    for (const s of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.off(s, onSignal);
    if (o.keep) log(`kept ${dataDir}`);
    removeDir();
  }
}

async function measure(
  cluster: ProcessCluster,
  o: Options,
  plan: ReturnType<typeof storagePlan>,
): Promise<number> {
  const { Producer, Consumer } = await import("../../libs/client/index.js");
  const { ControllerClient } = await import("../../libs/metadata/controller-client.js");
  const { BrokerClient } = await import("../../services/broker/broker-client.js");
  const { parsePeers } = await import("../../libs/common/config.js");
  const { silentLogger } = await import("../../libs/common/logger.js");
  const deadlineMs = performance.now() + o.timeoutS * SEC;
  const checkDeadline = (what: string): void => {
    if (performance.now() > deadlineMs)
      throw new Error(`--timeout-s ${o.timeoutS} passed during ${what}`);
  };
  const settings = {
    gb: o.gb,
    partitions: PARTITIONS,
    replication_factor: 3,
    record_bytes: RECORD_BYTES,
  };
  const line = (
    kase: string,
    metric: string,
    value: number,
    unit: string,
    extra: Record<string, unknown> = {},
  ): void => {
    process.stdout.write(
      `${JSON.stringify({ bench: "storage", case: kase, metric, value: round2(value), unit, ...extra, ...settings })}\n`,
    );
  };
  const bootstrap = cluster.controllers
    .split(",")
    .map((x) => x.slice(x.indexOf("@") + 1))
    .join(",");
  const controller = new ControllerClient({
    controllers: parsePeers(cluster.controllers, "controllers"),
    logger: silentLogger(),
  });
  const brokerClients = new Map(cluster.addresses("broker").map((a) => [a, new BrokerClient(a)]));
  const ledger = new RecordLedger();
  const groups = Array.from({ length: PARTITIONS }, (_, p) => `${TOPIC}/${p}`);
  let producer: Producer | undefined;
  try {
    // Default configs: the retention under test is whatever the broker defaults to.
    for (let i = 0; ; i++) {
      const out = await within(
        controller.createTopics([{ name: TOPIC, partitions: PARTITIONS, replicationFactor: 3 }]),
        10 * SEC,
      );
      if (out?.every((x) => !x.error || x.error.errorName === "TOPIC_ALREADY_EXISTS")) break;
      if (i >= 100) throw new Error(`cannot create ${TOPIC}: ${JSON.stringify(out)}`);
      await sleep(300);
    }
    const leaders = async (): Promise<Map<number, number>> => {
      const m = await within(controller.metadata(), 5 * SEC);
      const out = new Map<number, number>();
      for (const p of m?.topics.find((t) => t.name === TOPIC)?.partitions ?? [])
        if (p.leader >= 0) out.set(p.partition, p.leader);
      return out;
    };
    for (let i = 0; (await leaders()).size < PARTITIONS; i++) {
      if (i >= 300) throw new Error(`no leader for every partition of ${TOPIC}`);
      await sleep(POLL_MS);
    }

    let stopped = -1;
    let restartedAlready = false;
    const brokerRss = (): Map<number, number> => {
      const out = new Map<number, number>();
      for (const b of BROKERS) {
        const pid = cluster.pid("broker", b);
        const rss = pid === undefined ? undefined : rssMiB(pid);
        if (rss !== undefined) out.set(b, rss);
      }
      return out;
    };
    const printRss = async (label: string, records: number): Promise<void> => {
      // RSS the moment the writes pause includes buffers that are garbage V8 has not collected
      // yet (it collects by allocation volume); with the writes paused it settles to what the
      // process holds: poll until no broker moved by more than RSS_SETTLED_MIB for
      // RSS_SETTLE_WINDOW_MS, at most RSS_SETTLE_MS. Both are printed.
      const busy = brokerRss();
      let previous = busy;
      let stableSinceMs = performance.now();
      for (const startMs = performance.now(); performance.now() - startMs < RSS_SETTLE_MS;) {
        await sleep(RSS_SETTLE_POLL_MS);
        const now = brokerRss();
        const moved = [...now].some(
          ([b, rss]) => Math.abs(rss - (previous.get(b) ?? rss)) > RSS_SETTLED_MIB,
        );
        if (moved) {
          previous = now;
          stableSinceMs = performance.now();
        } else if (performance.now() - stableSinceMs >= RSS_SETTLE_WINDOW_MS) break;
      }
      const settled = brokerRss();
      for (const b of BROKERS) {
        const pid = cluster.pid("broker", b);
        const rss = settled.get(b);
        if (pid === undefined || rss === undefined) {
          log(`${label}: no RSS for broker ${b}`);
          continue;
        }
        // Where the memory is (prom-client's process metrics): V8's heap, and buffers outside it.
        const samples = await scrape(cluster.spec("broker", b).metricsAddress, METRICS_TIMEOUT_MS);
        const mib = (name: string): number | undefined => {
          const v = samples && sumOf(samples, (n) => n === name);
          return v === undefined ? undefined : Math.round(v / 1024 / 1024);
        };
        line(label, "rss_mb", rss, "MiB", {
          broker: b,
          pid,
          retained_bytes: records * RECORD_BYTES,
          restarted: b === stopped && restartedAlready,
          busy_rss_mib: busy.get(b),
          heap_used_mib: mib("nodejs_heap_size_used_bytes"),
          external_mib: mib("nodejs_external_memory_bytes"),
        });
      }
    };

    /** Throws when a broker that should be running has exited (e.g. killed for memory). */
    const checkBrokers = (what: string): void => {
      const dead = cluster
        .processes()
        .filter(
          (x) => x.role === "broker" && !x.alive && x.id !== (restartedAlready ? -1 : stopped),
        );
      if (dead.length > 0)
        throw new Error(
          `${what}: ${dead.map((x) => `broker ${x.id} (pid ${x.pid}) exited ${String(x.exit ?? "?")}; its log ends:\n${logTail(x.logFile)}`).join("\n")}`,
        );
    };

    // ---- writing -------------------------------------------------------------------------
    producer = new Producer({
      bootstrap,
      acks: -1,
      idempotent: false,
      batchSize: 64 * (RECORD_BYTES + 64),
      lingerMs: 2,
      maxInFlightPerPartition: 5,
      retryBackoffMsMax: 200,
      logger: silentLogger(),
    });
    const p = producer;
    let writeMs = 0;
    let writeRecords = 0;
    let writeCpuMs = 0;
    let writeFsyncs: number | undefined;
    const fsyncsByName = new Map<string, number>();
    let failed = 0;
    let firstFailure: string | undefined;
    /** Sends new records until `target` are acknowledged; CPU and fsyncs of the phase are summed. */
    const writeUntil = async (target: number, what: string): Promise<void> => {
      const before = await counters(cluster);
      const t0 = performance.now();
      const ackedAtStart = ledger.acked;
      let outstanding = 0;
      let wake: (() => void) | undefined;
      let lastAcked = ledger.acked;
      let lastProgressMs = t0;
      let lastReportMs = t0;
      const loopsMax = (target - ledger.acked) * 4 + 1_000_000;
      for (let i = 0; ledger.acked < target; i++) {
        const now = performance.now();
        checkDeadline(what);
        if (i > loopsMax) throw new Error(`${what}: more than ${loopsMax} loop turns`);
        if (failed > SEND_FAILURES_MAX)
          throw new Error(`${what}: ${failed} sends failed (first: ${firstFailure})`);
        if (ledger.acked !== lastAcked) [lastAcked, lastProgressMs] = [ledger.acked, now];
        else if (now - lastProgressMs > STALL_MS)
          throw new Error(
            `${what}: no acknowledgement for ${STALL_MS / SEC} s at ${ledger.acked} records (first failure: ${firstFailure})`,
          );
        if (i % 5000 === 0) checkBrokers(what);
        if (now - lastReportMs > PROGRESS_EVERY_MS) {
          lastReportMs = now;
          log(
            `${what}: ${mb(ledger.acked).toFixed(0)} MB acknowledged, ${(mb(ledger.acked - ackedAtStart) / ((now - t0) / SEC)).toFixed(1)} MB/s`,
          );
        }
        if (outstanding < WINDOW_RECORDS && ledger.acked + outstanding < target) {
          const { id, value } = ledger.next();
          outstanding += 1;
          p.send({ topic: TOPIC, partition: id % PARTITIONS, value })
            .then(
              () => ledger.ack(id),
              (e: unknown) => {
                failed += 1;
                firstFailure ??= String((e as Error).message ?? e);
              },
            )
            .finally(() => {
              outstanding -= 1;
              const w = wake;
              wake = undefined;
              w?.();
            });
          // Yield now and then so acknowledgements are handled while the window fills.
          if (i % 1000 === 999) await sleep(0);
          continue;
        }
        await new Promise<void>((r) => {
          const timer = setTimeout(r, SEC);
          wake = () => {
            clearTimeout(timer);
            r();
          };
        });
      }
      const ms = performance.now() - t0;
      checkBrokers(what);
      const after = await counters(cluster);
      writeMs += ms;
      writeRecords += ledger.acked - ackedAtStart;
      writeCpuMs += delta(before, after, "cpuMs") ?? 0;
      const f = delta(before, after, "fsyncs");
      deltaByName(before, after, fsyncsByName);
      if (f !== undefined) writeFsyncs = (writeFsyncs ?? 0) + f;
      log(
        `${what}: ${mb(ledger.acked).toFixed(1)} MB acknowledged (${(mb(ledger.acked - ackedAtStart) / (ms / SEC)).toFixed(1)} MB/s)`,
      );
    };

    const [zero, quarter, half, all] = [0, 1, 2, 3].map((i) => plan.rssPoints[i]!) as [
      RssPoint,
      RssPoint,
      RssPoint,
      RssPoint,
    ];
    await printRss(zero.label, 0);
    await writeUntil(quarter.records, `writing to ${quarter.label}`);
    await printRss(quarter.label, ledger.acked);
    await writeUntil(half.records, `writing to ${half.label}`);
    await printRss(half.label, ledger.acked);

    // ---- one broker down, then its catch-up ----------------------------------------------
    const led = await leaders();
    // The broker leading the fewest partitions, so that the writes mostly go on undisturbed.
    stopped = [...BROKERS].sort(
      (a, b) =>
        [...led.values()].filter((x) => x === a).length -
          [...led.values()].filter((x) => x === b).length || b - a,
    )[0]!;
    log(
      `SIGKILL broker ${stopped} (leads ${[...led.values()].filter((x) => x === stopped).length} of ${PARTITIONS} partitions)`,
    );
    cluster.kill("broker", stopped, "SIGKILL");
    if (!(await cluster.waitForExit("broker", stopped, EXIT_WAIT_MS)))
      throw new Error(`broker ${stopped} did not exit after SIGKILL`);
    const ackedAtStop = ledger.acked;
    await writeUntil(plan.restartAtRecords, `writing with broker ${stopped} down`);
    const missedRecords = ledger.acked - ackedAtStop;
    const restartMs = performance.now();
    cluster.start("broker", stopped);
    restartedAlready = true;
    await cluster.waitForHealth({
      timeoutMs: HEALTH_TIMEOUT_MS,
      only: [{ role: "broker", id: stopped }],
    });
    const servingS = (performance.now() - restartMs) / SEC;
    const caught = await awaitCatchUp(cluster, stopped, groups, restartMs, (what) => {
      checkDeadline(what);
      checkBrokers(what);
    });
    const catchupS = (caught.doneMs - restartMs) / SEC;
    line(
      `broker-down-${gbLabel(mb(missedRecords) / 1e3)}gb`,
      "catchup_mb_per_s",
      mb(missedRecords) / catchupS,
      "MB/s",
      {
        broker: stopped,
        caught_up_bytes: missedRecords * RECORD_BYTES,
        catchup_s: round2(catchupS),
        serving_s: round2(servingS),
        method: caught.method,
        // The same bytes over the time after the process answered SERVING (its start-up left out).
        mb_per_s_after_serving: round2(mb(missedRecords) / Math.max(0.001, catchupS - servingS)),
      },
    );
    log(
      `broker ${stopped} caught up ${mb(missedRecords).toFixed(1)} MB in ${catchupS.toFixed(2)} s (${caught.method}; SERVING after ${servingS.toFixed(2)} s)`,
    );

    await writeUntil(all.records, `writing to ${all.label}`);
    await within(p.flush(), 60 * SEC);
    await printRss(all.label, ledger.acked);
    await within(p.close(), 30 * SEC);
    producer = undefined;

    if (writeMs > 0)
      line("writes", "mb_per_s", mb(writeRecords) / (writeMs / SEC), "MB/s", {
        records: writeRecords,
        seconds: round2(writeMs / SEC),
        failed_sends: failed,
        load_1m: round2(loadavg()[0]!),
      });
    if (writeCpuMs > 0)
      line("writes", "broker_cpu_ms_per_mb", writeCpuMs / mb(writeRecords), "ms/MB", {
        brokers: 3,
        note: "all three brokers; catch-up wait excluded",
      });
    if (writeFsyncs !== undefined)
      line(
        "writes",
        "fsyncs_per_1000_records",
        writeFsyncs / (writeRecords / 1000),
        "1/1000 records",
        { fsyncs: writeFsyncs, brokers: 3, by_counter: Object.fromEntries(fsyncsByName) },
      );
    else log("no broker exposes an *_fsyncs_total counter: fsyncs_per_1000_records not reported");

    // ---- full restart --------------------------------------------------------------------
    const killMs = performance.now();
    for (const b of BROKERS) cluster.kill("broker", b, "SIGKILL");
    for (const b of BROKERS)
      if (!(await cluster.waitForExit("broker", b, EXIT_WAIT_MS)))
        throw new Error(`broker ${b} did not exit after SIGKILL`);
    for (const b of BROKERS) cluster.start("broker", b);
    log("SIGKILLed all 3 brokers and started them again; probing each partition with a produce");
    const takes = await probeWrites(brokerClients, ledger, killMs, (what) => {
      checkDeadline(what);
      checkBrokers(what);
    });
    const restartS = Math.max(...takes) / SEC;
    line("kill-all-3-brokers", "restart_s", restartS, "s", {
      retained_bytes: ledger.acked * RECORD_BYTES,
      partitions_s: takes.map((ms) => round2(ms / SEC)),
    });
    log(`every partition takes writes ${restartS.toFixed(2)} s after the kill`);

    // ---- read back from offset 0 ---------------------------------------------------------
    const consumer = new Consumer({
      bootstrap,
      fetchMaxWaitMs: 100,
      partitionMaxBytes: PARTITION_FETCH_BYTES,
      requestTimeoutMs: 30 * SEC,
      logger: silentLogger(),
    });
    try {
      const tps = Array.from({ length: PARTITIONS }, (_, partition) => ({
        topic: TOPIC,
        partition,
      }));
      consumer.assign(tps);
      for (const tp of tps) consumer.seek(tp, 0n);
      const ends = await within(consumer.endOffsets(tps), 60 * SEC);
      if (!ends) throw new Error("no end offsets for the read-back");
      const endOf = new Map(ends.map((e) => [e.partition, e.offset]));
      const next = new Map(tps.map((tp) => [tp.partition, 0n]));
      const done = (): boolean =>
        tps.every((tp) => next.get(tp.partition)! >= endOf.get(tp.partition)!);
      let bytes = 0;
      let records = 0;
      // CPU of the read-back: the three brokers, and this process (the Consumer and the ledger).
      const brokerCpuMs = (): number =>
        BROKERS.reduce<number>((n, b) => n + (cpuMs(cluster.pid("broker", b) ?? -1) ?? 0), 0);
      const brokerCpu0 = brokerCpuMs();
      const selfCpu0 = process.cpuUsage();
      const t0 = performance.now();
      let lastDataMs = t0;
      let lastReportMs = t0;
      const pollsMax = ledger.acked + 100_000;
      for (let i = 0; !done(); i++) {
        checkDeadline("read-back");
        if (i > pollsMax) throw new Error(`read-back: more than ${pollsMax} polls`);
        const batch = await consumer.poll({ maxPollRecords: POLL_RECORDS_MAX, timeoutMs: SEC });
        const now = performance.now();
        if (batch.length > 0) lastDataMs = now;
        else if (now - lastDataMs > READ_STALL_MS) {
          log(
            `read-back: nothing for ${READ_STALL_MS / SEC} s; positions ${JSON.stringify([...next].map(([k, v]) => [k, String(v)]))}, ends ${JSON.stringify(ends.map((e) => String(e.offset)))}`,
          );
          break;
        }
        for (const r of batch) {
          ledger.read(r.value);
          records += 1;
          bytes += r.value?.length ?? 0;
          if (r.offset + 1n > next.get(r.partition)!) next.set(r.partition, r.offset + 1n);
        }
        if (now - lastReportMs > PROGRESS_EVERY_MS) {
          lastReportMs = now;
          log(`read-back: ${(bytes / 1e6).toFixed(0)} MB`);
        }
      }
      const readS = (performance.now() - t0) / SEC;
      const selfCpu = process.cpuUsage(selfCpu0);
      line("read-all-from-offset-0", "fetch_mb_per_s", bytes / 1e6 / readS, "MB/s", {
        records,
        bytes,
        seconds: round2(readS),
        complete: done(),
        broker_cpu_ms_per_mb: round2((brokerCpuMs() - brokerCpu0) / (bytes / 1e6)),
        consumer_cpu_ms_per_mb: round2((selfCpu.user + selfCpu.system) / 1000 / (bytes / 1e6)),
        load_1m: round2(loadavg()[0]!),
      });
      const s = ledger.summary();
      line("read-all-from-offset-0", "records_lost", s.lost, "1", {
        acknowledged: s.acked,
        read: s.read,
        duplicates: s.duplicates,
        unacknowledged_read: s.unackedRead,
        foreign: s.foreign,
      });
      log(
        `read back ${records} records (${(bytes / 1e6).toFixed(1)} MB) in ${readS.toFixed(2)} s; ${s.lost} of ${s.acked} acknowledged records missing`,
      );
      return s.lost === 0 ? 0 : 1;
    } finally {
      await within(consumer.close(), 10 * SEC);
    }
  } finally {
    if (producer) await within(producer.close(), 10 * SEC);
    for (const c of brokerClients.values()) c.close();
    controller.close();
  }
}

/**
 * Waits until the restarted broker has caught up on every group: its applied index reaches the
 * highest commit index the other brokers report (the leader's; no writes meanwhile). Without
 * those gauges (an older build), falls back to its applied-entries counter standing still.
 */
async function awaitCatchUp(
  cluster: ProcessCluster,
  broker: number,
  groups: readonly string[],
  sinceMs: number,
  checkDeadline: (what: string) => void,
): Promise<{ doneMs: number; method: string }> {
  const others = BROKERS.filter((b) => b !== broker);
  let lastApplied: number | undefined;
  let lastChangeMs = sinceMs;
  const turnsMax = CATCHUP_TIMEOUT_MS / POLL_MS + 1;
  for (let i = 0; i < turnsMax && performance.now() - sinceMs < CATCHUP_TIMEOUT_MS; i++) {
    checkDeadline("catch-up");
    const [mine, ...theirs] = await Promise.all(
      [broker, ...others].map((b) =>
        scrape(cluster.spec("broker", b).metricsAddress, METRICS_TIMEOUT_MS),
      ),
    );
    const now = performance.now();
    const peers = theirs.filter((s): s is Sample[] => s !== undefined);
    if (mine && peers.some((s) => s.some((x) => x.name === "tern_raft_commit_index"))) {
      const applied = byGroup(mine, "tern_raft_applied_index");
      const commits = peers.map((s) => byGroup(s, "tern_raft_commit_index"));
      const behind = groups.filter((g) => {
        const target = Math.max(...commits.map((c) => c.get(g) ?? 0));
        return target <= 0 || (applied.get(g) ?? -1) < target;
      });
      if (behind.length === 0)
        return { doneMs: now, method: "applied-index-reaches-leader-commit" };
    } else if (mine) {
      const applied = sumOf(mine, (n) => n === "tern_raft_applied_entries_total");
      if (applied !== lastApplied) [lastApplied, lastChangeMs] = [applied, now];
      else if (applied !== undefined && applied > 0 && now - lastChangeMs >= APPLIED_QUIET_MS) {
        return { doneMs: lastChangeMs, method: `applied-counter-quiet-${APPLIED_QUIET_MS / SEC}s` };
      }
    }
    await sleep(POLL_MS);
  }
  throw new Error(`broker ${broker} did not catch up within ${CATCHUP_TIMEOUT_MS / SEC} s`);
}

/**
 * After a full restart: one acks=all produce per partition every RESTART_PROBE_MS until each
 * succeeds, following NOT_LEADER_OR_FOLLOWER's leader hint (else trying the brokers in turn).
 * Answers the ms from `sinceMs` at which each partition first took a write.
 */
async function probeWrites(
  clients: Map<string, Pick<BrokerClient, "produce">>,
  ledger: RecordLedger,
  sinceMs: number,
  checkDeadline: (what: string) => void,
): Promise<number[]> {
  const addresses = [...clients.keys()];
  const doneMs = new Array<number | undefined>(PARTITIONS).fill(undefined);
  const hints = new Map<number, string>();
  const turnsMax = RESTART_TIMEOUT_MS / RESTART_PROBE_MS + 1;
  for (let turn = 0; turn < turnsMax && performance.now() - sinceMs < RESTART_TIMEOUT_MS; turn++) {
    checkDeadline("restart probes");
    await Promise.all(
      doneMs.map(async (d, partition) => {
        if (d !== undefined) return;
        const address = hints.get(partition) ?? addresses[(turn + partition) % addresses.length]!;
        hints.delete(partition);
        const { id, value } = ledger.next();
        const r = await clients
          .get(address)!
          .produce(
            {
              acks: -1,
              partitions: [
                { topic: TOPIC, partition, batch: { producerId: "-1", records: [{ value }] } },
              ],
            },
            PROBE_DEADLINE_MS,
          )
          .catch(() => undefined);
        const result = r?.partitions?.[0];
        if (result?.errorCode === "NONE") {
          doneMs[partition] = performance.now() - sinceMs;
          ledger.ack(id);
        } else if (result?.leader?.address && clients.has(result.leader.address))
          hints.set(partition, result.leader.address);
      }),
    );
    if (doneMs.every((d) => d !== undefined)) return doneMs as number[];
    await sleep(RESTART_PROBE_MS);
  }
  throw new Error(
    `not every partition took a write within ${RESTART_TIMEOUT_MS / SEC} s of the kill`,
  );
}
