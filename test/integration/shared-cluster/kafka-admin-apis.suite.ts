// The admin APIs that exist only in flexible versions, on a real local cluster through the Kafka
// listeners: DescribeCluster, and kafka-transactions.sh's ListTransactions, DescribeTransactions
// and DescribeProducers. No client installed here sends them (librdkafka 2.0, kafkajs 2.2, kcat),
// so they are sent frame by frame (helpers/kafka-raw-client.ts); the transaction they look at is
// opened and committed by kafkajs, and the answers are checked against kafkajs's view of the
// cluster and against `tern txn list`.
import kafkajs from "kafkajs";
import { beforeAll, describe, expect, it } from "vitest";
import { until } from "../../../libs/common/poll.js";
import type { KafkaReader } from "../../../libs/records/kafka-codec.js";
import type { ProcessCluster } from "../../../scripts/cluster/process-cluster.js";
import { sharedCluster } from "../helpers/shared-cluster.js";
import { KafkaRawConnection } from "../helpers/kafka-raw-client.js";
import { okCli } from "../helpers/tern-cli.js";

const { Kafka, logLevel } = kafkajs;
const TOPIC = "tools";
const TXN_ID = "tools-txn";
const API = {
  DescribeCluster: 60,
  DescribeProducers: 61,
  DescribeTransactions: 65,
  ListTransactions: 66,
} as const;
const NOT_LEADER_OR_FOLLOWER = 6;
const NOT_COORDINATOR = 16;
const COORDINATOR_NODE_ID_BASE = 1_000_000_000;

let cluster: ProcessCluster | undefined;
let bootstrap: string;
/** Kafka node id → listener port, brokers and coordinators. */
const ports = new Map<number, number>();

beforeAll(async () => {
  cluster = await sharedCluster();
  bootstrap = cluster.addresses("controller").join(",");
  for (const i of [0, 1, 2]) {
    ports.set(i, cluster.spec("broker", i).kafkaPort!);
    ports.set(COORDINATOR_NODE_ID_BASE + i, cluster.spec("coordinator", i).kafkaPort!);
  }
  await okCli(bootstrap, ["topics", "create", TOPIC, "-p", "3", "-r", "3"]);
}, 240_000);

async function call<T>(
  nodeId: number,
  apiKey: number,
  version: number,
  body: Parameters<KafkaRawConnection["flexibleCall"]>[2],
  read: (r: KafkaReader) => T,
): Promise<T> {
  const c = await KafkaRawConnection.open(ports.get(nodeId)!);
  try {
    return read(await c.flexibleCall(apiKey, version, body));
  } finally {
    c.close();
  }
}

interface Listing {
  transactionalId: string;
  producerId: bigint;
  state: string;
}

function listTransactions(
  nodeId: number,
  states: string[] = [],
  version = 0,
): Promise<{ error: number; transactions: Listing[] }> {
  return call(
    nodeId,
    API.ListTransactions,
    version,
    (w) => {
      w.compactArray(states, (x, s) => x.compactNullableString(s)).compactArray(
        [],
        () => undefined,
      );
      if (version >= 1) w.int64(-1n);
      w.noTaggedFields();
    },
    (r) => {
      r.int32();
      const error = r.int16();
      r.compactArray((x) => x.compactString()); // unknown_state_filters
      const transactions = r.compactArray((x) => {
        const t = {
          transactionalId: x.compactString(),
          producerId: x.int64(),
          state: x.compactString(),
        };
        x.taggedFields();
        return t;
      });
      return { error, transactions };
    },
  );
}

interface Description {
  error: number;
  transactionalId: string;
  state: string;
  timeoutMs: number;
  startMs: bigint;
  producerId: bigint;
  producerEpoch: number;
  partitions: Array<[string, number[]]>;
}

