// Real processes (3 controllers, 3 brokers, 3 coordinators; build first with
// `npx tsc -p tsconfig.json`): the TypeScript client end to end. Producer → consumer round
// trip, transactions (commit visible, abort never visible under read_committed; offsets sent
// with the transaction), fencing of a zombie, and the producer buffer with the cluster stopped:
// send blocks, then fails after maxBlockMs with TimeoutError, nothing accepted is dropped.
// TERN_CLIENT_DEBUG_LOG=/path writes the buffer test's producer debug log (every batch sent,
// acknowledged or failed) there.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  Admin,
  Consumer,
  Producer,
  ProducerFencedError,
  TimeoutError,
  IllegalStateError,
  type ConsumerRecord,
} from "../../libs/client/index.js";
import { startCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";
import { CoordinatorClient } from "../../services/coordinator/coordinator-client.js";

let cluster: ProcessCluster;
let dataDir: string;
let bootstrap: string;
let admin: Admin;

async function readAll(
  topic: string,
  partitions: number,
  isolationLevel: "read_committed" | "read_uncommitted",
  expected: number,
  timeoutMs = 60_000,
): Promise<ConsumerRecord[]> {
  const consumer = new Consumer({ bootstrap, isolationLevel });
  try {
    consumer.assign(Array.from({ length: partitions }, (_, partition) => ({ topic, partition })));
    await consumer.seekToBeginning();
    const out: ConsumerRecord[] = [];
    const deadline = Date.now() + timeoutMs;
    while (out.length < expected && Date.now() < deadline)
      out.push(...(await consumer.poll({ maxPollRecords: 1000, timeoutMs: 500 })));
    // One more short poll: anything beyond `expected` would be a duplicate.
    out.push(...(await consumer.poll({ timeoutMs: 300 })));
    return out;
  } finally {
    await consumer.close();
  }
}

/** The promise's value or error, or "timeout" when it has not settled within timeoutMs. */
async function settleWithin(p: Promise<unknown>, timeoutMs: number): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise((r) => (timer = setTimeout(() => r("timeout"), timeoutMs)));
  try {
    return await Promise.race([
      p.then(
        (v) => v,
        (e: unknown) => e,
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

async function createTopic(name: string, partitions: number): Promise<void> {
  const [r] = await admin.createTopics([{ name, partitions, replicationFactor: 3 }]);
  if (r?.error && r.error.errorName !== "TOPIC_ALREADY_EXISTS") throw r.error;
  await admin.waitForLeaders([name]);
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "tern-client-"));
  const basePort = await freeBasePort();
  cluster = await startCluster({
    dataDir,
    basePort,
    env: { TERN_LOG_LEVEL: "warn" },
    healthTimeoutMs: 120_000,
  });
  bootstrap = cluster.addresses("controller").join(",");
  admin = new Admin({ bootstrap });
}, 180_000);

afterAll(async () => {
  await admin?.close();
  await cluster?.stop({ termTimeoutMs: 5_000 });
  rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

describe("client against a real cluster", () => {
  it("producer → consumer round trip keeps every record once, keyed records in order per partition", async () => {
    await createTopic("rt", 3);
    const producer = new Producer({ bootstrap, lingerMs: 2, batchSize: 4096 });
    const n = 600;
    const acks = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        producer.send({ topic: "rt", key: `k${i % 7}`, value: `v${i}` }),
      ),
    );
    await producer.close();
    expect(acks.every((a) => a.offset >= 0n)).toBe(true);
    const records = await readAll("rt", 3, "read_uncommitted", n);
    expect(records.map((r) => r.value!.toString()).sort()).toEqual(
      Array.from({ length: n }, (_, i) => `v${i}`).sort(),
    );
    // Same key → same partition, in send order.
    for (let k = 0; k < 7; k++) {
      const mine = records.filter((r) => r.key?.toString() === `k${k}`);
      expect(new Set(mine.map((r) => r.partition)).size).toBe(1);
      const seq = mine.map((r) => Number(r.value!.toString().slice(1)));
      expect(seq).toEqual([...seq].sort((a, b) => a - b));
    }
  }, 120_000);

  it("transactions: committed records visible under read_committed, aborted ones never; offsets commit with the transaction", async () => {
    await createTopic("tx-out", 2);
    await createTopic("tx-in", 1);
    const producer = new Producer({ bootstrap, transactionalId: "client-test-txn" });
    expect(() => producer.beginTransaction()).toThrow(IllegalStateError);
    await producer.initTransactions();
    producer.beginTransaction();
    await Promise.all(
      [0, 1, 2, 3].map((i) =>
        producer.send({ topic: "tx-out", partition: i % 2, value: `commit-${i}` }),
      ),
    );
    await producer.sendOffsetsToTransaction([{ topic: "tx-in", partition: 0, offset: 42n }], {
      groupId: "client-test-group",
    });
    await producer.commitTransaction();
    producer.beginTransaction();
    const aborted = [0, 1, 2].map((i) =>
      producer.send({ topic: "tx-out", partition: i % 2, value: `abort-${i}` }),
    );
    await Promise.allSettled(aborted);
    await producer.sendOffsetsToTransaction([{ topic: "tx-in", partition: 0, offset: 99n }], {
      groupId: "client-test-group",
    });
    await producer.abortTransaction();
    producer.beginTransaction();
    await producer.send({ topic: "tx-out", partition: 0, value: "commit-last" });
    await producer.commitTransaction();
    const committed = await readAll("tx-out", 2, "read_committed", 5);
    expect(committed.map((r) => r.value!.toString()).sort()).toEqual([
      "commit-0",
      "commit-1",
      "commit-2",
      "commit-3",
      "commit-last",
    ]);
    const uncommitted = await readAll("tx-out", 2, "read_uncommitted", 8);
    expect(uncommitted.filter((r) => r.value!.toString().startsWith("abort-")).length).toBe(3);
    const group = new Consumer({ bootstrap, groupId: "client-test-group" });
    group.assign([{ topic: "tx-in", partition: 0 }]);
    expect(await group.committed([{ topic: "tx-in", partition: 0 }])).toEqual([
      { topic: "tx-in", partition: 0, offset: 42n },
    ]);
    await group.close();

    // A second instance with the same id fences the first.
    const zombie = producer;
    const fresh = new Producer({ bootstrap, transactionalId: "client-test-txn" });
    await fresh.initTransactions();
    zombie.beginTransaction();
    const zombieSend = zombie.send({ topic: "tx-out", partition: 1, value: "zombie" });
    await expect(zombieSend).rejects.toBeInstanceOf(ProducerFencedError);
    await expect(zombie.commitTransaction()).rejects.toBeInstanceOf(ProducerFencedError);
    expect(zombie.transactionState).toBe("FATAL_ERROR");
    await zombie.close();
    await fresh.close();
    const after = await readAll("tx-out", 2, "read_committed", 5);
    expect(after.map((r) => r.value!.toString())).not.toContain("zombie");
  }, 180_000);

  it("transactions: the coordinator leader SIGSTOPped before commitTransaction; the commit completes on the new leader while the old one is still stopped", async () => {
    await createTopic("tx-pause", 1);
    const tid = "client-pause-txn";
    const producer = new Producer({ bootstrap, transactionalId: tid });
    const coordinators = new CoordinatorClient(cluster.addresses("coordinator"));
    let paused: number | undefined;
    try {
      await producer.initTransactions();
      producer.beginTransaction();
      await producer.send({ topic: "tx-pause", partition: 0, value: "through-the-pause" });
      const address = await coordinators.findCoordinator(tid);
      paused = cluster.specs.find((s) => s.role === "coordinator" && s.address === address)!.id;
      cluster.kill("coordinator", paused, "SIGSTOP");
      const t0 = performance.now();
      // The old leader answers nothing until SIGCONT (after this wait): without hedging, the
      // EndTxn would wait for it until the request timeout (30 s).
      const outcome = await settleWithin(producer.commitTransaction(), 20_000);
      const tookMs = performance.now() - t0;
      expect(outcome).toBeUndefined();
      // The survivors elect after the election timeout (1.5-3 s); the commit follows within ~1 s.
      expect(tookMs).toBeLessThan(10_000);
    } finally {
      if (paused !== undefined) cluster.kill("coordinator", paused, "SIGCONT");
      coordinators.close();
      await producer.close();
    }
    const committed = await readAll("tx-pause", 1, "read_committed", 1);
    expect(committed.map((r) => r.value!.toString())).toEqual(["through-the-pause"]);
    await cluster.waitForHealth({ timeoutMs: 60_000 });
  }, 120_000);

  it("consumer: commitSync/committed, seek, seekToEnd, position, pause/resume", async () => {
    await createTopic("cons", 1);
    const producer = new Producer({ bootstrap });
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        producer.send({ topic: "cons", partition: 0, value: `r${i}` }),
      ),
    );
    await producer.close();
    const tp = { topic: "cons", partition: 0 };
    const c = new Consumer({ bootstrap, groupId: "cons-group", isolationLevel: "read_committed" });
    c.assign([tp]);
    expect(await c.committed([tp])).toEqual([{ ...tp, offset: null }]);
    expect(await c.position(tp)).toBe(0n);
    const first = await c.poll({ maxPollRecords: 5, timeoutMs: 10_000 });
    expect(first.map((r) => r.offset)).toEqual([0n, 1n, 2n, 3n, 4n]);
    expect(await c.position(tp)).toBe(5n);
    await c.commitSync();
    expect(await c.committed([tp])).toEqual([{ ...tp, offset: 5n }]);
    c.seek(tp, 15n);
    expect((await c.poll({ timeoutMs: 10_000 }))[0]!.offset).toBe(15n);
    c.pause([tp]);
    c.seek(tp, 0n);
    expect(await c.poll({ timeoutMs: 300 })).toEqual([]);
    c.resume([tp]);
    expect((await c.poll({ maxPollRecords: 1, timeoutMs: 10_000 }))[0]!.offset).toBe(0n);
    await c.seekToEnd();
    expect(await c.position(tp)).toBe(20n);
    let asyncError: unknown = "not called";
    await c.commitAsync(undefined, (e) => (asyncError = e));
    expect(asyncError).toBeUndefined();
    expect(await c.committed([tp])).toEqual([{ ...tp, offset: 20n }]);
    // A fresh consumer of the group starts at the committed offset.
    const again = new Consumer({ bootstrap, groupId: "cons-group" });
    again.assign([tp]);
    expect(await again.position(tp)).toBe(20n);
    await again.close();
    await c.close();
  }, 120_000);

  it("producer buffer: with the cluster stopped send blocks, then fails after maxBlockMs; accepted records are delivered after the restart", async () => {
    await createTopic("buf", 1);
    const maxBlockMs = 1_500;
    const logger = process.env.TERN_CLIENT_DEBUG_LOG
      ? pino({ level: "debug" }, pino.destination(process.env.TERN_CLIENT_DEBUG_LOG))
      : undefined;
    const producer = new Producer({
      bootstrap,
      bufferMemory: 4_096,
      batchSize: 1_024,
      lingerMs: 0,
      maxBlockMs,
      deliveryTimeoutMs: 180_000,
      requestTimeoutMs: 3_000,
      ...(logger ? { logger } : {}),
    });
    await producer.send({ topic: "buf", partition: 0, value: "before" });
    await cluster.stop({ termTimeoutMs: 5_000 });
    const value = "x".repeat(200);
    const label = (i: number): string => String(i).padStart(3, "0");
    const outcomes = new Map<number, string>();
    const accepted: Array<Promise<unknown>> = [];
    let blocked: unknown;
    for (let i = 0; i < 100 && blocked === undefined; i++) {
      const availableBefore = producer.bufferAvailableBytes;
      const started = Date.now();
      const p = producer.send({ topic: "buf", partition: 0, value: `${label(i)}-${value}` });
      // Metadata is cached, so send() takes its buffer bytes synchronously when they are free:
      // accepted ⇔ the free bytes dropped. Otherwise it must block, then fail after maxBlockMs.
      if (producer.bufferAvailableBytes < availableBefore) {
        outcomes.set(i, "pending");
        accepted.push(
          p.then(
            () => outcomes.set(i, "ok"),
            (e) => outcomes.set(i, String(e)),
          ),
        );
        continue;
      }
      const settled = await settleWithin(p, maxBlockMs + 10_000);
      expect(settled).toBeInstanceOf(TimeoutError);
      expect(Date.now() - started).toBeGreaterThanOrEqual(maxBlockMs - 50);
      blocked = settled;
    }
    expect(blocked).toBeInstanceOf(TimeoutError);
    expect((blocked as TimeoutError).retriable).toBe(true);
    expect(accepted.length).toBeGreaterThan(0);
    // Nothing accepted may settle while the cluster is down.
    expect([...outcomes.values()].filter((o) => o !== "pending")).toEqual([]);
    cluster.startAll();
    await cluster.waitForHealth({ timeoutMs: 120_000 });
    // Bounded: every accepted record must be acknowledged well before its deliveryTimeoutMs.
    const flushed = await settleWithin(
      producer.flush().then(() => Promise.all(accepted)),
      120_000,
    );
    const notOk = [...outcomes.entries()].filter(([, o]) => o !== "ok");
    expect({ flushed: flushed === "timeout" ? "timeout" : "done", notOk }).toEqual({
      flushed: "done",
      notOk: [],
    });
    await producer.close();
    const records = await readAll("buf", 1, "read_uncommitted", accepted.length + 1);
    expect(records.length).toBe(accepted.length + 1);
    expect(records.map((r) => r.value!.toString().split("-")[0])).toEqual([
      "before",
      ...accepted.map((_, i) => label(i)),
    ]);
  }, 300_000);
});
