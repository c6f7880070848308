// The replicated verification guard (producer-state.ts checkTxnGuard, KIP-890 part 1) and
// late bumped markers (checkMarker): windows in which a partition leader's decision to admit a
// transactional batch or TxnOffsetCommit goes stale before apply, and a late copy of a V2 marker
// reaches the next transaction. Real single-node raft host and handlers
// (testing/single-broker-txn.ts); the coordinator's answers are scripted so a marker can
// overtake them.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isTernError } from "../../libs/common/errors.js";
import { CONSUMER_OFFSETS_TOPIC } from "../../libs/metadata/types.js";
import { startSingleBrokerTxn, type SingleBrokerTxn } from "./testing/single-broker-txn.js";

const GROUP = "guarded";
let b: SingleBrokerTxn;

beforeAll(async () => {
  b = await startSingleBrokerTxn({ group: GROUP, topics: { g: {}, d: {} } });
}, 30_000);

afterAll(async () => {
  await b?.close();
});

function batch(pid: number, epoch: number, seq: number, value: string) {
  return {
    producerId: String(pid),
    producerEpoch: epoch,
    baseSequence: seq,
    isTransactional: true,
    records: [{ value: Buffer.from(value), timestampMs: String(b.clock.nowMs()) }],
  };
}

function produce(topic: string, txnId: string, data: ReturnType<typeof batch>): Promise<any> {
  return b.produce({
    transactionalId: txnId,
    acks: -1,
    partitions: [{ topic, partition: 0, batch: data }],
  });
}

function marker(
  topic: string,
  pid: number,
  epoch: number,
  control: "COMMIT" | "ABORT",
  epochBumped: boolean,
): Promise<any> {
  return b.markers({
    markers: [
      {
        producerId: String(pid),
        producerEpoch: epoch,
        controlType: control,
        coordinatorEpoch: 1,
        transactionalId: `tx-${pid}`,
        epochBumped,
        partitions: [{ topic, partition: 0 }],
      },
    ],
  });
}

const codeOf = (response: any): string => response.partitions[0].errorCode;
const markerCodeOf = (response: any): string => response.results[0].partitions[0].errorCode;

async function expectNoHangingTransaction(topic: string): Promise<void> {
  const { hw, lso } = await b.endOffsets(topic, 0);
  expect(lso).toBe(hw);
}

describe("a late transactional batch cannot open a transaction its coordinator ended", () => {
  it("V1: the leader admits it because the transaction looks open, the ABORT marker applies first", async () => {
    const pid = 101;
    b.ongoing.set(String(pid), new Set(["g/0"]));
    expect(codeOf(await produce("g", "tx-101", batch(pid, 0, 0, "a")))).toBe("NONE");
    b.ongoing.delete(String(pid));
    // The ABORT marker is proposed before the next batch of the same transaction, which the
    // leader admits without asking (its applied state still shows the transaction open).
    const aborted = marker("g", pid, 0, "ABORT", false);
    const late = produce("g", "tx-101", batch(pid, 0, 1, "b"));
    expect(markerCodeOf(await aborted)).toBe("NONE");
    expect(codeOf(await late)).toBe("INVALID_TXN_STATE");
    expect(b.replicas.local("g", 0)!.stateMachine.producer(BigInt(pid))?.openTransaction).toBe(
      null,
    );
    await expectNoHangingTransaction("g");

    // The producer goes on with the next transaction (same epoch, V1): admitted after asking.
    b.ongoing.set(String(pid), new Set(["g/0"]));
    expect(codeOf(await produce("g", "tx-101", batch(pid, 0, 1, "c")))).toBe("NONE");
    expect(markerCodeOf(await marker("g", pid, 0, "COMMIT", false))).toBe("NONE");
    b.ongoing.delete(String(pid));
    await expectNoHangingTransaction("g");
  });

  it("V1: the coordinator's yes is overtaken by the ABORT marker", async () => {
    const pid = 102;
    b.ongoing.set(String(pid), new Set(["g/0"]));
    const held = b.holdVerifications();
    const first = produce("g", "tx-102", batch(pid, 0, 0, "a"));
    await held.asked;
    // The coordinator answered "ongoing" and then aborted: its marker lands before the answer.
    b.ongoing.delete(String(pid));
    expect(markerCodeOf(await marker("g", pid, 0, "ABORT", false))).toBe("NONE");
    held.release();
    expect(codeOf(await first)).toBe("INVALID_TXN_STATE");
    await expectNoHangingTransaction("g");
  });

  it("V2: the same race with bumped epochs is refused too", async () => {
    const pid = 103;
    b.ongoing.set(String(pid), new Set(["g/0"]));
    expect(codeOf(await produce("g", "tx-103", batch(pid, 0, 0, "a")))).toBe("NONE");
    expect(markerCodeOf(await marker("g", pid, 1, "COMMIT", true))).toBe("NONE");
    // Transaction N+1 at epoch 1: its first batch is verified, and a timeout abort (epoch 2)
    // lands while the answer is out.
    const held = b.holdVerifications();
    const first = produce("g", "tx-103", batch(pid, 1, 0, "b"));
    await held.asked;
    b.ongoing.delete(String(pid));
    expect(markerCodeOf(await marker("g", pid, 2, "ABORT", true))).toBe("NONE");
    held.release();
    expect(codeOf(await first)).not.toBe("NONE");
    await expectNoHangingTransaction("g");
  });
});

