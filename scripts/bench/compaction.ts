// `npm run bench -- compaction [--bytes B] [--rounds R] [--keys K] [--segment-bytes S] [--keep] [--base-port P] [--timeout-s S]`
// Log compaction (issue 39; docs/storage.md, "Compaction"). Starts 3 controllers + 3 brokers
// (separate processes, loopback only) and one topic of 1 partition, RF 3,
// cleanup.policy=compact, S-byte segments (default 32 MiB); writes B bytes in total (default
// 256 MiB; the figure is --bytes 1073741824) of 1 KiB records over K keys (default
// 10,000) with the libs/client Producer (acks=all), in R rounds (default 2) that alternate:
//   fill      B/R bytes with the cleaner held off (min.compaction.lag.ms of a day): the
//             produce rate without cleaning;
//   clean     min.compaction.lag.ms set to 0: every broker's cleaner cleans its replica while
//             the same produce goes on until each broker's first clean has completed (its
//             counters move then): the produce rate while cleaning; then the lag goes back.
// JSON Lines on stdout (CONVENTIONS.md), per round (case round-N), per broker (broker label):
//   disk_mib_before / disk_mib_after   the replica's segment files (with indexes and checkpoints)
//                                      before the clean and after it;
//   cleaner_read_mb_per_s              tern_log_cleaner_bytes_read_total's growth over the clean's
//                                      duration (its "partition compacted" log line, info level):
//                                      the map pass and the rewrite both read the dirty bytes;
//   cleaner_dirty_mb_per_s             the cleaned segments' bytes before the clean (the same log
//                                      line) over that duration;
//   rss_mib_peak / rss_mib_before      the broker's RSS peak while it cleaned (sampled every
//                                      250 ms), and before;
//   produce_records_per_s              case round-N-no-cleaning and round-N-cleaning;
//   produce_cleaning_ratio             cleaning over no-cleaning (the issue: at least 0.8).
// Every line carries the machine's 1-minute load. Progress on stderr; every wait is bounded;
// the cluster is killed on any exit.
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { ProcessCluster } from "../cluster/process-cluster.js";
import { rssMiB, scrape, sumOf } from "./_storage-probes.js";

const TOPIC = "bench-compaction";
const BROKERS = [0, 1, 2] as const;
const RECORD_BYTES = 1024;
const MIB = 1024 * 1024;
const SEC = 1000;
const EXIT_USAGE = 2;
const HEALTH_TIMEOUT_MS = 180 * SEC;
const METRICS_TIMEOUT_MS = 3 * SEC;
/** The cleaner held off: nothing is old enough for a day. */
const LAG_HELD_MS = String(24 * 3600 * SEC);
/** Records sent and not yet acknowledged (≈ 8 MB, inside the Producer's buffer). */
const WINDOW_RECORDS = 8_000;
const SAMPLE_MS = 250;
/** A produce fails when nothing is acknowledged for this long. */
const STALL_MS = 120 * SEC;
/** How long the clean round waits for every broker's clean. */
const CLEAN_WAIT_MS = 600 * SEC;
const CLEANER_BACKOFF_MS = 500;

interface Options {
  bytes: number;
  rounds: number;
  keys: number;
  segmentBytes: number;
  keep: boolean;
  basePort: number | undefined;
  timeoutS: number;
}

function options(args: string[]): Options {
  const { values } = parseArgs({
    args,
    strict: true,
    options: {
      bytes: { type: "string" },
      rounds: { type: "string" },
      keys: { type: "string" },
      "segment-bytes": { type: "string" },
      keep: { type: "boolean" },
      "base-port": { type: "string" },
      "timeout-s": { type: "string" },
    },
  });
  const o: Options = {
    bytes: Number(values.bytes ?? 256 * MIB),
    rounds: Number(values.rounds ?? 2),
    keys: Number(values.keys ?? 10_000),
    segmentBytes: Number(values["segment-bytes"] ?? 32 * MIB),
    keep: values.keep ?? false,
    basePort: values["base-port"] === undefined ? undefined : Number(values["base-port"]),
    timeoutS: Number(values["timeout-s"] ?? 1800),
  };
  for (const [name, v, min] of [
    ["--bytes", o.bytes, MIB],
    ["--rounds", o.rounds, 1],
    ["--keys", o.keys, 1],
    ["--segment-bytes", o.segmentBytes, 1024],
    ["--timeout-s", o.timeoutS, 1],
  ] as const)
    if (!Number.isSafeInteger(v) || v < min)
      throw new RangeError(`${name} must be an integer >= ${min}`);
  return o;
}

