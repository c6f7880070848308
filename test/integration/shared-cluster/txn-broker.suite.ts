// Real processes: 3 controllers, 3 brokers, 3 coordinators (node dist/...; build first).
// The broker side of transactions against the real coordinator: KIP-890 verification refuses
// a transactional append to a partition not added to the transaction; the LSO holds at the
// open transaction and advances when the coordinator's markers arrive; read_committed never
// returns aborted records; a hanging transaction is listed and ended by the admin abort.
import { afterAll, beforeAll, expect, it } from "vitest";
import { parsePeers } from "../../../libs/common/config.js";
import { silentLogger } from "../../../libs/common/logger.js";
import { ControllerClient } from "../../../libs/metadata/controller-client.js";
import type { ProcessCluster } from "../../../scripts/cluster/process-cluster.js";
import { sharedCluster } from "../helpers/shared-cluster.js";
import { CoordinatorClient } from "../../../services/coordinator/coordinator-client.js";
import { until } from "../../../libs/common/poll.js";
import type { BrokerClient } from "../../../services/broker/broker-client.js";
import { BrokerClients } from "../helpers/broker-clients.js";

const TOPIC = "txout";
let cluster: ProcessCluster;
let controller: ControllerClient;
let coordinators: CoordinatorClient;
const brokers = new BrokerClients();

async function leader(partition: number): Promise<BrokerClient> {
  return until(`leader of ${TOPIC}/${partition}`, 30_000, async () => {
    const m = await controller.metadata();
    const p = m.topics
      .find((t) => t.name === TOPIC)
      ?.partitions.find((x) => x.partition === partition);
    const n =
      p && p.leader >= 0
        ? m.nodes.find((x) => x.role === "broker" && x.nodeId === p.leader)
        : undefined;
    return n ? brokers.get(n.address) : undefined;
  });
}

async function produce(
  partition: number,
  batch: Record<string, unknown>,
  transactionalId = "",
): Promise<any> {
  return until(`produce ${TOPIC}/${partition}`, 60_000, async () => {
    const r = await (
      await leader(partition)
    ).produce({ transactionalId, acks: -1, partitions: [{ topic: TOPIC, partition, batch }] });
    const p = r.partitions[0];
    return [
      "NOT_LEADER_OR_FOLLOWER",
      "REQUEST_TIMED_OUT",
      "COORDINATOR_NOT_AVAILABLE",
      "NOT_COORDINATOR",
      "CONCURRENT_TRANSACTIONS",
    ].includes(p.errorCode)
      ? undefined
      : p;
  });
}

async function fetch(
  partition: number,
  isolation: "READ_COMMITTED" | "READ_UNCOMMITTED",
): Promise<{ values: string[]; p: any }> {
  const r = await (
    await leader(partition)
  ).fetch({
    maxWaitMs: 0,
    isolationLevel: isolation,
    partitions: [{ topic: TOPIC, partition, fetchOffset: "0" }],
  });
  const p = r.partitions[0];
  return {
    values: p.batches.flatMap((b: any) =>
      b.records.map((x: any) => Buffer.from(x.value).toString()),
    ),
    p,
  };
}

const rec = (v: string): unknown => ({ value: Buffer.from(v) });

beforeAll(async () => {
  cluster = await sharedCluster();
  controller = new ControllerClient({
    controllers: parsePeers(cluster.controllers, "controllers"),
    logger: silentLogger(),
  });
  coordinators = new CoordinatorClient(cluster.addresses("coordinator"));
  await until("topic", 60_000, async () => {
    const out = await controller.createTopics([
      { name: TOPIC, partitions: 2, replicationFactor: 3 },
    ]);
    return out.every((o) => !o.error || o.error.errorName === "TOPIC_ALREADY_EXISTS")
      ? true
      : undefined;
  });
}, 240_000);

afterAll(async () => {
  brokers.closeAll();
  coordinators?.close();
  controller?.close();
}, 60_000);

