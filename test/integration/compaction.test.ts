// Log compaction against real processes (docs/storage.md, "Compaction"): a topic created with
// cleanup.policy=compact (RF 3, 1 KiB segments) gets many updates per key and a few deletes
// from the TypeScript Producer; every broker's cleaner cleans its own replica (its metrics say
// when nothing sealed is left dirty). Read back from offset 0 with the TypeScript Consumer
// (gRPC), kcat (librdkafka) and kafkajs (Kafka listener): each record read is the one written at
// its offset, every key's latest record is there, offsets have gaps where records went, and a
// delete is still a null value. Then transactions on a compacted topic: committed and aborted
// transactions of the TypeScript Producer, cleaned: no reader, read_committed or not, ever sees an
// aborted value, and each key's latest committed value is there. Last, the clean point survives
// a restart: `tern topics describe` shows a compacted partition's dirty ratio and last cleaned
// offset, and brokers restarted from their data dirs report the same figures and clean nothing
// again; and cleaned segments are merged into few once segment.bytes lets them. Build first; the kcat and kafkajs reads are skipped without kcat.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { Admin, Consumer, Producer } from "../../libs/client/index.js";
import { until } from "../../libs/common/poll.js";
import { startCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";
import { runKcat } from "./helpers/kcat.js";
import { scrape } from "./helpers/scrape-metrics.js";
import { okCli } from "./helpers/tern-cli.js";

const TOPIC = "compacted";
const KEYS = 16;
const RECORDS = 600;
/** The last record of these keys is a delete (a null value). */
const DELETED = new Set(["k8", "k9"]);
/** Keys k0-k15 in the first half, then k8-k15 only: k0-k7 keep a latest record mid-log. */
const keyOf = (j: number): string => `k${j < RECORDS / 2 ? j % KEYS : KEYS / 2 + (j % (KEYS / 2))}`;
const SHAPE = { controllers: 1, brokers: 3, coordinators: 1 };
const hasKcat = spawnSync("kcat", ["-V"], { encoding: "utf8" }).status === 0;
if (!hasKcat)
  process.stderr.write(
    "compaction.test.ts: the kcat/kafkajs reads are SKIPPED: kcat not found; install with: apt-get install -y kcat\n",
  );

let cluster: ProcessCluster;
let bootstrap: string;
let admin: Admin;
/** What was written at each offset: [key, value] (null: a delete). */
const written = new Map<bigint, [string, string | null]>();
let highWatermark = 0n;

beforeAll(async () => {
  cluster = await startCluster({
    dataDir: mkdtempSync(join(tmpdir(), "tern-compaction-")),
    ...SHAPE,
    basePort: await freeBasePort(SHAPE),
    env: {
      TERN_LOG_LEVEL: "warn",
      // Frequent snapshots: a restart applies again, raw, only the few entries after the last.
      TERN_BROKER_SNAPSHOT_ENTRIES: "5",
      TERN_CLEANER_BACKOFF_MS: "200",
      TERN_CLEANER_DEDUPE_BUFFER_BYTES: String(8 * 1024 * 1024),
      TERN_TXN_STATE_PARTITIONS: "2",
      TERN_TXN_STATE_REPLICATION_FACTOR: "1",
      TERN_OFFSETS_PARTITIONS: "2",
    },
    healthTimeoutMs: 180_000,
  });
  bootstrap = cluster.addresses("controller").join(",");
  admin = new Admin({ bootstrap });
}, 240_000);

afterAll(async () => {
  await admin?.close();
  await cluster?.stop({ termTimeoutMs: 5_000 });
});

async function metricOf(id: number, name: string): Promise<number> {
  return (
    (await scrape(cluster.spec("broker", id).metricsPort)).find((s) => s.name === name)?.value ?? -1
  );
}

/** Checks records read from offset 0 against what was written; returns how many were read. */
function expectCompacted(read: ReadonlyMap<bigint, [string, string | null]>, who: string): void {
  for (const [offset, kv] of read) expect(kv, `${who} at ${offset}`).toEqual(written.get(offset));
  const latest = new Map<string, bigint>();
  for (const [offset, [key]] of written) latest.set(key, offset);
  for (const [key, offset] of latest)
    expect(read.get(offset), `${who}: ${key}'s latest record`).toEqual(written.get(offset));
  for (const key of DELETED) expect(read.get(latest.get(key)!)?.[1], who).toBeNull();
  // Records went, offsets kept: fewer records than offsets, and gaps between them.
  expect(read.size, who).toBeLessThan(RECORDS / 2);
  const offsets = [...read.keys()].sort((a, b) => (a < b ? -1 : 1));
  expect(
    offsets.some((o, i) => i > 0 && o !== offsets[i - 1]! + 1n),
    who,
  ).toBe(true);
}

/**
 * A compacted topic through the CLI: 1 partition, RF 3, 1 KiB segments, cleaned as soon as
 * anything is dirty; resolves once it has a leader.
 */
async function createCompacted(topic: string): Promise<void> {
  await okCli(bootstrap, [
    "topics",
    "create",
    topic,
    "-p",
    "1",
    "-r",
    "3",
    "-c",
    "cleanup.policy=compact",
    "segment.bytes=1024",
    "min.cleanable.dirty.ratio=0.01",
  ]);
  await admin.waitForLeaders([topic]);
}

it("cleans each replica of a compacted topic; the TypeScript Consumer reads the latest value per key with gaps", async () => {
  await createCompacted(TOPIC);
  const producer = new Producer({ bootstrap, lingerMs: 2 });
  try {
    for (let i = 0; i < RECORDS; i += 20) {
      const sends = [];
      for (let j = i; j < i + 20; j++) {
        const key = keyOf(j);
        const value = j >= RECORDS - KEYS && DELETED.has(key) ? null : `v${j}`;
        sends.push(
          producer
            .send({ topic: TOPIC, partition: 0, key, value })
            .then((m) => written.set(m.offset, [key, value])),
        );
      }
      await Promise.all(sends);
    }
  } finally {
    await producer.close();
  }
  expect(written.size).toBe(RECORDS);
  highWatermark = await admin.listOffset({ topic: TOPIC, partition: 0 }, "latest");
  expect(highWatermark).toBe(BigInt(RECORDS));

  // Every broker cleans its own replica: each has cleaned, and nothing sealed is dirty.
  await until("every replica cleaned", 90_000, async () => {
    for (const id of [0, 1, 2]) {
      if ((await metricOf(id, "tern_log_cleaner_cleans_total")) < 1) return undefined;
      if ((await metricOf(id, "tern_log_cleaner_max_dirty_age_ms")) !== 0) return undefined;
    }
    return true;
  });
  for (const id of [0, 1, 2]) {
    expect(await metricOf(id, "tern_log_cleaner_bytes_written_total")).toBeGreaterThan(0);
    expect(await metricOf(id, "tern_log_cleaner_map_utilisation")).toBeGreaterThan(0);
  }

  const consumer = new Consumer({ bootstrap });
  const read = new Map<bigint, [string, string | null]>();
  try {
    consumer.assign([{ topic: TOPIC, partition: 0 }]);
    await consumer.seekToBeginning();
    await until("read to the end", 60_000, async () => {
      for (const r of await consumer.poll({ timeoutMs: 300 }))
        read.set(r.offset, [r.key!.toString(), r.value === null ? null : r.value.toString()]);
      return (await consumer.position({ topic: TOPIC, partition: 0 })) >= highWatermark
        ? true
        : undefined;
    });
  } finally {
    await consumer.close();
  }
  expectCompacted(read, "Consumer");
}, 300_000);

it.skipIf(!hasKcat)(
  "kcat and kafkajs read the compacted partition through the Kafka listener",
  async () => {
    const kafkaBrokers = [0, 1, 2].map((i) => `127.0.0.1:${cluster.spec("broker", i).kafkaPort}`);
    const kc = await runKcat(kafkaBrokers.join(","), [
      "-C",
      "-t",
      TOPIC,
      "-p",
      "0",
      "-o",
      "beginning",
      "-e",
      "-Z",
      "-f",
      "%o\\t%k\\t%S\\t%s\\n",
    ]);
    expect(kc.code, kc.stderr).toBe(0);
    const byKcat = new Map<bigint, [string, string | null]>();
    for (const line of kc.stdout.split("\n").filter((l) => l.length > 0)) {
      const [offset, key, size, value] = line.split("\t");
      // -Z prints a null value as NULL; its %S (size) is -1.
      byKcat.set(BigInt(offset!), [key!, size === "-1" ? null : value!]);
    }
    expectCompacted(byKcat, "kcat");

    const { Kafka, logLevel } = await import("kafkajs");
    const kafka = new Kafka({
      clientId: "tern-compaction",
      brokers: kafkaBrokers,
      logLevel: logLevel.NOTHING,
    });
    const consumer = kafka.consumer({ groupId: "compaction-reader" });
    const byKafkajs = new Map<bigint, [string, string | null]>();
    await consumer.connect();
    try {
      await consumer.subscribe({ topic: TOPIC, fromBeginning: true });
      await consumer.run({
        eachMessage: async ({ message }) => {
          byKafkajs.set(BigInt(message.offset), [
            message.key!.toString(),
            message.value === null ? null : message.value.toString(),
          ]);
        },
      });
      const last = [...byKcat.keys()].reduce((a, b) => (a > b ? a : b));
      await until("kafkajs read to the last record", 60_000, () =>
        byKafkajs.has(last) ? true : undefined,
      );
    } finally {
      await consumer.disconnect();
    }
    expectCompacted(byKafkajs, "kafkajs");
    expect(byKafkajs).toEqual(byKcat);
  },
  180_000,
);

it("removes aborted transactions' records and keeps each key's latest committed value", async () => {
  const topic = "compacted-txn";
  await createCompacted(topic);
  const cleansBefore = await Promise.all(
    [0, 1, 2].map(async (id) => metricOf(id, "tern_log_cleaner_cleans_total")),
  );
  const committed = new Map<string, string>();
  const producer = new Producer({ bootstrap, transactionalId: "compaction-txn", lingerMs: 2 });
  try {
    await producer.initTransactions();
    for (let t = 0; t < 40; t++) {
      const commit = t % 3 !== 1;
      producer.beginTransaction();
      const values = Array.from({ length: 4 }, (_, i) => [
        `t${(t + i) % 6}`,
        `${commit ? "c" : "a"}${t}-${i}`,
      ]);
      await Promise.all(
        values.map(([key, value]) => producer.send({ topic, partition: 0, key, value })),
      );
      if (commit) {
        await producer.commitTransaction();
        for (const [key, value] of values) committed.set(key!, value!);
      } else {
        await producer.abortTransaction();
      }
    }
  } finally {
    await producer.close();
  }
  // Plain records after them roll the transactions' segments out of the active one.
  const plain = new Producer({ bootstrap, lingerMs: 2 });
  try {
    for (let i = 0; i < 40; i++)
      await plain.send({ topic, partition: 0, key: `p${i % 3}`, value: `p${i}` });
  } finally {
    await plain.close();
  }
  await until("every replica cleaned the transactions", 90_000, async () => {
    for (const id of [0, 1, 2]) {
      if ((await metricOf(id, "tern_log_cleaner_cleans_total")) <= cleansBefore[id]!)
        return undefined;
      if ((await metricOf(id, "tern_log_cleaner_max_dirty_age_ms")) !== 0) return undefined;
    }
    return true;
  });
  for (const isolationLevel of ["read_committed", "read_uncommitted"] as const) {
    const consumer = new Consumer({ bootstrap, isolationLevel });
    const values = new Map<string, string>();
    let seen = 0;
    try {
      consumer.assign([{ topic, partition: 0 }]);
      await consumer.seekToBeginning();
      const end = await admin.listOffset({ topic, partition: 0 }, "latest");
      await until(`read ${isolationLevel} to the end`, 60_000, async () => {
        for (const r of await consumer.poll({ timeoutMs: 300 })) {
          const value = r.value!.toString();
          // No reader ever sees an aborted value: the clean removed them all.
          expect(value.startsWith("a"), `${isolationLevel}: ${value}`).toBe(false);
          values.set(r.key!.toString(), value);
          seen++;
        }
        return (await consumer.position({ topic, partition: 0 })) >= end ? true : undefined;
      });
    } finally {
      await consumer.close();
    }
    for (const [key, value] of committed)
      expect(values.get(key), `${isolationLevel} ${key}`).toBe(value);
    // Superseded committed records went too.
    expect(seen, isolationLevel).toBeLessThan(committed.size + 40);
  }
}, 240_000);

interface DescribedCleaning {
  dirtyRatio: number;
  lastCleanedOffset: string;
}

/** Partition 0's cleaning figures as `tern --json topics describe` prints them. */
async function describedCleaning(topic: string): Promise<DescribedCleaning | undefined> {
  const [t] = JSON.parse((await okCli(bootstrap, ["--json", "topics", "describe", topic])).stdout);
  return t.partitions[0].cleaning;
}

it("tern topics describe shows the clean point, and brokers restarted from disk keep it and clean nothing again", async () => {
  const topic = "compacted-restart";
  await createCompacted(topic);
  const producer = new Producer({ bootstrap, lingerMs: 0 });
  try {
    // One record per entry: many small segments.
    for (let i = 0; i < 300; i++)
      await producer.send({ topic, partition: 0, key: `r${i % 8}`, value: `v${i}` });
  } finally {
    await producer.close();
  }
  // Every replica cleaned what it sealed; the leader's figures say so.
  const before = await until("every replica cleaned", 90_000, async () => {
    for (const id of [0, 1, 2])
      if ((await metricOf(id, "tern_log_cleaner_max_dirty_age_ms")) !== 0) return undefined;
    const c = await describedCleaning(topic);
    return c !== undefined && c.dirtyRatio === 0 && BigInt(c.lastCleanedOffset) > 100n
      ? c
      : undefined;
  });
  expect(BigInt(before.lastCleanedOffset)).toBeLessThan(300n);
  const table = (await okCli(bootstrap, ["topics", "describe", topic])).stdout;
  expect(table).toMatch(/REPLICAS\s+DIRTY_RATIO\s+LAST_CLEANED/);
  expect(table).toContain(` ${before.lastCleanedOffset} `);
  // A topic that is not compacted gets no such columns.
  expect((await okCli(bootstrap, ["topics", "describe", "__consumer_offsets"])).stdout).not.toMatch(
    /DIRTY_RATIO/,
  );

  // From here a clean needs 90 % of a log dirty: a replica that forgot its clean point (all dirty)
  // would clean again at once, one that kept it (a few entries applied again at most) would not.
  const existing: string[] = JSON.parse(
    (await okCli(bootstrap, ["--json", "topics", "list"])).stdout,
  );
  for (const t of [TOPIC, "compacted-txn", topic].filter((n) => existing.includes(n)))
    await okCli(bootstrap, ["topics", "alter-config", t, "--set", "min.cleanable.dirty.ratio=0.9"]);
  for (const id of [0, 1, 2]) await cluster.restart("broker", id, { termTimeoutMs: 5_000 });
  await cluster.waitForHealth({
    timeoutMs: 120_000,
    only: [0, 1, 2].map((id) => ({ role: "broker" as const, id })),
  });
  await admin.waitForLeaders([topic]);
  const after = await until("the new leader answers", 60_000, async () => {
    const c = await describedCleaning(topic);
    return c !== undefined && "lastCleanedOffset" in c ? c : undefined;
  });
  expect(BigInt(after.lastCleanedOffset)).toBeGreaterThan(0n);
  expect(BigInt(after.lastCleanedOffset)).toBeLessThanOrEqual(BigInt(before.lastCleanedOffset));
  expect(after.dirtyRatio).toBeLessThan(0.9);
  // Many cleaner passes (every 200 ms) later, no broker has cleaned or read anything.
  await new Promise((resolve) => setTimeout(resolve, 4_000));
  for (const id of [0, 1, 2]) {
    expect(await metricOf(id, "tern_log_cleaner_cleans_total"), `broker ${id}`).toBeLessThanOrEqual(
      0,
    );
    expect(
      await metricOf(id, "tern_log_cleaner_bytes_read_total"),
      `broker ${id}`,
    ).toBeLessThanOrEqual(0);
  }
  expect((await describedCleaning(topic))!.lastCleanedOffset).toBe(after.lastCleanedOffset);
}, 360_000);

it("merges small cleaned segments into few on every replica; the Consumer still reads every key's latest value", async () => {
  const topic = "compacted-merge";
  await createCompacted(topic);
  const writtenHere = new Map<bigint, [string, string]>();
  const producer = new Producer({ bootstrap, lingerMs: 0 });
  const send = async (i: number): Promise<void> => {
    const key = `m${i % 4}`;
    const value = `${i}:${"x".repeat(300)}`;
    const m = await producer.send({ topic, partition: 0, key, value });
    writtenHere.set(m.offset, [key, value]);
  };
  const segmentsOn = (id: number): number =>
    readdirSync(join(cluster.spec("broker", id).dataDir, "partitions", `${topic}-0`)).filter((f) =>
      f.endsWith(".log"),
    ).length;
  try {
    for (let i = 0; i < 200; i++) await send(i);
    // The leader cleaned what it sealed (the cleaner-lag metric also counts the other topics,
    // which the restart test left at a ratio of 0.9).
    await until("the leader cleaned", 90_000, async () => {
      const c = await describedCleaning(topic);
      return c !== undefined && c.dirtyRatio === 0 && BigInt(c.lastCleanedOffset) > 150n
        ? true
        : undefined;
    });
    const before = [0, 1, 2].map(segmentsOn);
    for (const n of before) expect(n).toBeGreaterThan(20);
    // Larger segments from now on, and a roll by time so the next clean has something dirty.
    await okCli(bootstrap, [
      "topics",
      "alter-config",
      topic,
      "--set",
      "segment.bytes=1048576",
      "segment.ms=1000",
    ]);
    await send(200);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    await send(201);
    await until("the cleaned segments merged on every replica", 60_000, () =>
      [0, 1, 2].every((id) => segmentsOn(id) <= 4) ? true : undefined,
    );
  } finally {
    await producer.close();
  }
  const end = await admin.listOffset({ topic, partition: 0 }, "latest");
  const consumer = new Consumer({ bootstrap });
  const read = new Map<bigint, [string, string]>();
  try {
    consumer.assign([{ topic, partition: 0 }]);
    await consumer.seekToBeginning();
    await until("read to the end", 60_000, async () => {
      for (const r of await consumer.poll({ timeoutMs: 300 }))
        read.set(r.offset, [r.key!.toString(), r.value!.toString()]);
      return (await consumer.position({ topic, partition: 0 })) >= end ? true : undefined;
    });
  } finally {
    await consumer.close();
  }
  for (const [offset, kv] of read) expect(kv, `at ${offset}`).toEqual(writtenHere.get(offset));
  const latest = new Map<string, bigint>();
  for (const [offset, [key]] of writtenHere) latest.set(key, offset);
  for (const [key, offset] of latest)
    expect(read.get(offset), key).toEqual(writtenHere.get(offset));
  expect(read.size).toBeLessThan(40);
}, 240_000);