function describeTransaction(nodeId: number, id: string): Promise<Description> {
  return call(
    nodeId,
    API.DescribeTransactions,
    0,
    (w) => w.compactArray([id], (x, s) => x.compactNullableString(s)).noTaggedFields(),
    (r) => {
      r.int32();
      const [d] = r.compactArray((x) => {
        const out: Description = {
          error: x.int16(),
          transactionalId: x.compactString(),
          state: x.compactString(),
          timeoutMs: x.int32(),
          startMs: x.int64(),
          producerId: x.int64(),
          producerEpoch: x.int16(),
          partitions: x.compactArray((y) => {
            const p: [string, number[]] = [y.compactString(), y.compactArray((z) => z.int32())];
            y.taggedFields();
            return p;
          }),
        };
        x.taggedFields();
        return out;
      });
      return d!;
    },
  );
}

interface Producers {
  error: number;
  producers: Array<{
    producerId: bigint;
    producerEpoch: number;
    lastSequence: number;
    lastTimestamp: bigint;
    coordinatorEpoch: number;
    txnStartOffset: bigint;
  }>;
}

function describeProducers(nodeId: number, partition: number): Promise<Producers> {
  return call(
    nodeId,
    API.DescribeProducers,
    0,
    (w) => {
      w.compactArray([TOPIC], (x, t) =>
        x
          .compactNullableString(t)
          .compactArray([partition], (y, p) => y.int32(p))
          .noTaggedFields(),
      ).noTaggedFields();
    },
    (r) => {
      r.int32();
      const [topic] = r.compactArray((x) => {
        x.compactString();
        const [p] = x.compactArray((y) => {
          y.int32();
          const error = y.int16();
          y.compactNullableString();
          const producers = y.compactArray((z) => {
            const s = {
              producerId: z.int64(),
              producerEpoch: z.int32(),
              lastSequence: z.int32(),
              lastTimestamp: z.int64(),
              coordinatorEpoch: z.int32(),
              txnStartOffset: z.int64(),
            };
            z.taggedFields();
            return s;
          });
          y.taggedFields();
          return { error, producers };
        });
        x.taggedFields();
        return p!;
      });
      return topic!;
    },
  );
}