describe("the guard does not refuse the next transaction", () => {
  it("V2: the previous transaction's marker (one epoch below the batch's data) applies while the add is out", async () => {
    const pid = 104;
    b.ongoing.set(String(pid), new Set(["g/0"]));
    expect(codeOf(await produce("g", "tx-104", batch(pid, 0, 0, "n")))).toBe("NONE");
    // N+1's first batch (epoch 1) is admitted while N (epoch 0) still looks open here; the
    // coordinator answers its add once N's markers (bumped to epoch 1) are written.
    const held = b.holdVerifications();
    const first = produce("g", "tx-104", batch(pid, 1, 0, "n+1"));
    await held.asked;
    expect(markerCodeOf(await marker("g", pid, 1, "COMMIT", true))).toBe("NONE");
    held.release();
    expect(codeOf(await first)).toBe("NONE");
    expect(markerCodeOf(await marker("g", pid, 2, "COMMIT", true))).toBe("NONE");
    b.ongoing.delete(String(pid));
    await expectNoHangingTransaction("g");
  });
});

describe("a late TxnOffsetCommit cannot leave offsets pending for a transaction that ended", () => {
  const commit = (pid: number, epoch: number, offset: string) => ({
    transactionalId: `tx-${pid}`,
    groupId: GROUP,
    producerId: String(pid),
    producerEpoch: epoch,
    generationId: -1,
    memberId: "",
    partitions: [{ topic: "g", partition: 0, offset, leaderEpoch: -1 }],
  });
  const offsetsMarker = (
    pid: number,
    epoch: number,
    control: "COMMIT" | "ABORT",
    bumped: boolean,
  ) =>
    b.groups.offsetsMarkerWriter(b.groupPartition, {
      producerId: BigInt(pid),
      producerEpoch: epoch,
      controlType: control,
      coordinatorEpoch: 1,
      transactionalId: `tx-${pid}`,
      epochBumped: bumped,
    });
  const errorOf = (p: Promise<unknown>) =>
    p.then(
      () => "NONE",
      (e: unknown) => (isTernError(e) ? e.errorName : String(e)),
    );
  const where = () => `${CONSUMER_OFFSETS_TOPIC}/${b.groupPartition}`;

  for (const [version, epoch, markerEpoch, bumped] of [
    ["V1", 0, 0, false],
    ["V2", 0, 1, true],
  ] as const) {
    it(`${version}: the coordinator's yes is overtaken by the ABORT marker`, async () => {
      const pid = version === "V1" ? 201 : 202;
      b.ongoing.set(String(pid), new Set([where()]));
      const held = b.holdVerifications();
      const late = b.groups.txnOffsetCommit(commit(pid, epoch, "7") as any);
      const outcome = errorOf(late);
      await held.asked;
      b.ongoing.delete(String(pid));
      expect(await offsetsMarker(pid, markerEpoch, "ABORT", bumped)).toEqual({
        error: "NONE",
        message: "",
      });
      held.release();
      const answer = await late.catch(() => undefined);
      const refused = answer === undefined ? await outcome : answer.partitions[0]!.errorCode;
      expect(refused).not.toBe("NONE");
      // Nothing pending for the producer: a require_stable fetch answers.
      expect(
        b.groups
          .stateMachineFor(b.groupPartition)
          .pendingTransactions()
          .some((t) => t.producerId === BigInt(pid)),
      ).toBe(false);
    });
  }
});

