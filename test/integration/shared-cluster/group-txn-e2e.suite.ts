// Real processes: 3 controllers + 3 brokers + 3 coordinators (node dist/...; build first with
// `npx tsc -p tsconfig.json`), transaction partition verification on. A consume-transform-
// produce step the way a client library does it: InitProducerId, AddPartitionsToTxn, Produce,
// AddOffsetsToTxn, TxnOffsetCommit, EndTxn. Offsets of a committed transaction appear; those
// of an aborted one never do; a TxnOffsetCommit the coordinator did not see added, or from a
// fenced epoch, is refused.
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parsePeers } from "../../../libs/common/config.js";
import { isTernError } from "../../../libs/common/errors.js";
import { fromGrpcError } from "../../../libs/common/grpc-errors.js";
import { partitionFor } from "../../../libs/common/hash.js";
import { silentLogger } from "../../../libs/common/logger.js";
import { loadTernProto } from "../../../libs/common/proto.js";
import { ControllerClient } from "../../../libs/metadata/controller-client.js";
import { CONSUMER_OFFSETS_TOPIC, type ClusterMetadata } from "../../../libs/metadata/types.js";
import type { ProcessCluster } from "../../../scripts/cluster/process-cluster.js";
import { sharedCluster } from "../helpers/shared-cluster.js";
import { BrokerClient } from "../../../services/broker/broker-client.js";
import { CoordinatorClient } from "../../../services/coordinator/coordinator-client.js";
import { until as poll } from "../../../libs/common/poll.js";

const GROUP = "e2e-group";
const TXN_ID = "e2e-copier";
const OFFSETS_PARTITION = partitionFor(GROUP, 50);
const RETRIABLE = new Set([
  "NOT_COORDINATOR",
  "NOT_LEADER_OR_FOLLOWER",
  "COORDINATOR_LOAD_IN_PROGRESS",
  "COORDINATOR_NOT_AVAILABLE",
  "REQUEST_TIMED_OUT",
  "NETWORK_EXCEPTION",
  "LEADER_NOT_AVAILABLE",
  "CONCURRENT_TRANSACTIONS",
]);

let cluster: ProcessCluster;
let controller: ControllerClient;
let coordinators: CoordinatorClient;
const brokers = new Map<string, BrokerClient>();
const groupClients = new Map<string, any>();

function broker(address: string): BrokerClient {
  let c = brokers.get(address);
  if (!c) brokers.set(address, (c = new BrokerClient(address)));
  return c;
}

/** Retries only the retriable codes: any other error fails the test at once. */
const until = <T>(
  what: string,
  timeoutMs: number,
  probe: () => Promise<T | undefined>,
): Promise<T> =>
  poll(what, timeoutMs, probe, { fatal: (e) => isTernError(e) && !RETRIABLE.has(e.errorName) });

async function leader(topic: string, partition: number): Promise<string> {
  return until(`leader of ${topic}/${partition}`, 60_000, async () => {
    const m: ClusterMetadata = await controller.metadata();
    const p = m.topics
      .find((t) => t.name === topic)
      ?.partitions.find((x) => x.partition === partition);
    const node =
      p && p.leader >= 0
        ? m.nodes.find((n) => n.role === "broker" && n.nodeId === p.leader && n.alive)
        : undefined;
    return node?.address;
  });
}

/** One GroupCoordinator call on the group's coordinator; retriable failures are thrown for until() to retry. */
async function groupCall(method: string, request: Record<string, unknown>): Promise<any> {
  const address = await leader(CONSUMER_OFFSETS_TOPIC, OFFSETS_PARTITION);
  let c = groupClients.get(address);
  if (!c)
    groupClients.set(
      address,
      (c = new (loadTernProto().grpc.tern.v1.GroupCoordinator)(
        address,
        grpc.credentials.createInsecure(),
      )),
    );
  return new Promise((resolve, reject) =>
    c[method](
      { groupId: GROUP, ...request },
      { deadline: Date.now() + 15_000 },
      (e: unknown, r: unknown) => (e ? reject(fromGrpcError(e)) : resolve(r)),
    ),
  );
}

async function committed(requireStable: boolean): Promise<{ offset: string; errorCode: string }> {
  const r = await until("OffsetFetch", 60_000, () =>
    groupCall("OffsetFetch", { partitions: [{ topic: "in", partition: 0 }], requireStable }),
  );
  return r.partitions[0];
}

interface Producer {
  producerId: string;
  producerEpoch: number;
}

function txn(
  method: "InitProducerId" | "AddPartitionsToTxn" | "AddOffsetsToTxn" | "EndTxn",
  request: Record<string, unknown>,
): Promise<any> {
  return coordinators.txnCall(TXN_ID, method, { transactionalId: TXN_ID, ...request }, 60_000);
}

async function produce(p: Producer, value: string): Promise<void> {
  await until("transactional produce", 60_000, async () => {
    const r = await broker(await leader("out", 0)).produce({
      transactionalId: TXN_ID,
      acks: -1,
      timeoutMs: 10_000,
      partitions: [
        {
          topic: "out",
          partition: 0,
          batch: {
            producerId: p.producerId,
            producerEpoch: p.producerEpoch,
            baseSequence: 0,
            isTransactional: true,
            records: [{ key: Buffer.from("k"), value: Buffer.from(value), timestampMs: "0" }],
          },
        },
      ],
    });
    const code = r.partitions[0].errorCode;
    if (RETRIABLE.has(code)) return undefined;
    expect(code).toBe("NONE");
    return true;
  });
}