describe("flexible-only admin APIs through the Kafka listeners", () => {
  it("DescribeCluster answers the cluster id and the Kafka nodes kafkajs sees in Metadata", async () => {
    const admin = new Kafka({
      clientId: "tools",
      brokers: [`127.0.0.1:${ports.get(0)}`],
      logLevel: logLevel.NOTHING,
    }).admin();
    await admin.connect();
    const seen = await admin.describeCluster();
    await admin.disconnect();
    for (const nodeId of [1, COORDINATOR_NODE_ID_BASE + 2]) {
      const d = await call(
        nodeId,
        API.DescribeCluster,
        0,
        (w) => w.bool(false).noTaggedFields(),
        (r) => {
          r.int32();
          const out = {
            error: r.int16(),
            message: r.compactNullableString(),
            clusterId: r.compactString(),
            controller: r.int32(),
            nodes: r.compactArray((x) => {
              const n = {
                nodeId: x.int32(),
                host: x.compactString(),
                port: x.int32(),
                rack: x.compactNullableString(),
              };
              x.taggedFields();
              return n;
            }),
            operations: r.int32(),
          };
          r.taggedFields();
          return out;
        },
      );
      // As in Metadata (tern's controllers are not Kafka nodes): a broker names itself, a coordinator the lowest broker.
      expect(d).toMatchObject({
        error: 0,
        message: null,
        clusterId: seen.clusterId,
        controller: nodeId < COORDINATOR_NODE_ID_BASE ? nodeId : 0,
      });
      expect(d.nodes.map((n) => n.nodeId).sort((a, b) => a - b)).toEqual(
        seen.brokers.map((b) => b.nodeId).sort((a, b) => a - b),
      );
      expect(d.nodes.map((n) => n.nodeId).sort((a, b) => a - b)).toEqual(
        [...ports.keys()].sort((a, b) => a - b),
      );
      for (const n of d.nodes) expect(n.port).toBe(ports.get(n.nodeId));
    }
  });

  it("ListTransactions, DescribeTransactions and DescribeProducers follow a kafkajs transaction from open to committed", async () => {
    const kafka = new Kafka({
      clientId: "tools",
      brokers: [0, 1, 2].map((i) => `127.0.0.1:${ports.get(i)}`),
      logLevel: logLevel.NOTHING,
    });
    const producer = kafka.producer({
      transactionalId: TXN_ID,
      idempotent: true,
      maxInFlightRequests: 1,
      transactionTimeout: 45_000,
    });
    await producer.connect();
    const admin = kafka.admin();
    await admin.connect();
    try {
      const txn = await producer.transaction();
      await txn.send({
        topic: TOPIC,
        messages: [
          { partition: 0, value: "a" },
          { partition: 0, value: "b" },
        ],
      });

      // Every node Metadata lists is asked, as Kafka's admin client does; exactly one coordinator lists it.
      const listings = await Promise.all(
        [...ports.keys()].map(async (nodeId) => ({ nodeId, ...(await listTransactions(nodeId)) })),
      );
      for (const l of listings) expect(l.error).toBe(0);
      const holders = listings.filter((l) =>
        l.transactions.some((t) => t.transactionalId === TXN_ID),
      );
      expect(holders).toHaveLength(1);
      const coordinator = holders[0]!.nodeId;
      expect(coordinator).toBeGreaterThanOrEqual(COORDINATOR_NODE_ID_BASE);
      const listed = holders[0]!.transactions.find((t) => t.transactionalId === TXN_ID)!;
      expect(listed.state).toBe("Ongoing");
      // The same transaction as tern's own tool shows it.
      const ternList = JSON.parse((await okCli(bootstrap, ["--json", "txn", "list"])).stdout) as {
        transactions: Array<{ transactionalId: string; producerId: string; state: string }>;
      };
      expect(ternList.transactions.find((t) => t.transactionalId === TXN_ID)).toMatchObject({
        producerId: String(listed.producerId),
        state: "ONGOING",
      });
      // State filters: v1 (with its duration filter) and a state it is not in.
      expect(
        (await listTransactions(coordinator, ["Ongoing"], 1)).transactions.map(
          (t) => t.transactionalId,
        ),
      ).toContain(TXN_ID);
      expect(
        (await listTransactions(coordinator, ["CompleteCommit", "Dead"])).transactions.map(
          (t) => t.transactionalId,
        ),
      ).not.toContain(TXN_ID);

      const open = await describeTransaction(coordinator, TXN_ID);
      expect(open).toMatchObject({
        error: 0,
        transactionalId: TXN_ID,
        state: "Ongoing",
        timeoutMs: 45_000,
        producerId: listed.producerId,
        partitions: [[TOPIC, [0]]],
      });
      expect(open.producerEpoch).toBeGreaterThanOrEqual(0);
      expect(open.startMs).toBeGreaterThan(0n);
      // A broker coordinates no transactions: the client is sent to find the coordinator again.
      expect((await describeTransaction(1, TXN_ID)).error).toBe(NOT_COORDINATOR);

      const [meta] = (await admin.fetchTopicMetadata({ topics: [TOPIC] })).topics;
      const leader = meta!.partitions.find((p) => p.partitionId === 0)!.leader;
      const onLeader = await describeProducers(leader, 0);
      expect(onLeader.error).toBe(0);
      const mine = onLeader.producers.find((p) => p.producerId === listed.producerId);
      expect(mine).toMatchObject({ producerEpoch: open.producerEpoch, lastSequence: 1 });
      expect(mine!.txnStartOffset).toBeGreaterThanOrEqual(0n);
      const follower = [0, 1, 2].find((id) => id !== leader)!;
      expect((await describeProducers(follower, 0)).error).toBe(NOT_LEADER_OR_FOLLOWER);

      await txn.commit();
      const done = await until("the transaction to complete", 30_000, async () => {
        const d = await describeTransaction(coordinator, TXN_ID);
        return d.state === "CompleteCommit" ? d : undefined;
      });
      expect(done.partitions).toEqual([]);
      await until("the partition's open transaction to close", 30_000, async () => {
        const p = (await describeProducers(leader, 0)).producers.find(
          (s) => s.producerId === listed.producerId,
        );
        return p !== undefined && p.txnStartOffset === -1n ? true : undefined;
      });
      expect(
        (await listTransactions(coordinator, ["CompleteCommit"])).transactions.map(
          (t) => t.transactionalId,
        ),
      ).toContain(TXN_ID);
    } finally {
      await admin.disconnect();
      await producer.disconnect();
    }
  }, 120_000);
});
