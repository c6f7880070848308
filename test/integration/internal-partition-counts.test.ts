// Real processes (1 controller, 1 broker, 1 coordinator; build first with `npx tsc -p
// tsconfig.json`), the controller set to 7 __transaction_state and 3 __consumer_offsets
// partitions. Brokers, coordinators and clients must hash a transactional id and a group id
// modulo those counts (read from cluster metadata), not a constant 50: with ids whose 50-way
// partition does not exist here, a transaction with offsets commits through the client, and the
// id and the group land on their partitions of 7 and of 3.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { partitionFor } from "../../libs/common/hash.js";
import { until } from "../../libs/common/poll.js";
import { Admin, Consumer, Producer, type ConsumerRecord } from "../../libs/client/index.js";
import { startCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";

const TXN_PARTITIONS = 7;
const OFFSETS_PARTITIONS = 3;
const TXN_ID = "txn-count-test";
const GROUP = "g2";
/** Bound on each client step: long enough for a slow start, short enough to fail a 50-way hash quickly. */
const STEP_TIMEOUT_MS = 30_000;

let cluster: ProcessCluster;
let dataDir: string;
let bootstrap: string;
let admin: Admin;

/** The promise's value, or a rejection naming the step when it has not settled within STEP_TIMEOUT_MS. */
async function step<T>(what: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>(
    (_, reject) =>
      (timer = setTimeout(
        () => reject(new Error(`${what} did not finish within ${STEP_TIMEOUT_MS} ms`)),
        STEP_TIMEOUT_MS,
      )),
  );
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

beforeAll(async () => {
  // The ids are chosen so that their partition of 50 does not exist in this cluster.
  expect(partitionFor(TXN_ID, 50)).toBeGreaterThanOrEqual(TXN_PARTITIONS);
  expect(partitionFor(GROUP, 50)).toBeGreaterThanOrEqual(OFFSETS_PARTITIONS);
  dataDir = mkdtempSync(join(tmpdir(), "tern-internal-counts-"));
  cluster = await startCluster({
    dataDir,
    controllers: 1,
    brokers: 1,
    coordinators: 1,
    basePort: await freeBasePort(),
    healthTimeoutMs: 120_000,
    env: {
      TERN_LOG_LEVEL: "warn",
      TERN_TXN_STATE_PARTITIONS: String(TXN_PARTITIONS),
      TERN_TXN_STATE_REPLICATION_FACTOR: "1",
      TERN_OFFSETS_PARTITIONS: String(OFFSETS_PARTITIONS),
      TERN_OFFSETS_REPLICATION_FACTOR: "1",
    },
  });
  bootstrap = cluster.addresses("controller").join(",");
  admin = new Admin({ bootstrap });
  for (const r of await admin.createTopics([
    { name: "out", partitions: 1, replicationFactor: 1 },
    { name: "in", partitions: 1, replicationFactor: 1 },
  ]))
    if (r.error) throw r.error;
  await admin.waitForLeaders(["out", "in", "__transaction_state", "__consumer_offsets"]);
}, 180_000);

afterAll(async () => {
  await admin?.close();
  await cluster?.stop({ termTimeoutMs: 5_000 });
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

describe("internal topic partition counts come from cluster metadata", () => {
  it("a transaction with offsets commits when the controller made 7 and 3 partitions, not 50", async () => {
    const m = await admin.metadataView();
    expect(m.topics.find((t) => t.name === "__transaction_state")?.partitions.length).toBe(
      TXN_PARTITIONS,
    );
    expect(m.topics.find((t) => t.name === "__consumer_offsets")?.partitions.length).toBe(
      OFFSETS_PARTITIONS,
    );

    const producer = new Producer({
      bootstrap,
      transactionalId: TXN_ID,
      maxBlockMs: STEP_TIMEOUT_MS,
    });
    try {
      await step("initTransactions", producer.initTransactions());
      producer.beginTransaction();
      await step("send", producer.send({ topic: "out", partition: 0, value: "committed-1" }));
      await step(
        "sendOffsetsToTransaction",
        producer.sendOffsetsToTransaction([{ topic: "in", partition: 0, offset: 11n }], {
          groupId: GROUP,
        }),
      );
      await step("commitTransaction", producer.commitTransaction());
    } finally {
      await producer.close();
    }

    // The id lives on its partition of 7 (the coordinator answers with the partition it hashed to).
    // EndTxn answers once PrepareCommit is logged; the markers follow.
    const described = await until("the transaction to complete", STEP_TIMEOUT_MS, async () => {
      const [d] = await admin.describeTransactions([TXN_ID]);
      return d?.state === "COMPLETE_COMMIT" ? d : undefined;
    });
    expect(described.error).toBeUndefined();
    const listed = await admin.listTransactions();
    expect(listed.transactions.find((t) => t.transactionalId === TXN_ID)?.partition).toBe(
      partitionFor(TXN_ID, TXN_PARTITIONS),
    );

    const reader = new Consumer({ bootstrap, isolationLevel: "read_committed" });
    try {
      reader.assign([{ topic: "out", partition: 0 }]);
      await reader.seekToBeginning();
      const got: ConsumerRecord[] = [];
      const deadline = Date.now() + STEP_TIMEOUT_MS;
      while (got.length === 0 && Date.now() < deadline)
        got.push(...(await reader.poll({ timeoutMs: 500 })));
      expect(got.map((r) => r.value?.toString())).toEqual(["committed-1"]);
    } finally {
      await reader.close();
    }
    // The group's offsets were committed by the coordinator of its partition of 3.
    const group = new Consumer({ bootstrap, groupId: GROUP });
    try {
      group.assign([{ topic: "in", partition: 0 }]);
      expect(await step("committed", group.committed([{ topic: "in", partition: 0 }]))).toEqual([
        { topic: "in", partition: 0, offset: 11n },
      ]);
    } finally {
      await group.close();
    }
  }, 180_000);
});
