// `npm run bench -- partitions [--counts 1000,5000,10000] [--settle-s 10] [--idle-s 60] [--balance-wait-s 120] [--base-port P] [--keep]`
// The partition count (issue 41, docs/raft-performance.md "Many partitions"). For each count N,
// a fresh local cluster (3 controllers, 3 brokers, 3 coordinators, separate processes, loopback
// only) and one topic of N partitions, RF 3, created with the admin client:
//   create_to_leaders_s      CreateTopics until metadata shows a leader for every partition;
//   create_to_writable_s     CreateTopics until a record (acks=all) sent to every partition at
//                            once was acknowledged by each;
//   leaders_on_busiest_pct   the share of leaders on the broker leading most (even: 33.3);
//   leader_imbalance_pct     how far the busiest broker is above an even share;
//   idle_cpu_max_pct / _mean_pct   CPU per broker (utime+stime from /proc) over --idle-s seconds,
//                            --settle-s after the writes;
//   rss_max_mib, rss_per_replica_kib   RSS per broker, and its growth over the broker's RSS
//                            before the topic, per partition replica it hosts;
//   kill_to_leaders_s / kill_to_writable_s   after SIGKILL of the broker leading most: until
//                            every partition has a live leader, and until a record sent to every
//                            partition at the kill was acknowledged by each (the producer retries);
//   restart_to_balanced_s    after that broker's restart: until no broker leads more than 10 %
//                            above an even share (absent when not within --balance-wait-s; the
//                            line leader_imbalance_after_restart_pct says where it stayed).
// JSON Lines on stdout (CONVENTIONS.md); every line carries the machine's 1-minute load.
// Progress on stderr; every wait is bounded; the cluster is killed on any exit.
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { ProcessCluster } from "../cluster/process-cluster.js";
import type { ClusterMetadata } from "../../libs/metadata/types.js";
import { cpuMs, rssMiB } from "./_storage-probes.js";

const TOPIC = "bench-partitions";
const BROKERS = [0, 1, 2] as const;
const SEC = 1000;
const EXIT_USAGE = 2;
const HEALTH_TIMEOUT_MS = 180 * SEC;
/** Bounds on the waits for leaders and for writes (10,000 partitions take a while today). */
const LEADERS_WAIT_MS = 600 * SEC;
const WRITES_WAIT_MS = 600 * SEC;
const POLL_MS = 200;
/** Leaders within this share above even count as balanced (the issue's 10 %). */
const BALANCED_WITHIN = 0.1;

interface Options {
  counts: number[];
  settleS: number;
  idleS: number;
  balanceWaitS: number;
  basePort: number | undefined;
  keep: boolean;
}

function options(args: string[]): Options {
  const { values } = parseArgs({
    args,
    strict: true,
    options: {
      counts: { type: "string" },
      "settle-s": { type: "string" },
      "idle-s": { type: "string" },
      "balance-wait-s": { type: "string" },
      "base-port": { type: "string" },
      keep: { type: "boolean" },
    },
  });
  const o: Options = {
    counts: (values.counts ?? "1000,5000,10000").split(",").map(Number),
    settleS: Number(values["settle-s"] ?? 10),
    idleS: Number(values["idle-s"] ?? 60),
    balanceWaitS: Number(values["balance-wait-s"] ?? 120),
    basePort: values["base-port"] === undefined ? undefined : Number(values["base-port"]),
    keep: values.keep ?? false,
  };
  for (const c of o.counts)
    if (!Number.isSafeInteger(c) || c < 1 || c > 100_000)
      throw new RangeError("--counts must be integers in [1, 100000]");
  for (const [name, v, min] of [
    ["--settle-s", o.settleS, 0],
    ["--idle-s", o.idleS, 1],
    ["--balance-wait-s", o.balanceWaitS, 0],
  ] as const)
    if (!Number.isFinite(v) || v < min) throw new RangeError(`${name} must be a number >= ${min}`);
  return o;
}

const log = (msg: string): void => void process.stderr.write(`bench partitions: ${msg}\n`);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const round2 = (x: number): number => Math.round(x * 100) / 100;

function emitter(count: number) {
  return (metric: string, value: number, unit: string, extra: Record<string, unknown> = {}) =>
    process.stdout.write(
      `${JSON.stringify({
        bench: "partitions",
        case: `partitions-${count}`,
        metric,
        value: round2(value),
        unit,
        partitions: count,
        replication_factor: 3,
        load1: round2(loadavg()[0]!),
        ...extra,
      })}\n`,
    );
}

