// The bound on idempotent producers' state per partition (BROKER_LIMITS.producersPerPartitionMax):
// past it, a new producer takes the place of the longest-idle one without an open transaction
// (idle producerEvictableIdleMs or more); with none, its batch is refused with a clear error and
// nothing is appended. Replicated apply of a real partition state machine over segment files.
import { describe, expect, it } from "vitest";
import { partitionForTest } from "./testing/partition-for-test.js";
import { encodeEntry, type EntryHeader, type PartitionEntry } from "./partition-entry.js";
import type { AppendResult } from "./partition-state-machine.js";
import { BROKER_LIMITS } from "./broker-limits.js";

const IDLE = BROKER_LIMITS.producerEvictableIdleMs;

function harness(producersMax: number) {
  const sm = partitionForTest("bounded", 0, undefined, 1024 * 1024, producersMax);
  sm.appliedLog.openAt(0);
  let index = 0;
  let header: EntryHeader = {
    appendTimeMs: 1_000_000,
    retentionMs: -1,
    retentionBytes: -1,
    producerExpiryMs: 24 * 3_600_000,
  };
  const apply = (e: PartitionEntry): AppendResult =>
    sm.apply({ index: ++index, term: 1, data: encodeEntry(e) });
  const seqs = new Map<bigint, number>();
  return {
    sm,
    at(ms: number) {
      header = { ...header, appendTimeMs: 1_000_000 + ms };
    },
    batch(pid: bigint, txn = false): AppendResult {
      const seq = seqs.get(pid) ?? 0;
      const r = apply({
        kind: "batch",
        header,
        producerId: pid,
        producerEpoch: 0,
        baseSequence: seq,
        isTransactional: txn,
        records: [{ key: null, value: Buffer.from(`p${pid}`), headers: [], timestampMs: 0 }],
      });
      if (r.error === "NONE") seqs.set(pid, seq + 1);
      return r;
    },
  };
}

describe("producer state per partition is bounded", () => {
  it("refuses a new producer when full of active ones; an idle one gives up its place", async () => {
    const h = harness(3);
    for (const pid of [1n, 2n, 3n]) expect(h.batch(pid).error).toBe("NONE");
    const refused = h.batch(4n);
    expect(refused.error).toBe("THROTTLING_QUOTA_EXCEEDED");
    expect(refused.message).toMatch(/keeps the state of 3 producers, the most it holds/);
    // Nothing was appended for the refused batch: the next offset is still 3.
    expect(h.batch(1n).baseOffset).toBe(3n);

    // 2 and 3 stay active; 1 was last active at 0 ms.
    h.at(IDLE / 2);
    expect(h.batch(2n).error).toBe("NONE");
    expect(h.batch(3n).error).toBe("NONE");
    h.at(IDLE + 1);
    expect(h.batch(4n).error).toBe("NONE"); // takes producer 1's place (idle past the floor)
    expect(h.sm.producer(1n)).toBeUndefined();
    expect(h.batch(5n).error).toBe("THROTTLING_QUOTA_EXCEEDED"); // 2, 3, 4 not idle enough
    await h.sm.close();
  });

  it("never evicts a producer with an open transaction", async () => {
    const h = harness(2);
    expect(h.batch(1n, true).error).toBe("NONE"); // open transaction, then idle for long
    expect(h.batch(2n).error).toBe("NONE");
    h.at(10 * IDLE);
    expect(h.batch(3n).error).toBe("NONE"); // takes idle producer 2's place
    expect(h.sm.producer(1n)).toBeDefined();
    expect(h.sm.producer(2n)).toBeUndefined();
    expect(h.batch(4n).error).toBe("THROTTLING_QUOTA_EXCEEDED");
    await h.sm.close();
  });
});
