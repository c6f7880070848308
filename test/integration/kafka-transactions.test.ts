// Kafka transactions through the Kafka protocol, with clients nobody here wrote, on a real local
// cluster: a librdkafka (confluent-kafka, /usr/bin/python3) and a kafkajs transactional producer
// commit and abort transactions through the coordinators' Kafka listeners (FindCoordinator
// points them there: coordinator N is Kafka node 1_000_000_000 + N, listed in Metadata), and
// kcat's read_committed consumer sees exactly the committed records. Also: offsets committed
// with a transaction (send_offsets_to_transaction / sendOffsets), a second instance fencing the
// first, and the coordinator leading the librdkafka producer's transactional id SIGKILLed
// between two transactions and inside an open one: the same producer goes on and commits; and a
// partition leader SIGSTOPped mid-transaction: librdkafka bumps its epoch (KIP-360) and goes on;
// and a librdkafka consume-transform-produce copier in a consumer group (helpers/kafka_copier.py,
// send_offsets_to_transaction) that copies N records exactly once while the coordinator leading
// its transactional id and a broker leading an output partition are SIGKILLed.
// Needs kcat and python3-confluent-kafka (Debian; .ci/run installs them); skipped otherwise.
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Kafka, logLevel } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Admin } from "../../libs/client/index.js";
import type { TransactionDescription } from "../../libs/client/admin/admin.js";
import { partitionFor } from "../../libs/common/hash.js";
import { until } from "../../libs/common/poll.js";
import { CONSUMER_OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC } from "../../libs/metadata/types.js";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";
import { startCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import { COORDINATOR_KAFKA_NODE_ID_BASE } from "../../services/kafka/kafka-node-ids.js";
import { runKcat, type KcatResult } from "./helpers/kcat.js";

const PYTHON = "/usr/bin/python3";
const KCAT = "kcat";
const PRODUCER_SCRIPT = resolve(import.meta.dirname, "helpers", "kafka_txn_producer.py");
const COPIER_SCRIPT = resolve(import.meta.dirname, "helpers", "kafka_copier.py");
const hasKcat = spawnSync(KCAT, ["-V"], { encoding: "utf8" }).status === 0;
const hasConfluent =
  spawnSync(PYTHON, ["-c", "import confluent_kafka"], { encoding: "utf8" }).status === 0;
if (!hasKcat || !hasConfluent) {
  process.stderr.write(
    "kafka-transactions.test.ts SKIPPED: needs kcat and python3-confluent-kafka; install with: apt-get install -y kcat python3-confluent-kafka\n",
  );
}

let cluster: ProcessCluster | undefined;
let dataDir: string;
let admin: Admin;
/** The brokers' Kafka listeners: the bootstrap list every client gets (never a coordinator's). */
let kafkaBrokers: string;

function kcat(
  args: string[],
  timeoutMs = 60_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return kcatAt(kafkaBrokers, args, timeoutMs);
}

function kcatAt(bootstrap: string, args: string[], timeoutMs = 60_000): Promise<KcatResult> {
  return runKcat(bootstrap, args, { timeoutMs });
}

/** Produces one record per value through kcat (librdkafka's partitioner spreads them). */
function kcatProduce(topic: string, vals: readonly string[]): Promise<KcatResult> {
  return runKcat(kafkaBrokers, ["-P", "-t", topic], { input: vals.join("\n") + "\n" });
}

/** Every record value of a partition from the beginning to its end, through kcat (librdkafka). */
async function values(
  topic: string,
  isolation: "read_committed" | "read_uncommitted",
): Promise<string[]> {
  const r = await kcat([
    "-C",
    "-t",
    topic,
    "-p",
    "0",
    "-o",
    "beginning",
    "-e",
    "-q",
    "-f",
    "%s\\n",
    "-X",
    `isolation.level=${isolation}`,
  ]);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout.split("\n").filter((l) => l !== "");
}

/** The librdkafka transactional producer of helpers/kafka_txn_producer.py, one transaction per send(). */
class PythonProducer {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly lines: string[] = [];
  private partial = "";
  stderr = "";

  constructor(transactionalId: string, settings: Record<string, string | number> = {}) {
    this.child = spawn(
      PYTHON,
      [PRODUCER_SCRIPT, kafkaBrokers, transactionalId, JSON.stringify(settings)],
      { stdio: ["pipe", "pipe", "pipe"] },
    );
    this.child.stdout.on("data", (d: Buffer) => {
      const parts = (this.partial + d.toString()).split("\n");
      this.partial = parts.pop()!;
      this.lines.push(...parts.filter((l) => l.trim() !== ""));
    });
    // Bounded: librdkafka's own log lines, kept for failure messages only.
    this.child.stderr.on(
      "data",
      (d: Buffer) => (this.stderr = (this.stderr + d.toString()).slice(-20_000)),
    );
  }

  /** The next line the script printed, parsed. */
  next(timeoutMs: number): Promise<any> {
    return until(
      "a line from the librdkafka producer",
      timeoutMs,
      () => {
        const line = this.lines.shift();
        if (line !== undefined) return JSON.parse(line);
        if (this.child.exitCode !== null)
          throw new Error(`the producer exited (${this.child.exitCode}): ${this.stderr}`);
        return undefined;
      },
      { intervalMs: 50 },
    );
  }

  async transaction(
    commit: boolean,
    topic: string,
    vals: string[],
    timeoutMs = 90_000,
    offsets?: { group: string; topic: string; partition: number; offset: number },
    flush = false,
  ): Promise<any> {
    this.child.stdin.write(
      JSON.stringify({
        commit,
        topic,
        partition: 0,
        values: vals,
        ...(offsets ? { offsets } : {}),
        ...(flush ? { flush } : {}),
      }) + "\n",
    );
    return this.next(timeoutMs);
  }

  /** Produces a transaction's records and waits; resume() ends it. */
  async produceAndPause(commit: boolean, topic: string, vals: string[]): Promise<any> {
    this.child.stdin.write(
      JSON.stringify({ commit, topic, partition: 0, values: vals, pause: true }) + "\n",
    );
    return this.next(90_000);
  }

  resume(timeoutMs = 120_000): Promise<any> {
    this.child.stdin.write("go\n");
    return this.next(timeoutMs);
  }

  async close(): Promise<number | null> {
    this.child.stdin.end();
    await until("the librdkafka producer to exit", 30_000, () =>
      this.child.exitCode !== null ? true : undefined,
    );
    return this.child.exitCode;
  }

  kill(): void {
    if (this.child.exitCode === null) this.child.kill("SIGKILL");
  }
}

/** The coordinator's description of a transactional id, polled past retriable errors (a coordinator restarting). */
async function described(
  transactionalId: string,
  accept: (d: TransactionDescription) => boolean = () => true,
): Promise<TransactionDescription> {
  return until(`a description of ${transactionalId}`, 30_000, async () => {
    const d = (await admin.describeTransactions([transactionalId]))[0]!;
    return d.errorCode === undefined && accept(d) ? d : undefined;
  });
}

/** The broker leading partition 0 of a topic. */
async function brokerLeaderOf(topic: string): Promise<number> {
  return until(`the leader of ${topic}/0`, 60_000, async () => {
    const m = await admin.metadataView();
    const leader =
      m.topics.find((t) => t.name === topic)?.partitions.find((p) => p.partition === 0)?.leader ??
      -1;
    return leader >= 0 ? leader : undefined;
  });
}

/** The coordinator node leading the transactional id's __transaction_state partition. */
async function txnCoordinatorOf(transactionalId: string): Promise<number> {
  return until(`the coordinator of ${transactionalId}`, 60_000, async () => {
    const m = await admin.metadataView();
    const t = m.topics.find((x) => x.name === TRANSACTION_STATE_TOPIC);
    if (t === undefined) return undefined;
    const leader =
      t.partitions.find((p) => p.partition === partitionFor(transactionalId, t.partitions.length))
        ?.leader ?? -1;
    return leader >= 0 &&
      m.nodes.some((n) => n.role === "coordinator" && n.nodeId === leader && n.alive)
      ? leader
      : undefined;
  });
}

/** The group's committed offset of partition 0 of a topic (tern's OffsetFetch, through the SDK), polled until it is `expected`. */
async function committedOffset(
  groupId: string,
  topic: string,
  expected: bigint,
): Promise<bigint | null> {
  let last: bigint | null = null;
  await until(`${groupId}'s committed offset of ${topic}/0 to be ${expected}`, 30_000, async () => {
    const d = await admin.describeGroup(groupId);
    last = d.partitions.find((p) => p.topic === topic && p.partition === 0)?.committed ?? null;
    return last === expected ? true : undefined;
  }).catch(() => undefined);
  return last;
}

const producers: PythonProducer[] = [];

describe.skipIf(!hasKcat || !hasConfluent)(
  "Kafka transactions through the Kafka protocol listeners",
  () => {
    beforeAll(async () => {
      dataDir = mkdtempSync(join(tmpdir(), "tern-kafka-txn-"));
      cluster = await startCluster({
        dataDir,
        basePort: await freeBasePort(),
        env: { TERN_LOG_LEVEL: "warn" },
        healthTimeoutMs: 180_000,
      });
      kafkaBrokers = [0, 1, 2]
        .map((i) => `127.0.0.1:${cluster!.spec("broker", i).kafkaPort}`)
        .join(",");
      admin = new Admin({ bootstrap: cluster.addresses("controller").join(",") });
      const created = await admin.createTopics(
        ["ktx-rdkafka", "ktx-kafkajs", "ktx-kill", "ktx-in", "ktx-out", "ktx-bump"].map((name) => ({
          name,
          partitions: 1,
          replicationFactor: 3,
        })),
      );
      for (const c of created) expect(c.error ?? null).toBeNull();
      await admin.waitForLeaders([
        "ktx-rdkafka",
        "ktx-kafkajs",
        "ktx-kill",
        "ktx-in",
        "ktx-out",
        "ktx-bump",
        TRANSACTION_STATE_TOPIC,
        CONSUMER_OFFSETS_TOPIC,
      ]);
    }, 240_000);

    afterAll(async () => {
      for (const p of producers) p.kill();
      await admin?.close();
      await cluster?.stop({ termTimeoutMs: 5_000 });
      rmSync(dataDir, { recursive: true, force: true });
    }, 60_000);

    it("Metadata lists the coordinators' Kafka listeners under node ids 1_000_000_000 + id, beside the brokers", async () => {
      const r = await kcat(["-L", "-J"]);
      expect(r.code, r.stderr).toBe(0);
      const brokers = (JSON.parse(r.stdout).brokers as Array<{ id: number; name: string }>)
        .map((b) => `${b.id}@${b.name}`)
        .sort();
      const expected = [
        ...[0, 1, 2].map((i) => `${i}@127.0.0.1:${cluster!.spec("broker", i).kafkaPort}`),
        ...[0, 1, 2].map(
          (i) =>
            `${COORDINATOR_KAFKA_NODE_ID_BASE + i}@127.0.0.1:${cluster!.spec("coordinator", i).kafkaPort}`,
        ),
      ].sort();
      expect(brokers).toEqual(expected);
      // A coordinator's listener answers Metadata too (clients may ask any node they know).
      const viaCoordinator = await kcatAt(
        `127.0.0.1:${cluster!.spec("coordinator", 1).kafkaPort}`,
        ["-L", "-J", "-t", "ktx-rdkafka"],
      );
      expect(viaCoordinator.code, viaCoordinator.stderr).toBe(0);
      const meta = JSON.parse(viaCoordinator.stdout);
      expect(
        (meta.brokers as Array<{ id: number; name: string }>)
          .map((b) => `${b.id}@${b.name}`)
          .sort(),
      ).toEqual(expected);
      expect(meta.topics[0]).toMatchObject({
        topic: "ktx-rdkafka",
        partitions: [expect.objectContaining({ partition: 0 })],
      });
      expect(meta.topics[0].partitions[0].leader).toBeLessThan(COORDINATOR_KAFKA_NODE_ID_BASE);
    }, 60_000);

    it("librdkafka: init_transactions, a committed, an aborted and a committed transaction; read_committed sees the committed ones", async () => {
      const p = new PythonProducer("rdkafka-txn");
      producers.push(p);
      expect(await p.next(90_000), p.stderr).toEqual({ init: true });
      expect(await p.transaction(true, "ktx-rdkafka", ["c0", "c1", "c2"]), p.stderr).toMatchObject({
        ok: true,
      });
      expect(await p.transaction(false, "ktx-rdkafka", ["a0", "a1"]), p.stderr).toMatchObject({
        ok: true,
      });
      expect(await p.transaction(true, "ktx-rdkafka", ["c3"]), p.stderr).toMatchObject({
        ok: true,
      });
      expect(await p.close()).toBe(0);
      // Transactions V1 for Kafka clients: three transactions, one epoch (keep_epoch).
      expect(
        (await described("rdkafka-txn", (d) => d.state === "COMPLETE_COMMIT")).producerEpoch,
      ).toBe(0);
      expect(await values("ktx-rdkafka", "read_committed")).toEqual(["c0", "c1", "c2", "c3"]);
      // The aborted records were written, and are skipped only under read_committed.
      expect(await values("ktx-rdkafka", "read_uncommitted")).toEqual([
        "c0",
        "c1",
        "c2",
        "a0",
        "a1",
        "c3",
      ]);
    }, 240_000);

    it("kafkajs: a transactional producer commits, aborts and commits; read_committed sees the committed ones", async () => {
      const kafka = new Kafka({
        clientId: "tern-kafkajs-txn",
        brokers: kafkaBrokers.split(","),
        logLevel: logLevel.NOTHING,
        retry: { retries: 10, initialRetryTime: 200 },
      });
      const producer = kafka.producer({
        transactionalId: "kafkajs-txn",
        idempotent: true,
        maxInFlightRequests: 1,
      });
      await producer.connect();
      try {
        for (const [commit, vals] of [
          [true, ["js-c0", "js-c1"]],
          [false, ["js-a0"]],
          [true, ["js-c2"]],
        ] as const) {
          const txn = await producer.transaction();
          await txn.send({
            topic: "ktx-kafkajs",
            messages: vals.map((value) => ({ value, partition: 0 })),
          });
          await (commit ? txn.commit() : txn.abort());
        }
      } finally {
        await producer.disconnect();
      }
      await described("kafkajs-txn", (d) => d.state === "COMPLETE_COMMIT");
      expect(await values("ktx-kafkajs", "read_committed")).toEqual(["js-c0", "js-c1", "js-c2"]);
      expect(await values("ktx-kafkajs", "read_uncommitted")).toEqual([
        "js-c0",
        "js-c1",
        "js-a0",
        "js-c2",
      ]);
    }, 240_000);

    it("librdkafka: a second instance with the same transactional id fences the first, which gets a fatal fenced error", async () => {
      const first = new PythonProducer("rdkafka-fenced");
      producers.push(first);
      expect(await first.next(90_000), first.stderr).toEqual({ init: true });
      expect(await first.transaction(true, "ktx-rdkafka", ["f0"]), first.stderr).toMatchObject({
        ok: true,
      });
      const second = new PythonProducer("rdkafka-fenced");
      producers.push(second);
      expect(await second.next(90_000), second.stderr).toEqual({ init: true });
      // INVALID_PRODUCER_EPOCH (47) at v0-v1, which librdkafka turns into its fatal _FENCED.
      const fenced = await first.transaction(true, "ktx-rdkafka", ["f-zombie"]);
      expect(fenced, first.stderr).toMatchObject({ ok: false, fatal: true });
      expect(fenced.error).toMatch(/fenced/i);
      expect(await second.transaction(true, "ktx-rdkafka", ["f1"]), second.stderr).toMatchObject({
        ok: true,
      });
      await first.close();
      expect(await second.close()).toBe(0);
      await described("rdkafka-fenced", (d) => d.state === "COMPLETE_COMMIT");
      const committed = await values("ktx-rdkafka", "read_committed");
      expect(committed.filter((v) => v.startsWith("f"))).toEqual(["f0", "f1"]);
    }, 240_000);

    it("librdkafka: send_offsets_to_transaction commits the group's offset with a committed transaction only", async () => {
      const p = new PythonProducer("rdkafka-offsets");
      producers.push(p);
      expect(await p.next(90_000), p.stderr).toEqual({ init: true });
      const offsets = (offset: number) => ({
        group: "rdkafka-copier",
        topic: "ktx-in",
        partition: 0,
        offset,
      });
      expect(
        await p.transaction(true, "ktx-out", ["o0", "o1"], 90_000, offsets(2)),
        p.stderr,
      ).toMatchObject({ ok: true });
      expect(await committedOffset("rdkafka-copier", "ktx-in", 2n)).toBe(2n);
      expect(
        await p.transaction(false, "ktx-out", ["o-aborted"], 90_000, offsets(3)),
        p.stderr,
      ).toMatchObject({ ok: true });
      expect(
        await p.transaction(true, "ktx-out", ["o2"], 90_000, offsets(5)),
        p.stderr,
      ).toMatchObject({ ok: true });
      expect(await committedOffset("rdkafka-copier", "ktx-in", 5n)).toBe(5n);
      expect(await p.close()).toBe(0);
      await described("rdkafka-offsets", (d) => d.state === "COMPLETE_COMMIT");
      expect(await values("ktx-out", "read_committed")).toEqual(["o0", "o1", "o2"]);
    }, 240_000);

    it("kafkajs: sendOffsets commits the group's offset with the transaction; an aborted one leaves it", async () => {
      const kafka = new Kafka({
        clientId: "tern-kafkajs-offsets",
        brokers: kafkaBrokers.split(","),
        logLevel: logLevel.NOTHING,
        retry: { retries: 10, initialRetryTime: 200 },
      });
      const producer = kafka.producer({
        transactionalId: "kafkajs-offsets",
        idempotent: true,
        maxInFlightRequests: 1,
      });
      await producer.connect();
      try {
        for (const [commit, offset] of [
          [true, "7"],
          [false, "9"],
        ] as const) {
          const txn = await producer.transaction();
          await txn.send({
            topic: "ktx-out",
            messages: [{ value: `js-offset-${offset}`, partition: 0 }],
          });
          await txn.sendOffsets({
            consumerGroupId: "kafkajs-copier",
            topics: [{ topic: "ktx-in", partitions: [{ partition: 0, offset }] }],
          });
          await (commit ? txn.commit() : txn.abort());
        }
      } finally {
        await producer.disconnect();
      }
      expect(await committedOffset("kafkajs-copier", "ktx-in", 7n)).toBe(7n);
    }, 240_000);

    it("librdkafka: the coordinator leader SIGKILLed between two transactions; the same producer commits the next one", async () => {
      const transactionalId = "rdkafka-kill";
      const p = new PythonProducer(transactionalId);
      producers.push(p);
      expect(await p.next(90_000), p.stderr).toEqual({ init: true });
      expect(await p.transaction(true, "ktx-kill", ["k0", "k1"]), p.stderr).toMatchObject({
        ok: true,
      });
      const leader = await txnCoordinatorOf(transactionalId);
      expect(cluster!.kill("coordinator", leader, "SIGKILL")).toBe(true);
      expect(await cluster!.waitForExit("coordinator", leader, 10_000)).toBe(true);
      const started = Date.now();
      // librdkafka finds the new coordinator (NOT_COORDINATOR / connection loss -> FindCoordinator).
      expect(await p.transaction(true, "ktx-kill", ["k2", "k3"], 120_000), p.stderr).toMatchObject({
        ok: true,
      });
      const tookMs = Date.now() - started;
      expect(await p.transaction(false, "ktx-kill", ["k-aborted"]), p.stderr).toMatchObject({
        ok: true,
      });
      expect(await p.close()).toBe(0);
      // Another coordinator leads the transactional id's partition now.
      await until("a new transaction coordinator in metadata", 60_000, async () =>
        (await txnCoordinatorOf(transactionalId)) !== leader ? true : undefined,
      );
      expect(await values("ktx-kill", "read_committed")).toEqual(["k0", "k1", "k2", "k3"]);
      process.stderr.write(
        `kafka-transactions: the transaction after the coordinator kill committed in ${tookMs} ms\n`,
      );
      cluster!.start("coordinator", leader);
      await cluster!.waitForHealth({
        timeoutMs: 90_000,
        only: [{ role: "coordinator", id: leader }],
      });
    }, 300_000);

    it("librdkafka: the coordinator leader SIGKILLed inside an open transaction; its commit still succeeds", async () => {
      const transactionalId = "rdkafka-kill-open";
      const p = new PythonProducer(transactionalId);
      producers.push(p);
      expect(await p.next(90_000), p.stderr).toEqual({ init: true });
      // The records are acknowledged: the partition is in the transaction, replicated in the log.
      expect(await p.produceAndPause(true, "ktx-kill", ["open-0", "open-1"]), p.stderr).toEqual({
        produced: 0,
      });
      const leader = await txnCoordinatorOf(transactionalId);
      expect(cluster!.kill("coordinator", leader, "SIGKILL")).toBe(true);
      expect(await cluster!.waitForExit("coordinator", leader, 10_000)).toBe(true);
      // EndTxn reaches the new leader, which has the Ongoing transaction from the Raft log.
      expect(await p.resume(), p.stderr).toMatchObject({ ok: true });
      expect(await p.close()).toBe(0);
      await described(transactionalId, (d) => d.state === "COMPLETE_COMMIT");
      const committed = await values("ktx-kill", "read_committed");
      expect(committed.filter((v) => v.startsWith("open-"))).toEqual(["open-0", "open-1"]);
      cluster!.start("coordinator", leader);
    }, 300_000);

    it("librdkafka KIP-360: records time out while their leader is SIGSTOPped; the producer aborts with an epoch bump and commits the next transaction", async () => {
      const p = new PythonProducer("rdkafka-bump", {
        "message.timeout.ms": 4000,
        "request.timeout.ms": 3000,
      });
      producers.push(p);
      expect(await p.next(90_000), p.stderr).toEqual({ init: true });
      expect(await p.transaction(true, "ktx-bump", ["b0"]), p.stderr).toMatchObject({ ok: true });
      const before = await described("rdkafka-bump");
      const leader = await brokerLeaderOf("ktx-bump");
      expect(cluster!.kill("broker", leader, "SIGSTOP")).toBe(true);
      let stalled: any;
      try {
        // The records cannot be acknowledged in time: an abortable error that needs an epoch bump.
        // Flushed before the commit (kafka_txn_producer.py): the timeout surfaces there, never inside commit_transaction.
        stalled = await p.transaction(true, "ktx-bump", ["b-timed-out"], 120_000, undefined, true);
      } finally {
        cluster!.kill("broker", leader, "SIGCONT");
      }
      expect(stalled, p.stderr).toMatchObject({ ok: false, abortable: true, aborted: true });
      expect(await p.transaction(true, "ktx-bump", ["b1"], 120_000), p.stderr).toMatchObject({
        ok: true,
      });
      expect(await p.close()).toBe(0);
      await described("rdkafka-bump", (d) => d.state === "COMPLETE_COMMIT");
      expect(await values("ktx-bump", "read_committed")).toEqual(["b0", "b1"]);
      // The same instance goes on under a newer epoch: the bump came from its own InitProducerId v3+.
      const after = await described("rdkafka-bump");
      expect(after.producerId).toBe(before.producerId);
      expect(after.producerEpoch).toBeGreaterThan(before.producerEpoch);
    }, 300_000);
    it("librdkafka: a consume-transform-produce copier in a consumer group copies N records exactly once while the coordinator leader and a broker leader are SIGKILLed", async () => {
      const n = 3000;
      const transactionalId = "rdkafka-copier-kill";
      const created = await admin.createTopics(
        ["ktx-copy-in", "ktx-copy-out"].map((name) => ({
          name,
          partitions: 3,
          replicationFactor: 3,
        })),
      );
      for (const c of created) expect(c.error ?? null).toBeNull();
      await admin.waitForLeaders(["ktx-copy-in", "ktx-copy-out"]);
      const input = Array.from({ length: n }, (_, i) => `copy-${i}`);
      const fed = await kcatProduce("ktx-copy-in", input);
      expect(fed.code, fed.stderr).toBe(0);
      const copier = spawn(
        PYTHON,
        [
          COPIER_SCRIPT,
          kafkaBrokers,
          "rdkafka-copier-group",
          "ktx-copy-in",
          "ktx-copy-out",
          transactionalId,
          String(n),
          "60",
        ],
        { stdio: ["ignore", "pipe", "pipe"] },
      );
      let out = "";
      let err = "";
      copier.stdout.on("data", (d: Buffer) => (out = (out + d.toString()).slice(-50_000)));
      copier.stderr.on("data", (d: Buffer) => (err = (err + d.toString()).slice(-20_000)));
      const copied = (): number =>
        Math.max(0, ...[...out.matchAll(/copied (\d+)/g)].map((m) => Number(m[1])));
      try {
        await until("a third copied", 120_000, () =>
          copied() >= n / 3
            ? true
            : copier.exitCode !== null
              ? Promise.reject(new Error(`copier exited: ${out} ${err}`))
              : undefined,
        );
        const coordinator = await txnCoordinatorOf(transactionalId);
        expect(cluster!.kill("coordinator", coordinator, "SIGKILL")).toBe(true);
        await until("two thirds copied", 180_000, () =>
          copied() >= (2 * n) / 3
            ? true
            : copier.exitCode !== null
              ? Promise.reject(new Error(`copier exited: ${out} ${err}`))
              : undefined,
        );
        const broker = await brokerLeaderOf("ktx-copy-out");
        expect(cluster!.kill("broker", broker, "SIGKILL")).toBe(true);
        cluster!.start("coordinator", coordinator);
        await until("the copier to finish", 180_000, () =>
          copier.exitCode !== null ? true : undefined,
        );
        expect(copier.exitCode, `${out}\n${err}`).toBe(0);
        cluster!.start("broker", broker);
        await cluster!.waitForHealth({ timeoutMs: 120_000 });
      } finally {
        if (copier.exitCode === null) copier.kill("SIGKILL");
      }
      // Every input record exactly once in the output, whatever was aborted and retried on the way.
      const r = await kcat(
        [
          "-C",
          "-t",
          "ktx-copy-out",
          "-o",
          "beginning",
          "-e",
          "-q",
          "-f",
          "%s\\n",
          "-X",
          "isolation.level=read_committed",
        ],
        120_000,
      );
      expect(r.code, r.stderr).toBe(0);
      const got = r.stdout
        .split("\n")
        .filter((l) => l !== "")
        .sort();
      expect(got.length).toBe(n);
      expect(got).toEqual(input.map((v) => v.toUpperCase()).sort());
    }, 600_000);
  },
);