/** Leaders per broker in a view (partitions without a leader are not counted). */
function leaderCounts(m: ClusterMetadata): Map<number, number> {
  const counts = new Map<number, number>(BROKERS.map((b) => [b, 0]));
  const t = m.topics.find((x) => x.name === TOPIC);
  for (const p of t?.partitions ?? [])
    if (p.leader >= 0) counts.set(p.leader, (counts.get(p.leader) ?? 0) + 1);
  return counts;
}

/** Percent the busiest broker leads above an even share of `count`. */
function imbalancePct(counts: Map<number, number>, count: number): number {
  return (Math.max(...counts.values()) / (count / BROKERS.length) - 1) * 100;
}

export async function run(args: string[]): Promise<number> {
  let o: Options;
  try {
    o = options(args);
  } catch (e) {
    log(
      `${(e as Error).message}\nusage: npm run bench -- partitions [--counts 1000,5000,10000] [--settle-s S] [--idle-s S] [--balance-wait-s S] [--base-port P] [--keep]`,
    );
    return EXIT_USAGE;
  }
  for (const count of o.counts) await oneCount(o, count);
  return 0;
}

async function oneCount(o: Options, count: number): Promise<void> {
  const { createCluster } = await import("../cluster/process-cluster.js");
  const { freeBasePort } = await import("../cluster/free-base-port.js");
  const { Admin } = await import("../../libs/client/admin/admin.js");
  const dataDir = mkdtempSync(join(tmpdir(), `tern-bench-partitions-${count}-`));
  const cluster = createCluster({
    dataDir,
    basePort: o.basePort ?? (await freeBasePort()),
    env: { TERN_LOG_LEVEL: "warn" },
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
  process.on("exit", killAll);
  const line = emitter(count);
  let admin: InstanceType<typeof Admin> | undefined;
  try {
    log(`${count} partitions RF 3: starting a cluster in ${dataDir}`);
    cluster.startAll();
    await cluster.waitForHealth({ timeoutMs: HEALTH_TIMEOUT_MS });
    const bootstrap = cluster.addresses("controller").join(",");
    admin = new Admin({ bootstrap, requestTimeoutMs: 120 * SEC });
    const rssBefore = new Map(BROKERS.map((b) => [b, brokerRss(cluster, b)]));

    const t0 = performance.now();
    const [outcome] = await admin.createTopics([
      { name: TOPIC, partitions: count, replicationFactor: 3 },
    ]);
    if (outcome?.error) throw new Error(`CreateTopics: ${JSON.stringify(outcome.error)}`);
    let loggedAt = 0;
    const view = await waitFor(admin, LEADERS_WAIT_MS, (m) => {
      const t = m.topics.find((x) => x.name === TOPIC);
      const led = t?.partitions.filter((p) => p.leader >= 0).length ?? 0;
      if (performance.now() - loggedAt > 2 * SEC) {
        loggedAt = performance.now();
        log(`${((loggedAt - t0) / SEC).toFixed(1)} s: ${led} of ${count} led`);
      }
      return t !== undefined && t.partitions.length === count && led === count;
    });
    line("create_to_leaders_s", (performance.now() - t0) / SEC, "s");
    log(`leaders after ${((performance.now() - t0) / SEC).toFixed(1)} s`);
    await writeEveryPartition(bootstrap, count);
    line("create_to_writable_s", (performance.now() - t0) / SEC, "s");
    log(`writable after ${((performance.now() - t0) / SEC).toFixed(1)} s`);
    const counts = leaderCounts(await admin.metadataView().catch(() => view));
    line("leaders_on_busiest_pct", (Math.max(...counts.values()) / count) * 100, "%", {
      leaders: Object.fromEntries(counts),
    });
    line("leader_imbalance_pct", imbalancePct(counts, count), "%");

    await sleep(o.settleS * SEC);
    const pids = new Map(BROKERS.map((b) => [b, cluster.pid("broker", b)!]));
    const cpuBefore = new Map([...pids].map(([b, pid]) => [b, cpuMs(pid) ?? 0]));
    const i0 = performance.now();
    await sleep(o.idleS * SEC);
    const wallMs = performance.now() - i0;
    const idle = [...pids].map(
      ([b, pid]) => (((cpuMs(pid) ?? 0) - cpuBefore.get(b)!) / wallMs) * 100,
    );
    line("idle_cpu_max_pct", Math.max(...idle), "%", { window_s: o.idleS });
    line("idle_cpu_mean_pct", idle.reduce((a, b) => a + b, 0) / idle.length, "%", {
      window_s: o.idleS,
    });
    const rss = BROKERS.map((b) => brokerRss(cluster, b));
    line("rss_max_mib", Math.max(...rss), "MiB");
    // Every broker hosts a replica of every partition (RF 3 on 3 brokers).
    const perReplicaKiB = BROKERS.map((b, i) => ((rss[i]! - rssBefore.get(b)!) * 1024) / count);
    line("rss_per_replica_kib", Math.max(...perReplicaKiB), "KiB");

    const before = leaderCounts(await admin.metadataView());
    const victim = [...before].sort((a, b) => b[1] - a[1])[0]![0];
    log(`SIGKILL broker ${victim} (leads ${before.get(victim)})`);
    const k0 = performance.now();
    cluster.kill("broker", victim);
    const writes = writeEveryPartition(bootstrap, count).then(() => performance.now());
    await waitFor(admin, LEADERS_WAIT_MS, (m) => {
      const t = m.topics.find((x) => x.name === TOPIC);
      return t !== undefined && t.partitions.every((p) => p.leader >= 0 && p.leader !== victim);
    });
    line("kill_to_leaders_s", (performance.now() - k0) / SEC, "s", {
      killed_leaders: before.get(victim),
    });
    line("kill_to_writable_s", ((await writes) - k0) / SEC, "s", {
      killed_leaders: before.get(victim),
    });

    await cluster.waitForExit("broker", victim, 30 * SEC);
    const r0 = performance.now();
    cluster.start("broker", victim);
    await cluster.waitForHealth({ timeoutMs: HEALTH_TIMEOUT_MS });
    log(`broker ${victim} back after ${((performance.now() - r0) / SEC).toFixed(1)} s`);
    let last = before;
    const deadline = performance.now() + o.balanceWaitS * SEC;
    let balancedAt: number | undefined;
    while (performance.now() < deadline) {
      const m = await admin.metadataView().catch(() => undefined);
      if (m !== undefined) {
        last = leaderCounts(m);
        if (imbalancePct(last, count) <= BALANCED_WITHIN * 100) {
          balancedAt = performance.now();
          break;
        }
      }
      await sleep(POLL_MS * 5);
    }
    if (balancedAt !== undefined) line("restart_to_balanced_s", (balancedAt - r0) / SEC, "s");
    line("leader_imbalance_after_restart_pct", imbalancePct(last, count), "%", {
      leaders: Object.fromEntries(last),
      balance_wait_s: o.balanceWaitS,
    });
  } finally {
    await admin?.close().catch(() => undefined);
    await cluster.stop({ termTimeoutMs: 30 * SEC }).catch(() => undefined);
    killAll();
    process.off("exit", killAll);
    if (!o.keep) rmSync(dataDir, { recursive: true, force: true });
  }
}

function brokerRss(cluster: ProcessCluster, b: number): number {
  const pid = cluster.pid("broker", b);
  return pid === undefined ? 0 : (rssMiB(pid) ?? 0);
}

/** Polls metadata until `done` holds (bounded); returns that view. */
async function waitFor(
  admin: { metadataView(): Promise<ClusterMetadata> },
  timeoutMs: number,
  done: (m: ClusterMetadata) => boolean,
): Promise<ClusterMetadata> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    const m = await admin.metadataView().catch(() => undefined);
    if (m !== undefined && done(m)) return m;
    await sleep(POLL_MS);
  }
  throw new Error(`not within ${timeoutMs / SEC} s`);
}

/** One record (acks=all) to every partition at once; resolves when each is acknowledged. */
async function writeEveryPartition(bootstrap: string, count: number): Promise<void> {
  const { Producer } = await import("../../libs/client/producer/producer.js");
  const producer = new Producer({
    bootstrap,
    acks: -1,
    lingerMs: 5,
    deliveryTimeoutMs: WRITES_WAIT_MS,
    requestTimeoutMs: 30 * SEC,
  });
  try {
    const value = Buffer.from("x");
    await Promise.all(
      Array.from({ length: count }, (_, partition) =>
        producer.send({ topic: TOPIC, partition, value }),
      ),
    );
  } finally {
    await producer.close().catch(() => undefined);
  }
}
