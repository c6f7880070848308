// The KIP-890 verification cache (GrpcTxnVerifier, verification-cache.ts) ends with its
// transaction: a COMMIT/ABORT marker applied to a partition makes the broker ask the
// coordinator again. Real single-node raft host, the real ReplicaManager and group coordinator
// wiring, and a scripted TransactionCoordinator over gRPC (testing/single-broker-txn.ts).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isTernError } from "../../libs/common/errors.js";
import { CONSUMER_OFFSETS_TOPIC } from "../../libs/metadata/types.js";
import { startSingleBrokerTxn, type SingleBrokerTxn } from "./testing/single-broker-txn.js";

const GROUP = "copier";
let b: SingleBrokerTxn;

beforeAll(async () => {
  // Producer state expires after 1 s of replicated time: the late duplicate finds none.
  b = await startSingleBrokerTxn({
    group: GROUP,
    topics: { v: { "producer.id.expiration.ms": "1000" } },
  });
}, 30_000);

afterAll(async () => {
  await b?.close();
});

describe("add-partition verifications end with their transaction", () => {
  it("asks the coordinator again for a late duplicate first batch after the marker and the producer's expiry", async () => {
    const { produce, markers, clock, ongoing, asked } = b;
    const first = {
      producerId: "21",
      producerEpoch: 0,
      baseSequence: 0,
      isTransactional: true,
      records: [{ value: Buffer.from("t"), timestampMs: String(clock.nowMs()) }],
    };
    ongoing.set("21", new Set(["v/0"]));
    const ok = (await produce({
      transactionalId: "tx",
      partitions: [{ topic: "v", partition: 0, batch: first }],
    })) as any;
    expect(ok.partitions[0].errorCode).toBe("NONE");
    expect(asked).toEqual(["21:0:v/0"]);
    const m = (await markers({
      markers: [
        {
          producerId: "21",
          producerEpoch: 0,
          controlType: "COMMIT",
          coordinatorEpoch: 1,
          transactionalId: "tx",
          partitions: [{ topic: "v", partition: 0 }],
        },
      ],
    })) as any;
    expect(m.results[0].partitions[0].errorCode).toBe("NONE");
    ongoing.delete("21");
    // Two hours later another producer's append moves the replicated clock: producer 21 expires.
    clock.advance(2 * 3600 * 1000);
    const other = (await produce({
      partitions: [
        {
          topic: "v",
          partition: 0,
          batch: { producerId: "-1", records: [{ value: Buffer.from("x") }] },
        },
      ],
    })) as any;
    expect(other.partitions[0].errorCode).toBe("NONE");
    expect(b.replicas.local("v", 0)!.stateMachine.producer(21n)).toBeUndefined();

    // The very late duplicate of the first batch: the transaction is over, so the coordinator refuses.
    const late = (await produce({
      transactionalId: "tx",
      partitions: [{ topic: "v", partition: 0, batch: first }],
    })) as any;
    expect(late.partitions[0].errorCode).toBe("INVALID_TXN_STATE");
    // Asked at the remembered address, then again once found afresh (a remembered address may
    // be a deposed coordinator's): the same coordinator refuses both times.
    expect(asked).toEqual(["21:0:v/0", "21:0:v/0", "21:0:v/0"]);
    const { hw, lso } = await b.endOffsets("v", 0);
    expect(lso).toBe(hw); // no hanging transaction pins the LSO
  });

  it("asks the coordinator again for a late TxnOffsetCommit after the offsets partition applied the marker", async () => {
    const commit = {
      transactionalId: "tx2",
      groupId: GROUP,
      producerId: "31",
      producerEpoch: 0,
      generationId: -1,
      memberId: "",
      partitions: [{ topic: "v", partition: 0, offset: "5", leaderEpoch: -1 }],
    };
    const { groups, ongoing, asked } = b;
    const where = `${CONSUMER_OFFSETS_TOPIC}/${b.groupPartition}`;
    ongoing.set("31", new Set([where]));
    const before = asked.length;
    const ok = await groups.txnOffsetCommit(commit as any);
    expect(ok.partitions[0]!.errorCode).toBe("NONE");
    const marker = {
      epochBumped: false,
      producerId: 31n,
      producerEpoch: 0,
      controlType: "COMMIT" as const,
      coordinatorEpoch: 1,
      transactionalId: "tx2",
    };
    expect(await groups.offsetsMarkerWriter(b.groupPartition, marker)).toEqual({
      error: "NONE",
      message: "",
    });
    ongoing.delete("31");

    const late = await groups.txnOffsetCommit(commit as any).then(
      () => "NONE",
      (e: unknown) => (isTernError(e) ? e.errorName : String(e)),
    );
    expect(late).toBe("INVALID_TXN_STATE");
    // The late one is asked twice: at the remembered address, then once found afresh.
    expect(asked.slice(before)).toEqual([`31:0:${where}`, `31:0:${where}`, `31:0:${where}`]);
    // Nothing pending: a require_stable fetch is answered (not UNSTABLE_OFFSET_COMMIT for ever).
    const fetched = await groups.offsetFetch({ groupId: GROUP, requireStable: true } as any);
    expect(fetched.partitions.map((p: any) => [p.offset, p.errorCode])).toEqual([["5", "NONE"]]);
  });
});
