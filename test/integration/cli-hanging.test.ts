// `tern txn find-hanging` and `tern txn abort --start-offset` against a real cluster (build
// first: `npx tsc -p tsconfig.json`). The brokers run with TERN_TXN_PARTITION_VERIFICATION=false
// (Kafka's transaction.partition.verification.enable=false), so a transactional batch for a
// partition never added to its transaction is appended: the classic cause of a hanging
// transaction, one the coordinator does not know about. find-hanging must list that one and
// none of the transactions the coordinator still tracks on their partitions, however long
// they have been open; abort --start-offset must end exactly the producer whose transaction
// starts there, and refuse a transaction its coordinator still tracks.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { Admin, Producer } from "../../libs/client/index.js";
import { until } from "../../libs/common/poll.js";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";
import { startCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import { BrokerClients } from "./helpers/broker-clients.js";
import { okCli, ternCli } from "./helpers/tern-cli.js";

const TOPIC = "hang";
let cluster: ProcessCluster;
let dataDir: string;
let bootstrap: string;
let admin: Admin;
const brokers = new BrokerClients();

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "tern-cli-hanging-"));
  cluster = await startCluster({
    dataDir,
    basePort: await freeBasePort(),
    env: { TERN_LOG_LEVEL: "warn", TERN_TXN_PARTITION_VERIFICATION: "false" },
    healthTimeoutMs: 120_000,
  });
  bootstrap = cluster.addresses("controller")[0]!;
  admin = new Admin({ bootstrap });
}, 180_000);