describe("a late copy of a bumped (V2) marker does not end the next transaction", () => {
  it("is refused while the next transaction is open, and a no-op when nothing is", async () => {
    const pid = 301;
    b.ongoing.set(String(pid), new Set(["d/0"]));
    expect(codeOf(await produce("d", "tx-301", batch(pid, 0, 0, "n")))).toBe("NONE");
    expect(markerCodeOf(await marker("d", pid, 1, "ABORT", true))).toBe("NONE");
    // With nothing open, the copy is acknowledged and changes nothing.
    expect(markerCodeOf(await marker("d", pid, 1, "ABORT", true))).toBe("NONE");
    expect(codeOf(await produce("d", "tx-301", batch(pid, 1, 0, "n+1")))).toBe("NONE");
    const open = b.replicas.local("d", 0)!.stateMachine.producer(BigInt(pid))?.openTransaction;
    expect(open).not.toBe(null);
    // The copy of N's ABORT (epoch 1) must not abort N+1, which epoch 1 opened.
    expect(markerCodeOf(await marker("d", pid, 1, "ABORT", true))).toBe("INVALID_PRODUCER_EPOCH");
    expect(b.replicas.local("d", 0)!.stateMachine.producer(BigInt(pid))?.openTransaction).toEqual(
      open,
    );
    // N+1's own marker (epoch 2) commits it.
    expect(markerCodeOf(await marker("d", pid, 2, "COMMIT", true))).toBe("NONE");
    b.ongoing.delete(String(pid));
    await expectNoHangingTransaction("d");
  });

  it("does not resolve the next transaction's pending offsets either", async () => {
    const pid = 302;
    const sm = b.groups.stateMachineFor(b.groupPartition);
    const where = `${CONSUMER_OFFSETS_TOPIC}/${b.groupPartition}`;
    const write = (epoch: number, control: "COMMIT" | "ABORT") =>
      b.groups.offsetsMarkerWriter(b.groupPartition, {
        producerId: BigInt(pid),
        producerEpoch: epoch,
        controlType: control,
        coordinatorEpoch: 1,
        transactionalId: "tx-302",
        epochBumped: true,
      });
    const commit = (epoch: number, offset: string) =>
      b.groups.txnOffsetCommit({
        transactionalId: "tx-302",
        groupId: GROUP,
        producerId: String(pid),
        producerEpoch: epoch,
        generationId: -1,
        memberId: "",
        partitions: [{ topic: "d", partition: 0, offset, leaderEpoch: -1 }],
      } as any);
    b.ongoing.set(String(pid), new Set([where]));
    await commit(0, "3");
    expect((await write(1, "COMMIT")).error).toBe("NONE");
    expect((await write(1, "COMMIT")).error).toBe("NONE"); // nothing pending: a no-op
    await commit(1, "9");
    expect((await write(1, "ABORT")).error).toBe("INVALID_PRODUCER_EPOCH");
    expect(sm.pendingTransactions().find((t) => t.producerId === BigInt(pid))?.offsetCount).toBe(1);
    expect((await write(2, "COMMIT")).error).toBe("NONE");
    b.ongoing.delete(String(pid));
    const fetched = await b.groups.offsetFetch({
      groupId: GROUP,
      requireStable: true,
      partitions: [{ topic: "d", partition: 0 }],
    } as any);
    expect(fetched.partitions.map((p: any) => [p.offset, p.errorCode])).toEqual([["9", "NONE"]]);
  });
});