it("verifies partitions, holds the LSO, applies the coordinator's markers, filters aborts, and aborts a hanging transaction", async () => {
  const tid = "broker-txn-1";
  const init = await coordinators.txnCall(tid, "InitProducerId", {
    transactionalId: tid,
    transactionTimeoutMs: 60_000,
    producerId: "-1",
    producerEpoch: -1,
  });
  let producerId: string = init.producerId;
  let epoch: number = init.producerEpoch;
  await produce(0, { producerId: "-1", records: [rec("plain")] });

  // KIP-890: partition 0 was not added to any transaction yet.
  const unverified = await produce(
    0,
    {
      producerId,
      producerEpoch: epoch,
      baseSequence: 0,
      isTransactional: true,
      records: [rec("sneaky")],
    },
    tid,
  );
  expect(unverified.errorCode).toBe("INVALID_TXN_STATE");

  // Transaction 1: committed on both partitions.
  await coordinators.txnCall(tid, "AddPartitionsToTxn", {
    transactionalId: tid,
    producerId,
    producerEpoch: epoch,
    partitions: [
      { topic: TOPIC, partition: 0 },
      { topic: TOPIC, partition: 1 },
    ],
  });
  const d0 = await produce(
    0,
    {
      producerId,
      producerEpoch: epoch,
      baseSequence: 0,
      isTransactional: true,
      records: [rec("c0")],
    },
    tid,
  );
  expect(d0.errorCode).toBe("NONE");
  expect(
    (
      await produce(
        1,
        {
          producerId,
          producerEpoch: epoch,
          baseSequence: 0,
          isTransactional: true,
          records: [rec("c1")],
        },
        tid,
      )
    ).errorCode,
  ).toBe("NONE");
  const open = await fetch(0, "READ_COMMITTED");
  expect(open.p.lastStableOffset).toBe(d0.baseOffset);
  expect(open.values).toEqual(["plain"]);
  const end1 = await coordinators.txnCall(tid, "EndTxn", {
    transactionalId: tid,
    producerId,
    producerEpoch: epoch,
    committed: true,
  });
  await until("commit markers", 60_000, async () => {
    const [a, b] = [await fetch(0, "READ_COMMITTED"), await fetch(1, "READ_COMMITTED")];
    return a.p.lastStableOffset === a.p.highWatermark &&
      b.p.lastStableOffset === b.p.highWatermark &&
      a.values.includes("c0") &&
      b.values.includes("c1")
      ? true
      : undefined;
  });
  producerId = end1.producerId;
  epoch = end1.producerEpoch;

  // Transaction 2: aborted; its records never appear under read_committed.
  await coordinators.txnCall(tid, "AddPartitionsToTxn", {
    transactionalId: tid,
    producerId,
    producerEpoch: epoch,
    partitions: [{ topic: TOPIC, partition: 0 }],
  });
  expect(
    (
      await produce(
        0,
        {
          producerId,
          producerEpoch: epoch,
          baseSequence: 0,
          isTransactional: true,
          records: [rec("a0")],
        },
        tid,
      )
    ).errorCode,
  ).toBe("NONE");
  expect((await fetch(0, "READ_COMMITTED")).values).toEqual(["plain", "c0"]);
  await coordinators.txnCall(tid, "EndTxn", {
    transactionalId: tid,
    producerId,
    producerEpoch: epoch,
    committed: false,
  });
  const afterAbort = await until("abort marker", 60_000, async () => {
    const f = await fetch(0, "READ_COMMITTED");
    return f.p.lastStableOffset === f.p.highWatermark ? f : undefined;
  });
  expect(afterAbort.values).toEqual(["plain", "c0"]);
  expect((await fetch(0, "READ_UNCOMMITTED")).values).toEqual(["plain", "c0", "a0"]);

  // A hanging transaction on partition 1: listed, then ended by the admin abort.
  const tid2 = "broker-txn-hanging";
  const init2 = await coordinators.txnCall(tid2, "InitProducerId", {
    transactionalId: tid2,
    transactionTimeoutMs: 600_000,
    producerId: "-1",
    producerEpoch: -1,
  });
  await coordinators.txnCall(tid2, "AddPartitionsToTxn", {
    transactionalId: tid2,
    producerId: init2.producerId,
    producerEpoch: init2.producerEpoch,
    partitions: [{ topic: TOPIC, partition: 1 }],
  });
  const h = await produce(
    1,
    {
      producerId: init2.producerId,
      producerEpoch: init2.producerEpoch,
      baseSequence: 0,
      isTransactional: true,
      records: [rec("hanging")],
    },
    tid2,
  );
  expect(h.errorCode).toBe("NONE");
  const broker1 = await leader(1);
  const hanging = await broker1.call("ListHangingTransactions", {
    partitions: [{ topic: TOPIC, partition: 1 }],
    maxTransactionTimeoutMs: "1",
  });
  const found = hanging.transactions.find((t: any) => t.producerId === init2.producerId);
  expect(found).toMatchObject({ startOffset: h.baseOffset });
  const described = await broker1.call("DescribeProducers", {
    partitions: [{ topic: TOPIC, partition: 1 }],
  });
  const state = described.partitions[0]!.producers.find(
    (p: any) => p.producerId === init2.producerId,
  )!;
  expect(state.currentTxnStartOffset).toBe(h.baseOffset);
  const aborted = await broker1.call("AbortPartitionTransaction", {
    topicPartition: { topic: TOPIC, partition: 1 },
    producerId: init2.producerId,
    producerEpoch: state.producerEpoch,
    coordinatorEpoch: Math.max(0, state.coordinatorEpoch),
  });
  expect(aborted.errorCode).toBe("NONE");
  const f1 = await fetch(1, "READ_COMMITTED");
  expect(f1.p.lastStableOffset).toBe(f1.p.highWatermark);
  expect(f1.values).toEqual(["c1"]);
}, 300_000);
