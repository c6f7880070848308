// The chaos hold failpoint (proposal-holds.ts) on a real single-node broker: a process whose
// failpoints list it holds a transactional V1 batch's proposal for the hold, then appends it;
// a process that does not list it never builds the holds and proposes at once.
import { afterEach, describe, expect, it } from "vitest";
import { Failpoints } from "../../libs/common/failpoints.js";
import { HOLD_TXN_BATCH_FAILPOINT } from "./proposal-holds.js";
import { startSingleBrokerTxn, type SingleBrokerTxn } from "./testing/single-broker-txn.js";

const HOLD_MS = 1_500;
const brokers: SingleBrokerTxn[] = [];
afterEach(async () => {
  for (const b of brokers.splice(0)) await b.close();
});

async function produceOneTransactional(b: SingleBrokerTxn): Promise<{ code: string; ms: number }> {
  const pid = 7;
  b.ongoing.set(String(pid), new Set(["t/0"]));
  const started = Date.now();
  const response = await b.produce({
    transactionalId: "tx-7",
    acks: -1,
    partitions: [
      {
        topic: "t",
        partition: 0,
        batch: {
          producerId: String(pid),
          producerEpoch: 0,
          baseSequence: 0,
          isTransactional: true,
          records: [{ value: Buffer.from("v"), timestampMs: String(b.clock.nowMs()) }],
        },
      },
    ],
  });
  return { code: response.partitions[0].errorCode as string, ms: Date.now() - started };
}

describe("proposal holds", () => {
  it("hold a listed process's transactional batch for the hold, then append it", async () => {
    const failpoints = new Failpoints(new Map([[HOLD_TXN_BATCH_FAILPOINT, 1]]), undefined, HOLD_MS);
    const b = await startSingleBrokerTxn({ group: "g", topics: { t: {} }, failpoints });
    brokers.push(b);
    const { code, ms } = await produceOneTransactional(b);
    expect(code).toBe("NONE");
    expect(ms).toBeGreaterThanOrEqual(HOLD_MS - 5);
    const { hw } = await b.endOffsets("t", 0);
    expect(hw).toBe("1");
  }, 30_000);

  it("are not there when the failpoint is not listed: the batch is proposed at once", async () => {
    const b = await startSingleBrokerTxn({ group: "g", topics: { t: {} } });
    brokers.push(b);
    const { code, ms } = await produceOneTransactional(b);
    expect(code).toBe("NONE");
    expect(ms).toBeLessThan(HOLD_MS);
  }, 30_000);
});
