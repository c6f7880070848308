// Per-partition order with 5 batches in flight, end to end (build first with
// `npx tsc -p tsconfig.json`). The broker's ProposalOrder FIFO on its own, then real
// processes: an idempotent and a transactional producer pipelining small batches (the
// transactional first appends wait for the coordinator's verification, which used to let later
// batches overtake earlier ones: OUT_OF_ORDER_SEQUENCE_NUMBER), and a producer that keeps
// sending while its partition leader is SIGKILLed. Every record must arrive once, in send order.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  Admin,
  Consumer,
  Producer,
  type ConsumerRecord,
  type RecordMetadata,
} from "../../libs/client/index.js";
import { until } from "../../libs/common/poll.js";
import {
  ORDERED_WAITERS_MAX,
  ProposalOrder,
} from "../../services/broker/partition-service/produce.js";
import { startCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";

/** The shared bounded poll, every few ms here. */
const POLL = { intervalMs: 5 };

describe("ProposalOrder (broker: per-(partition, producer) FIFO)", () => {
  it("runs turns of one key in arrival order, other keys independently, and forgets a drained key", async () => {
    const order = new ProposalOrder();
    const log: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const first = order.enqueue("k", async () => {
      await gate;
      log.push("k1");
      return { proposed: Promise.resolve("r1") };
    });
    const second = order.enqueue("k", async () => {
      log.push("k2");
      return { proposed: Promise.resolve("r2") };
    });
    const other = order.enqueue("j", async () => {
      log.push("j1");
      return "refused";
    });
    expect(await other).toBe("refused");
    expect(log).toEqual(["j1"]);
    expect(order.has("k")).toBe(true);
    release();
    expect(await first).toBe("r1");
    expect(await second).toBe("r2");
    expect(log).toEqual(["j1", "k1", "k2"]);
    await expect(
      until("the drained key forgotten", 1_000, () => order.size === 0 || undefined, POLL),
    ).resolves.toBe(true);
  });

  it("a failing turn does not block the next one; a full queue is refused", async () => {
    const order = new ProposalOrder();
    const failing = order.enqueue("k", async () => {
      throw new Error("verification crashed");
    });
    const next = order.enqueue("k", async () => "next");
    await expect(failing).rejects.toThrow("verification crashed");
    expect(await next).toBe("next");
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const waiting = Array.from({ length: ORDERED_WAITERS_MAX }, () =>
      order.enqueue("full", async () => gate.then(() => "ok")),
    );
    expect(waiting.every((w) => w !== null)).toBe(true);
    expect(order.enqueue("full", async () => "over")).toBeNull();
    release();
    expect(await Promise.all(waiting)).toEqual(
      Array.from({ length: ORDERED_WAITERS_MAX }, () => "ok"),
    );
  });
});

let cluster: ProcessCluster;
let dataDir: string;
let bootstrap: string;
let admin: Admin;

async function createTopic(name: string, partitions: number): Promise<void> {
  const [r] = await admin.createTopics([{ name, partitions, replicationFactor: 3 }]);
  if (r?.error && r.error.errorName !== "TOPIC_ALREADY_EXISTS") throw r.error;
  await admin.waitForLeaders([name]);
}

async function readAll(
  topic: string,
  partitions: number,
  isolationLevel: "read_committed" | "read_uncommitted",
  expected: number,
  timeoutMs = 90_000,
): Promise<ConsumerRecord[]> {
  const consumer = new Consumer({ bootstrap, isolationLevel });
  try {
    consumer.assign(Array.from({ length: partitions }, (_, partition) => ({ topic, partition })));
    await consumer.seekToBeginning();
    const out: ConsumerRecord[] = [];
    const deadline = Date.now() + timeoutMs;
    while (out.length < expected && Date.now() < deadline)
      out.push(...(await consumer.poll({ maxPollRecords: 2000, timeoutMs: 500 })));
    out.push(...(await consumer.poll({ timeoutMs: 300 })));
    return out;
  } finally {
    await consumer.close();
  }
}

/** Values per partition, in log order. */
function byPartition(records: readonly ConsumerRecord[]): Map<number, string[]> {
  const out = new Map<number, string[]>();
  for (const r of records) {
    const list = out.get(r.partition) ?? [];
    list.push(r.value!.toString().split("|")[0]!);
    out.set(r.partition, list);
  }
  return out;
}

/** Every send's outcome; offsets must grow in send order per partition. */
function expectOffsetsInSendOrder(acks: readonly RecordMetadata[]): void {
  const last = new Map<number, bigint>();
  for (const a of acks) {
    expect(a.offset).toBeGreaterThan(last.get(a.partition) ?? -1n);
    last.set(a.partition, a.offset);
  }
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "tern-client-order-"));
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

const PAD = "y".repeat(1000);