async function readCommitted(): Promise<string[]> {
  const r = await broker(await leader("out", 0)).fetch({
    maxWaitMs: 0,
    isolationLevel: "READ_COMMITTED",
    partitions: [{ topic: "out", partition: 0, fetchOffset: "0" }],
  });
  return r.partitions[0].batches
    .flatMap((b: any) => b.records)
    .map((x: any) => Buffer.from(x.value).toString());
}

function txnOffsetCommit(p: Producer, offset: string): Promise<any> {
  return until("TxnOffsetCommit", 60_000, () =>
    groupCall("TxnOffsetCommit", {
      transactionalId: TXN_ID,
      producerId: p.producerId,
      producerEpoch: p.producerEpoch,
      generationId: -1,
      partitions: [{ topic: "in", partition: 0, offset, leaderEpoch: -1 }],
    }),
  );
}

beforeAll(async () => {
  cluster = await sharedCluster();
  controller = new ControllerClient({
    controllers: parsePeers(cluster.controllers, "controllers"),
    logger: silentLogger(),
  });
  coordinators = new CoordinatorClient(cluster.addresses("coordinator"));
  await until("topic creation", 60_000, async () => {
    const out = await controller.createTopics([
      { name: "in", partitions: 1, replicationFactor: 3 },
      { name: "out", partitions: 1, replicationFactor: 3 },
    ]);
    return out.every((o) => !o.error || o.error.errorName === "TOPIC_ALREADY_EXISTS")
      ? out
      : undefined;
  });
}, 240_000);

afterAll(async () => {
  for (const c of brokers.values()) c.close();
  for (const c of groupClients.values()) c.close();
  coordinators?.close();
  controller?.close();
}, 60_000);

describe("sendOffsetsToTransaction end to end (controllers, brokers, coordinators)", () => {
  it("commits offsets with the transaction, drops them on abort, refuses unadded and fenced commits", async () => {
    let p: Producer = await txn("InitProducerId", {
      transactionTimeoutMs: 60_000,
      producerId: "-1",
      producerEpoch: -1,
    });
    const first = { ...p };
    // Transaction 1: output record + offsets, committed.
    await txn("AddPartitionsToTxn", {
      producerId: p.producerId,
      producerEpoch: p.producerEpoch,
      partitions: [{ topic: "out", partition: 0 }],
    });
    await produce(p, "copied-1");
    await expect(txnOffsetCommit(p, "5")).rejects.toMatchObject({ errorName: "INVALID_TXN_STATE" }); // AddOffsetsToTxn not called yet
    await txn("AddOffsetsToTxn", {
      producerId: p.producerId,
      producerEpoch: p.producerEpoch,
      groupId: GROUP,
    });
    expect((await txnOffsetCommit(p, "5")).partitions[0].errorCode).toBe("NONE");
    expect(await committed(true)).toMatchObject({ errorCode: "UNSTABLE_OFFSET_COMMIT" });
    expect((await committed(false)).offset).toBe("-1");
    p = await txn("EndTxn", {
      producerId: p.producerId,
      producerEpoch: p.producerEpoch,
      committed: true,
    });
    const visible = await until("offsets of the committed transaction", 60_000, async () => {
      const r = await committed(true);
      return r.errorCode === "NONE" ? r : undefined;
    });
    expect(visible.offset).toBe("5");
    expect(
      await until("output of the committed transaction", 60_000, async () =>
        (await readCommitted()).length > 0 ? readCommitted() : undefined,
      ),
    ).toEqual(["copied-1"]);

    // A zombie with the first epoch is fenced.
    const zombie = await txnOffsetCommit(first, "99").then(
      () => "accepted",
      (e) => (isTernError(e) ? e.errorName : String(e)),
    );
    expect(["PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH"]).toContain(zombie);

    // Transaction 2: aborted; its offsets never show.
    await txn("AddPartitionsToTxn", {
      producerId: p.producerId,
      producerEpoch: p.producerEpoch,
      partitions: [{ topic: "out", partition: 0 }],
    });
    await produce(p, "aborted-2");
    await txn("AddOffsetsToTxn", {
      producerId: p.producerId,
      producerEpoch: p.producerEpoch,
      groupId: GROUP,
    });
    expect((await txnOffsetCommit(p, "50")).partitions[0].errorCode).toBe("NONE");
    const seen = new Set<string>([(await committed(false)).offset]);
    await txn("EndTxn", {
      producerId: p.producerId,
      producerEpoch: p.producerEpoch,
      committed: false,
    });
    const stable = await until("the abort to land", 60_000, async () => {
      const r = await committed(true);
      seen.add(r.offset);
      return r.errorCode === "NONE" ? r : undefined;
    });
    expect(stable.offset).toBe("5");
    seen.delete("-1"); // UNSTABLE answers carry no offset
    expect([...seen]).toEqual(["5"]);
    expect(await readCommitted()).toEqual(["copied-1"]);
  }, 240_000);
});