afterAll(async () => {
  brokers.closeAll();
  await admin?.close();
  await cluster?.stop({ termTimeoutMs: 5_000 });
  rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

/** A transactional batch sent straight to the partition's leader: no AddPartitionsToTxn before it. */
async function rawTransactionalBatch(
  partition: number,
  transactionalId: string,
  producerId: bigint,
  producerEpoch: number,
  value: string,
): Promise<bigint> {
  const p = await until(`raw batch on ${TOPIC}-${partition}`, 60_000, async () => {
    const m = await admin.metadataView();
    const leader = m.topics
      .find((t) => t.name === TOPIC)
      ?.partitions.find((x) => x.partition === partition)?.leader;
    const node = m.nodes.find((n) => n.role === "broker" && n.nodeId === leader);
    if (!node) return undefined;
    const batch = {
      producerId: String(producerId),
      producerEpoch,
      baseSequence: 0,
      isTransactional: true,
      records: [{ value: Buffer.from(value) }],
    };
    const r = await brokers
      .get(node.address)
      .produce({ transactionalId, acks: -1, partitions: [{ topic: TOPIC, partition, batch }] });
    const out = r.partitions[0];
    return ["NOT_LEADER_OR_FOLLOWER", "REQUEST_TIMED_OUT", "LEADER_NOT_AVAILABLE"].includes(
      out.errorCode,
    )
      ? undefined
      : out;
  });
  expect(p.errorCode).toBe("NONE");
  return BigInt(p.baseOffset);
}

async function findHanging(): Promise<any[]> {
  return JSON.parse(
    (
      await okCli(bootstrap, [
        "--json",
        "txn",
        "find-hanging",
        "--topic",
        TOPIC,
        "--max-transaction-timeout-ms",
        "1",
      ])
    ).stdout,
  );
}

async function openOn(
  partition: number,
): Promise<Array<{ producerId: string; currentTxnStartOffset: string }>> {
  const r = JSON.parse(
    (
      await okCli(bootstrap, [
        "--json",
        "txn",
        "describe-producers",
        "--topic",
        TOPIC,
        "--partition",
        String(partition),
      ])
    ).stdout,
  );
  return r[0].producers.filter((p: any) => p.currentTxnStartOffset !== "-1");
}

it("find-hanging lists only what no coordinator tracks; abort --start-offset aborts the producer whose transaction starts there", async () => {
  await okCli(bootstrap, [
    "topics",
    "create",
    TOPIC,
    "--partitions",
    "2",
    "--replication-factor",
    "3",
  ]);
  await admin.waitForLeaders([TOPIC]);

  // A: an ongoing transaction on partition 0 (tracked by its coordinator), plus a batch of the
  // same producer on partition 1 that the coordinator never heard of (hanging).
  const a = new Producer({ bootstrap, transactionalId: "hang-a" });
  await a.initTransactions();
  a.beginTransaction();
  const a0 = await a.send({ topic: TOPIC, partition: 0, value: "a-committed" });
  const aId = a.identity;
  const hangStart = await rawTransactionalBatch(
    1,
    "hang-a",
    aId.producerId,
    aId.producerEpoch,
    "a-hanging",
  );
  // B: an ongoing transaction on partition 1 that starts after A's hanging batch (tracked).
  const b = new Producer({ bootstrap, transactionalId: "hang-b" });
  await b.initTransactions();
  b.beginTransaction();
  const b1 = await b.send({ topic: TOPIC, partition: 1, value: "b-committed" });
  expect(b1.offset).toBeGreaterThan(hangStart);
  expect((await openOn(1)).map((p) => p.currentTxnStartOffset).sort()).toEqual(
    [String(hangStart), String(b1.offset)].sort(),
  );

  // Every one of the three is open longer than 1 ms; only A's batch on partition 1 is hanging.
  const hanging = await findHanging();
  expect(hanging.map((h) => [h.partition, h.producerId, h.startOffset])).toEqual([
    [1, String(aId.producerId), String(hangStart)],
  ]);
  expect(hanging[0]).toMatchObject({ transactionalId: "hang-a", coordinatorState: "ONGOING" });
  expect(hanging[0].reason).toContain(`does not include ${TOPIC}-1`);
  expect(
    (
      await okCli(bootstrap, [
        "txn",
        "find-hanging",
        "--topic",
        TOPIC,
        "--max-transaction-timeout-ms",
        "1",
      ])
    ).stdout,
  ).toMatch(/TRANSACTIONAL_ID/);

  // A partition abort of a transaction the coordinator tracks is refused (exit 1, says why).
  const refused = await ternCli(bootstrap, [
    "txn",
    "abort",
    "--topic",
    TOPIC,
    "--partition",
    "1",
    "--start-offset",
    String(b1.offset),
  ]);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain("refusing to abort");
  expect(refused.stderr).toContain("hang-b is ONGOING");
  const refused0 = await ternCli(bootstrap, [
    "txn",
    "abort",
    "--topic",
    TOPIC,
    "--partition",
    "0",
    "--start-offset",
    String(a0.offset),
  ]);
  expect(refused0.code).toBe(1);
  expect(refused0.stderr).toContain("hang-a is ONGOING");

  // A commits: its coordinator writes a marker to partition 0 only; partition 1 stays open, still hanging.
  await a.commitTransaction();
  await until("A's commit marker on partition 0", 60_000, async () =>
    (await openOn(0)).length === 0 ? true : undefined,
  );
  const afterCommit = await findHanging();
  expect(afterCommit.map((h) => [h.partition, h.producerId, h.startOffset])).toEqual([
    [1, String(aId.producerId), String(hangStart)],
  ]);
  expect(["PREPARE_COMMIT", "COMPLETE_COMMIT"]).toContain(afterCommit[0].coordinatorState);

  // Nothing starts at that offset: a clear error, naming what is open there.
  const none = await ternCli(bootstrap, [
    "txn",
    "abort",
    "--topic",
    TOPIC,
    "--partition",
    "1",
    "--start-offset",
    "999",
  ]);
  expect(none.code).toBe(1);
  expect(none.stderr).toContain(`no open transaction starts at offset 999 on ${TOPIC}-1`);
  expect(none.stderr).toContain(`${hangStart} (producer ${aId.producerId})`);
  // Usage: --start-offset needs --partition, and excludes --producer-id.
  expect(
    (await ternCli(bootstrap, ["txn", "abort", "--topic", TOPIC, "--start-offset", "0"])).code,
  ).toBe(2);
  expect(
    (
      await ternCli(bootstrap, [
        "txn",
        "abort",
        "--topic",
        TOPIC,
        "--partition",
        "1",
        "--start-offset",
        "0",
        "--producer-id",
        "1",
        "--producer-epoch",
        "0",
      ])
    ).code,
  ).toBe(2);

  // abort --start-offset: the producer is looked up from the partition's producer state.
  const aborted = JSON.parse(
    (
      await okCli(bootstrap, [
        "--json",
        "txn",
        "abort",
        "--topic",
        TOPIC,
        "--partition",
        "1",
        "--start-offset",
        String(hangStart),
      ])
    ).stdout,
  );
  expect(aborted).toMatchObject({
    topic: TOPIC,
    partition: 1,
    producerId: String(aId.producerId),
    producerEpoch: aId.producerEpoch,
    aborted: true,
  });
  // Only A's transaction ended: B's is still open on partition 1, and nothing is hanging.
  expect((await openOn(1)).map((p) => [p.producerId, p.currentTxnStartOffset])).toEqual([
    [String(b.identity.producerId), String(b1.offset)],
  ]);
  expect(await findHanging()).toEqual([]);

  await b.commitTransaction();
  await until("B's commit marker on partition 1", 60_000, async () =>
    (await openOn(1)).length === 0 ? true : undefined,
  );
  const read = async (partition: number): Promise<string[]> =>
    (
      await okCli(bootstrap, [
        "consume",
        TOPIC,
        "--from-beginning",
        "--isolation",
        "read_committed",
        "--partition",
        String(partition),
      ])
    ).stdout
      .trim()
      .split("\n");
  expect(await read(0)).toEqual(["a-committed"]);
  expect(await read(1)).toEqual(["b-committed"]);
  await a.close();
  await b.close();
}, 240_000);