describe("five batches in flight per partition against a real cluster", () => {
  it("idempotent producer: small pipelined batches all succeed, once, in send order", async () => {
    await createTopic("order-idem", 1);
    const producer = new Producer({
      bootstrap,
      batchSize: 4_096,
      lingerMs: 0,
      maxInFlightPerPartition: 5,
    });
    const n = 2_000;
    const outcomes = await Promise.allSettled(
      Array.from({ length: n }, (_, i) =>
        producer.send({ topic: "order-idem", partition: 0, value: `${i}|${PAD}` }),
      ),
    );
    await producer.close();
    expect(
      outcomes
        .filter((o) => o.status === "rejected")
        .map((o) => String((o as PromiseRejectedResult).reason))
        .slice(0, 3),
    ).toEqual([]);
    expectOffsetsInSendOrder(
      outcomes.map((o) => (o as PromiseFulfilledResult<RecordMetadata>).value),
    );
    const records = await readAll("order-idem", 1, "read_uncommitted", n);
    expect(byPartition(records).get(0)).toEqual(Array.from({ length: n }, (_, i) => String(i)));
  }, 180_000);

  it("transactional producer: batches queued behind the first append's verification keep their order", async () => {
    await createTopic("order-txn", 2);
    const producer = new Producer({
      bootstrap,
      transactionalId: "order-txn-producer",
      batchSize: 2_048,
      lingerMs: 0,
      maxInFlightPerPartition: 5,
    });
    await producer.initTransactions();
    const perTxn = 400;
    const transactions = 3;
    for (let t = 0; t < transactions; t++) {
      producer.beginTransaction();
      const sends = Array.from({ length: perTxn }, (_, i) =>
        producer.send({ topic: "order-txn", partition: i % 2, value: `${t * perTxn + i}|${PAD}` }),
      );
      const outcomes = await Promise.allSettled(sends);
      expect(
        outcomes
          .filter((o) => o.status === "rejected")
          .map((o) => String((o as PromiseRejectedResult).reason))
          .slice(0, 3),
      ).toEqual([]);
      expectOffsetsInSendOrder(
        outcomes.map((o) => (o as PromiseFulfilledResult<RecordMetadata>).value),
      );
      await producer.commitTransaction();
    }
    await producer.close();
    const records = await readAll("order-txn", 2, "read_committed", perTxn * transactions);
    const parts = byPartition(records);
    const all = Array.from({ length: perTxn * transactions }, (_, i) => i);
    expect(parts.get(0)).toEqual(all.filter((i) => (i % perTxn) % 2 === 0).map(String));
    expect(parts.get(1)).toEqual(all.filter((i) => (i % perTxn) % 2 === 1).map(String));
  }, 180_000);

  it("partition leader SIGKILLed mid-stream: the producer follows the new leader; every record once, in order", async () => {
    await createTopic("order-failover", 1);
    const [described] = await admin.describeTopics(["order-failover"]);
    const leaderId = described?.topic?.partitions.find((p) => p.partition === 0)?.leader ?? -1;
    expect(leaderId).toBeGreaterThanOrEqual(0);
    const producer = new Producer({
      bootstrap,
      batchSize: 8_192,
      lingerMs: 1,
      maxInFlightPerPartition: 5,
      deliveryTimeoutMs: 150_000,
      requestTimeoutMs: 5_000,
    });
    const n = 3_000;
    let acked = 0;
    const sends: Array<Promise<RecordMetadata>> = [];
    for (let i = 0; i < n; i++) {
      sends.push(
        producer.send({ topic: "order-failover", partition: 0, value: `${i}|${PAD}` }).then((m) => {
          acked += 1;
          return m;
        }),
      );
      if (i === Math.floor(n / 3)) {
        await expect(
          until(
            `more than ${n / 6} sends acknowledged`,
            60_000,
            () => acked > n / 6 || undefined,
            POLL,
          ),
        ).resolves.toBe(true);
        expect(cluster.kill("broker", leaderId)).toBe(true);
      }
    }
    const outcomes = await Promise.allSettled(sends);
    await producer.close();
    expect(
      outcomes
        .filter((o) => o.status === "rejected")
        .map((o) => String((o as PromiseRejectedResult).reason))
        .slice(0, 3),
    ).toEqual([]);
    expectOffsetsInSendOrder(
      outcomes
        .map((o) => (o as PromiseFulfilledResult<RecordMetadata>).value)
        .filter((m) => m.offset >= 0n),
    );
    const records = await readAll("order-failover", 1, "read_uncommitted", n);
    expect(byPartition(records).get(0)).toEqual(Array.from({ length: n }, (_, i) => String(i)));
    cluster.start("broker", leaderId);
    await cluster.waitForHealth({ timeoutMs: 120_000 });
  }, 300_000);
});
