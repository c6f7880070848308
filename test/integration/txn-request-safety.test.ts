// Real processes (1 controller, 1 broker, 3 coordinators; build first): requests to the
// transaction coordinator that must not change more than they ask for.
// - keep_epoch (transactions V1) comes only from the coordinator's in-process Kafka listener: a
//   gRPC EndTxn carrying it is refused, and the Kafka listener's EndTxn still keeps the epoch.
// - The broker's batched adds (GrpcTxnVerifier, add-partitions-batcher.ts) merge the partitions
//   of several produce requests: a partition the coordinator's metadata view lacks is a
//   retriable refusal of that partition alone, the others are added.
// - InitProducerId presenting no identity is never sent twice by the SDK's hedge: the first
//   attempt commits its bump at the leader, its answer is slow to come back, the leader dies and
//   the hedge would reach the new leader, whose second bump fences the identity the client keeps.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "../../libs/runtime/system-clock.js";
import {
  Admin,
  Consumer,
  Producer,
  type ConsumerRecord,
  type Transport,
} from "../../libs/client/index.js";
import { clientCredentialsOf, GrpcTransport } from "../../libs/client/network/grpc-transport.js";
import { RETRIABLE_CODES, type ErrorName } from "../../libs/common/errors.js";
import { silentLogger } from "../../libs/common/logger.js";
import { until } from "../../libs/common/poll.js";
import { KafkaWriter } from "../../libs/records/kafka-codec.js";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";
import { startCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import { GrpcServiceTransport } from "../../libs/grpc/grpc-service-transport.js";
import { GrpcTxnVerifier } from "../../services/broker/txn-verifier.js";
import { CoordinatorClient } from "../../services/coordinator/coordinator-client.js";
import { API } from "../../services/kafka/api-versions.js";
import { kafkaRequest, KafkaRawConnection } from "./helpers/kafka-raw-client.js";

const SHAPE = { controllers: 1, brokers: 1, coordinators: 3 };
/** The SDK's hedge delay for transaction coordinator calls (coordinator-finder.ts). */
const SDK_HEDGE_MS = 500;

let cluster: ProcessCluster;
let dataDir: string;
let bootstrap: string;
let admin: Admin;
let coordinators: CoordinatorClient;

async function createTopic(name: string, partitions = 1): Promise<void> {
  const [r] = await admin.createTopics([{ name, partitions, replicationFactor: 1 }]);
  if (r?.error && r.error.errorName !== "TOPIC_ALREADY_EXISTS") throw r.error;
  await admin.waitForLeaders([name]);
}

async function init(tid: string): Promise<{ producerId: string; producerEpoch: number }> {
  const r = await coordinators.txnCall(tid, "InitProducerId", {
    transactionalId: tid,
    transactionTimeoutMs: 60_000,
    producerId: "-1",
    producerEpoch: -1,
  });
  return { producerId: r.producerId, producerEpoch: r.producerEpoch };
}

async function describeTxn(tid: string) {
  const r = await coordinators.txnCall(tid, "DescribeTransactions", { transactionalIds: [tid] });
  return r.transactions[0]!;
}

/** p's value, or a failure naming `what` when it has not settled within timeoutMs. */
async function within<T>(p: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>(
    (_, reject) =>
      (timer = setTimeout(
        () => reject(new Error(`${what}: not within ${timeoutMs} ms`)),
        timeoutMs,
      )),
  );
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The coordinator process (id) leading tid's __transaction_state partition. */
async function leaderOf(tid: string): Promise<{ id: number; address: string }> {
  const address = await coordinators.findCoordinator(tid);
  const spec = cluster.specs.find((s) => s.role === "coordinator" && s.address === address);
  if (spec === undefined) throw new Error(`no coordinator process at ${address}`);
  return { id: spec.id, address };
}

async function readCommitted(topic: string, expected: number): Promise<ConsumerRecord[]> {
  const consumer = new Consumer({ bootstrap, isolationLevel: "read_committed" });
  try {
    consumer.assign([{ topic, partition: 0 }]);
    await consumer.seekToBeginning();
    const out: ConsumerRecord[] = [];
    const deadline = Date.now() + 60_000;
    while (out.length < expected && Date.now() < deadline)
      out.push(...(await consumer.poll({ maxPollRecords: 100, timeoutMs: 500 })));
    return out;
  } finally {
    await consumer.close();
  }
}

/**
 * The real gRPC transport, except that the answer of the first InitProducerId is held back until
 * release() (a slow way back from the coordinator), and every InitProducerId sent is recorded.
 */
class SlowFirstInitAnswer implements Transport {
  private readonly inner = new GrpcTransport(clientCredentialsOf({}));
  readonly initSentTo: string[] = [];
  private releaseHeld: () => void = () => undefined;
  private readonly held = new Promise<void>((r) => (this.releaseHeld = r));
  private answeredFirst: (address: string) => void = () => undefined;
  /** Resolves with the address once the first InitProducerId's answer reached the client. */
  readonly firstAnswered = new Promise<string>((r) => (this.answeredFirst = r));
  private sentSecond: () => void = () => undefined;
  /** Resolves when a second InitProducerId was sent while the first was unanswered. */
  readonly secondSent = new Promise<void>((r) => (this.sentSecond = r));

  call: Transport["call"] = (service, address, method, request, timeoutMs) => {
    const answer = this.inner.call(service, address, method, request, timeoutMs);
    if (service !== "TransactionCoordinator" || method !== "InitProducerId") return answer;
    this.initSentTo.push(address);
    if (this.initSentTo.length > 1) {
      this.sentSecond();
      // The first answer goes back before the second can be answered.
      this.release();
      return answer;
    }
    const hold = async <T>(settled: () => T): Promise<T> => {
      this.answeredFirst(address);
      await this.held;
      return settled();
    };
    return answer.then(
      (v) => hold(() => v),
      (e: unknown) =>
        hold(() => {
          throw e;
        }),
    );
  };

  release(): void {
    this.releaseHeld();
  }

  controller: Transport["controller"] = (options) => this.inner.controller(options);

  close(): void {
    this.inner.close();
  }
}

/** EndTxn v1 (transactions V1, as librdkafka sends it) at a coordinator's Kafka listener; its error code. */
async function kafkaEndTxn(
  port: number,
  tid: string,
  identity: { producerId: string; producerEpoch: number },
  committed: boolean,
): Promise<number> {
  const c = await KafkaRawConnection.open(port);
  try {
    c.s.write(
      kafkaRequest(API.EndTxn, 1, 1, (w: KafkaWriter) =>
        w
          .string(tid)
          .int64(BigInt(identity.producerId))
          .int16(identity.producerEpoch)
          .bool(committed),
      ),
    );
    const answer = await c.next(30_000);
    if (answer === undefined) throw new Error("the Kafka listener closed the connection");
    answer.body.int32(); // throttle_time_ms
    return answer.body.int16();
  } finally {
    c.close();
  }
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "tern-txn-request-safety-"));
  cluster = await startCluster({
    dataDir,
    basePort: await freeBasePort(SHAPE),
    ...SHAPE,
    env: { TERN_LOG_LEVEL: "warn" },
    healthTimeoutMs: 180_000,
  });
  bootstrap = cluster.addresses("controller").join(",");
  admin = new Admin({ bootstrap });
  coordinators = new CoordinatorClient(cluster.addresses("coordinator"));
}, 240_000);