const log = (msg: string): void => void process.stderr.write(`bench compaction: ${msg}\n`);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const round2 = (x: number): number => Math.round(x * 100) / 100;

/** Bytes of a replica's segment files (and their indexes and checkpoints). */
function replicaBytes(brokerDataDir: string): number {
  const dir = join(brokerDataDir, "partitions", `${TOPIC}-0`);
  let n = 0;
  try {
    for (const f of readdirSync(dir)) n += statSync(join(dir, f)).size;
  } catch {
    return 0;
  }
  return n;
}

/** A broker's "partition compacted" log lines (docs/storage.md, "Throttle, metrics, logs"). */
function compactedLines(
  file: string,
): Array<{ durationMs: number; bytesBefore: number; bytesAfter: number }> {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return [];
  }
  const out: Array<{ durationMs: number; bytesBefore: number; bytesAfter: number }> = [];
  for (const l of text.split("\n")) {
    if (!l.includes('"partition compacted"')) continue;
    try {
      const j = JSON.parse(l) as { durationMs: number; bytesBefore: number; bytesAfter: number };
      out.push({ durationMs: j.durationMs, bytesBefore: j.bytesBefore, bytesAfter: j.bytesAfter });
    } catch {
      /* a torn line */
    }
  }
  return out;
}

/** Each broker's tern_log_cleaner_bytes_read_total (absent when the scrape fails). */
async function cleanerRead(cluster: ProcessCluster): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  await Promise.all(
    BROKERS.map(async (b) => {
      const samples = await scrape(cluster.spec("broker", b).metricsAddress, METRICS_TIMEOUT_MS);
      const v = samples && sumOf(samples, (n) => n === "tern_log_cleaner_bytes_read_total");
      if (v !== undefined) out.set(b, v);
    }),
  );
  return out;
}