afterAll(async () => {
  coordinators?.close();
  await admin?.close();
  await cluster?.stop({ termTimeoutMs: 5_000 });
  rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

describe("transaction coordinator requests", () => {
  it("a gRPC EndTxn with keep_epoch is refused; the Kafka listener's EndTxn keeps the epoch", async () => {
    await createTopic("keep-epoch-out");
    const tid = "keep-epoch-over-grpc";
    const id = await init(tid);
    const partitions = [{ topic: "keep-epoch-out", partition: 0 }];
    const add = (identity: typeof id) =>
      coordinators.txnCall(tid, "AddPartitionsToTxn", {
        transactionalId: tid,
        ...identity,
        partitions,
        verifyOnly: false,
      });
    expect((await add(id)).results.map((r) => r.errorCode)).toEqual(["NONE"]);

    // From outside, over gRPC: refused, and nothing decided.
    const { address } = await leaderOf(tid);
    const outcome = await coordinators
      .call(address, "EndTxn", { transactionalId: tid, ...id, committed: true, keepEpoch: true })
      .then(
        (r) => ({ answered: r }),
        (e: unknown) => ({ error: e }),
      );
    expect(outcome).toMatchObject({
      error: { errorName: "INVALID_REQUEST", message: expect.stringContaining("keep_epoch") },
    });
    expect(await describeTxn(tid)).toMatchObject({ state: "ONGOING", ...id });

    // The same transaction ended by a V2 EndTxn (gRPC, no keep_epoch) bumps the epoch.
    const next = await coordinators.txnCall(tid, "EndTxn", {
      transactionalId: tid,
      ...id,
      committed: true,
    });
    expect(next).toMatchObject({ producerId: id.producerId, producerEpoch: id.producerEpoch + 1 });

    // Through the leader's Kafka listener (in process): a V1 end keeps the epoch.
    expect((await add(next)).results.map((r) => r.errorCode)).toEqual(["NONE"]);
    const leader = await leaderOf(tid);
    const kafkaPort = cluster.spec("coordinator", leader.id).kafkaPort!;
    expect(await kafkaEndTxn(kafkaPort, tid, next, true)).toBe(0);
    const after = await until("the V1 commit to complete", 30_000, async () => {
      const d = await describeTxn(tid);
      return d.state === "COMPLETE_COMMIT" ? d : undefined;
    });
    expect(after).toMatchObject({ producerId: next.producerId, producerEpoch: next.producerEpoch });
  }, 120_000);

  it("a broker's batched add: a partition unknown to the coordinator is a retriable refusal of that partition alone", async () => {
    await createTopic("batched-add-out", 2);
    const tid = "batched-add";
    const id = await init(tid);
    const transport = new GrpcServiceTransport();
    const verifier = new GrpcTxnVerifier({
      transport,
      coordinators: () => cluster.addresses("coordinator"),
      logger: silentLogger(),
      scheduler: systemClock,
    });
    try {
      const verify = (topic: string, partition: number) =>
        verifier.verify(tid, BigInt(id.producerId), id.producerEpoch, topic, partition, "add");
      // Remembers the coordinator's address, so the next two adds leave in the same turn.
      expect((await verify("batched-add-out", 0)).error).toBe("NONE");
      // The first batches of two produce requests: one for a partition the coordinator knows,
      // one for a topic its metadata view does not name (here: not created yet; the same as a
      // view that lags the controller's).
      const [known, unknown] = await Promise.all([
        verify("batched-add-out", 1),
        verify("batched-add-later", 0),
      ]);
      expect(known).toEqual({ error: "NONE", message: "" });
      expect(unknown.error).toBe("UNKNOWN_TOPIC_OR_PARTITION");
      expect(RETRIABLE_CODES.has(unknown.error as ErrorName)).toBe(true);
      expect((await describeTxn(tid)).partitions).toEqual([
        { topic: "batched-add-out", partition: 0 },
        { topic: "batched-add-out", partition: 1 },
      ]);
      // Once the coordinator's view names it, the retry is added.
      await createTopic("batched-add-later");
      await until("the retried add to succeed", 30_000, async () =>
        (await verify("batched-add-later", 0)).error === "NONE" ? true : undefined,
      );
      expect((await describeTxn(tid)).partitions).toHaveLength(3);
    } finally {
      transport.close();
    }
  }, 120_000);

  it("the SDK's InitProducerId without an identity is not hedged: a slow answer and a new leader leave the producer usable", async () => {
    await createTopic("hedged-init-out");
    const tid = "hedged-init";
    await init(tid); // an earlier instance: the SDK's init below bumps
    const first = await leaderOf(tid);
    const transport = new SlowFirstInitAnswer();
    const producer = new Producer({ bootstrap, transactionalId: tid, transport });
    try {
      const initialised = producer.initTransactions();
      // The leader committed the bump and answered; the answer is on its way back.
      expect(await within(transport.firstAnswered, 30_000, "the first answer")).toBe(first.address);
      cluster.kill("coordinator", first.id, "SIGKILL");
      await until("a new leader of the id's partition", 60_000, async () => {
        const address = await coordinators.findCoordinator(tid, first.address).catch(() => "");
        return address !== "" && address !== first.address ? address : undefined;
      });
      // A hedge would have asked FindCoordinator every SDK_HEDGE_MS and sent a second
      // InitProducerId to the new leader by now; the first answer arrives after that (or once
      // that second attempt leaves).
      await Promise.race([
        transport.secondSent,
        new Promise((r) => setTimeout(r, 6 * SDK_HEDGE_MS)),
      ]);
      transport.release();
      await within(initialised, 60_000, "initTransactions");
      producer.beginTransaction();
      await producer.send({ topic: "hedged-init-out", partition: 0, value: "after-failover" });
      await producer.commitTransaction();
      expect(transport.initSentTo).toEqual([first.address]);
    } finally {
      transport.release();
      await producer.close();
      transport.close();
    }
    const committed = await readCommitted("hedged-init-out", 1);
    expect(committed.map((r) => r.value!.toString())).toEqual(["after-failover"]);
  }, 180_000);
});