export async function run(args: string[]): Promise<number> {
  let o: Options;
  try {
    o = options(args);
  } catch (e) {
    log(
      `${(e as Error).message}\nusage: npm run bench -- compaction [--bytes B] [--rounds R] [--keys K] [--segment-bytes S] [--keep] [--base-port P] [--timeout-s S]`,
    );
    return EXIT_USAGE;
  }
  const dataDir = mkdtempSync(join(tmpdir(), "tern-bench-compaction-"));
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
    // info: the cleaner's "partition compacted" lines (few others at info).
    env: { TERN_LOG_LEVEL: "info", TERN_CLEANER_BACKOFF_MS: String(CLEANER_BACKOFF_MS) },
  });
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
    if (!o.keep) rmSync(dataDir, { recursive: true, force: true });
    process.exit(signal === "SIGINT" ? 130 : 143);
  };
  process.on("exit", killAll);
  for (const s of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.once(s, onSignal);
  log(
    `${(o.bytes / MIB).toFixed(0)} MiB of 1 KiB records over ${o.keys} keys in ${o.rounds} rounds; 3 controllers + 3 brokers in ${dataDir}`,
  );
  const timeout = setTimeout(() => {
    log(`--timeout-s ${o.timeoutS} passed: killing the cluster`);
    onSignal("SIGTERM");
  }, o.timeoutS * SEC);
  timeout.unref();
  try {
    cluster.startAll();
    await cluster.waitForHealth({ timeoutMs: HEALTH_TIMEOUT_MS });
    return await measure(cluster, o);
  } catch (e) {
    log(`failed: ${(e as Error).stack ?? String(e)}`);
    return 1;
  } finally {
    clearTimeout(timeout);
    await cluster.stop({ termTimeoutMs: 5_000 }).catch((e: unknown) => log(`stop: ${String(e)}`));
    killAll();
    process.off("exit", killAll);
    for (const s of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.off(s, onSignal);
    if (o.keep) log(`kept ${dataDir}`);
    else rmSync(dataDir, { recursive: true, force: true });
  }
}

async function measure(cluster: ProcessCluster, o: Options): Promise<number> {
  const { Producer } = await import("../../libs/client/index.js");
  const { ControllerClient } = await import("../../libs/metadata/controller-client.js");
  const { parsePeers } = await import("../../libs/common/config.js");
  const { silentLogger } = await import("../../libs/common/logger.js");
  const { until } = await import("../../libs/common/poll.js");
  const settings = {
    bytes: o.bytes,
    keys: o.keys,
    rounds: o.rounds,
    segment_bytes: o.segmentBytes,
    partitions: 1,
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
      `${JSON.stringify({ bench: "compaction", case: kase, metric, value: round2(value), unit, ...extra, ...settings, load_1m: round2(loadavg()[0]!) })}\n`,
    );
  };
  const controller = new ControllerClient({
    controllers: parsePeers(cluster.controllers, "controllers"),
    logger: silentLogger(),
  });
  const bootstrap = cluster.addresses("controller").join(",");
  const setLag = async (ms: string): Promise<void> => {
    await until("the lag change", 30 * SEC, async () => {
      const [r] = await controller.alterTopicConfigs([
        { name: TOPIC, set: { "min.compaction.lag.ms": ms } },
      ]);
      return r && !r.error ? true : undefined;
    });
  };
  // Not idempotent (no coordinators in this cluster), as the storage bench.
  const producer = new Producer({
    bootstrap,
    acks: -1,
    idempotent: false,
    lingerMs: 5,
    batchSize: 64 * (RECORD_BYTES + 64),
  });
  const value = Buffer.alloc(RECORD_BYTES - 16, "v");
  let sent = 0;
  /** Produces records (key = the running count modulo the key space) while more() answers true; records/s. */
  const produce = async (more: () => boolean): Promise<{ records: number; perS: number }> => {
    const started = performance.now();
    let inFlight = 0;
    let done = 0;
    let failed: Error | undefined;
    const waiters: Array<() => void> = [];
    let lastAckMs = performance.now();
    while (more() && failed === undefined) {
      if (inFlight >= WINDOW_RECORDS) {
        await Promise.race([new Promise<void>((r) => waiters.push(r)), sleep(SEC)]);
        if (performance.now() - lastAckMs > STALL_MS)
          throw new Error(`no record acknowledged for ${STALL_MS / SEC} s`);
        continue;
      }
      inFlight++;
      const key = `key-${sent++ % o.keys}`;
      producer.send({ topic: TOPIC, partition: 0, key, value }).then(
        () => {
          inFlight--;
          done++;
          lastAckMs = performance.now();
          waiters.shift()?.();
        },
        (e: unknown) => {
          inFlight--;
          failed = e as Error;
          waiters.shift()?.();
        },
      );
    }
    await producer.flush();
    if (failed) throw failed;
    const s = (performance.now() - started) / SEC;
    return { records: done, perS: done / s };
  };
  try {
    await until("the topic", 60 * SEC, async () => {
      const [r] = await controller.createTopics([
        {
          name: TOPIC,
          partitions: 1,
          replicationFactor: 3,
          config: {
            "cleanup.policy": "compact",
            "segment.bytes": String(o.segmentBytes),
            "min.compaction.lag.ms": LAG_HELD_MS,
          },
        },
      ]);
      return r && (!r.error || r.error.errorName === "TOPIC_ALREADY_EXISTS") ? true : undefined;
    });
    const { Admin } = await import("../../libs/client/index.js");
    const admin = new Admin({ bootstrap });
    await admin.waitForLeaders([TOPIC]);
    await admin.close();
    const perRound = Math.ceil(o.bytes / RECORD_BYTES / o.rounds);
    const brokerDir = (b: number): string => cluster.spec("broker", b).dataDir;
    const logFile = (b: number): string => cluster.spec("broker", b).logFile;
    for (let round = 1; round <= o.rounds; round++) {
      const kase = `round-${round}`;
      // Fill: the cleaner held off.
      await setLag(LAG_HELD_MS);
      const target = sent + perRound;
      const fill = await produce(() => sent < target);
      log(`${kase}: ${fill.records} records without cleaning, ${fill.perS.toFixed(0)}/s`);
      line(`${kase}-no-cleaning`, "produce_records_per_s", fill.perS, "1/s");
      const before = new Map(BROKERS.map((b) => [b, replicaBytes(brokerDir(b))]));
      const rssBefore = new Map(BROKERS.map((b) => [b, rssMiB(cluster.pid("broker", b)!) ?? 0]));
      // Clean: the lag goes to 0; the same produce runs until every broker's first clean is
      // done (its counters move when a clean completes; its log line gives the clean's time).
      const read0 = await cleanerRead(cluster);
      const logged0 = new Map(BROKERS.map((b) => [b, compactedLines(logFile(b)).length]));
      await setLag("0");
      const lagSetMs = performance.now();
      const doneAt = new Map<number, number>();
      const readAt = new Map(read0);
      const rssPeak = new Map(rssBefore);
      let cleaning = true;
      const sampler = (async () => {
        while (cleaning) {
          await sleep(SAMPLE_MS);
          const now = performance.now();
          for (const b of BROKERS) {
            const rss = rssMiB(cluster.pid("broker", b)!) ?? 0;
            if (!doneAt.has(b) && rss > rssPeak.get(b)!) rssPeak.set(b, rss);
          }
          const read = await cleanerRead(cluster);
          for (const b of BROKERS) {
            const v = read.get(b);
            if (doneAt.has(b) || v === undefined || v <= (read0.get(b) ?? 0)) continue;
            doneAt.set(b, now);
            readAt.set(b, v);
          }
          if (doneAt.size === BROKERS.length || now - lagSetMs > CLEAN_WAIT_MS) cleaning = false;
        }
      })();
      const during = await produce(() => cleaning);
      await sampler;
      if (doneAt.size < BROKERS.length)
        throw new Error(
          `${kase}: ${BROKERS.length - doneAt.size} cleaner(s) did not clean in ${CLEAN_WAIT_MS / SEC} s`,
        );
      log(`${kase}: ${during.records} records while cleaning, ${during.perS.toFixed(0)}/s`);
      line(`${kase}-cleaning`, "produce_records_per_s", during.perS, "1/s", {
        records: during.records,
      });
      line(kase, "produce_cleaning_ratio", during.perS / fill.perS, "ratio");
      await setLag(LAG_HELD_MS);
      for (const b of BROKERS) {
        const after = replicaBytes(brokerDir(b));
        const clean = compactedLines(logFile(b))[logged0.get(b)!];
        const readBytes = readAt.get(b)! - (read0.get(b) ?? 0);
        // The clean's own duration from its log line; else from the lag change to its counters.
        const seconds = (clean?.durationMs ?? doneAt.get(b)! - lagSetMs) / SEC;
        const broker = { broker: b };
        const timed = { broker: b, seconds: round2(seconds) };
        line(kase, "disk_mib_before", before.get(b)! / MIB, "MiB", broker);
        line(kase, "disk_mib_after", after / MIB, "MiB", broker);
        line(kase, "cleaner_read_mb_per_s", readBytes / 1e6 / seconds, "MB/s", timed);
        if (clean)
          line(kase, "cleaner_dirty_mb_per_s", clean.bytesBefore / 1e6 / seconds, "MB/s", {
            ...timed,
            clean_bytes_before: clean.bytesBefore,
            clean_bytes_after: clean.bytesAfter,
          });
        line(kase, "rss_mib_before", rssBefore.get(b)!, "MiB", broker);
        line(kase, "rss_mib_peak", rssPeak.get(b)!, "MiB", broker);
        log(
          `${kase} broker ${b}: ${(before.get(b)! / MIB).toFixed(1)} -> ${(after / MIB).toFixed(1)} MiB on disk, clean of ${((clean?.bytesBefore ?? 0) / MIB).toFixed(1)} MiB in ${seconds.toFixed(1)} s (read ${(readBytes / 1e6).toFixed(0)} MB), RSS ${rssBefore.get(b)!.toFixed(0)} -> peak ${rssPeak.get(b)!.toFixed(0)} MiB`,
        );
      }
    }
    return 0;
  } finally {
    await producer.close().catch(() => undefined);
    controller.close();
  }
}
