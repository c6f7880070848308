import { describe, expect, it } from "vitest";
import { decodeEntry, encodeEntry, type TxnLogEntry } from "./transaction-log.js";
import {
  addPartitions,
  completeEnd,
  initialRecord,
  prepareEnd,
  type TxnRecord,
} from "./transaction-metadata.js";
import { TransactionStateMachine } from "./transaction-state-machine.js";

const tp = (topic: string, partition: number) => ({ topic, partition });

function feed(sm: TransactionStateMachine, entries: TxnLogEntry[], startIndex = 1) {
  return entries.map((e, i) => sm.apply({ index: startIndex + i, term: 1, data: encodeEntry(e) }));
}

describe("transaction log codec", () => {
  it("round-trips every entry kind with 64-bit ids", () => {
    const record: TxnRecord = {
      ...addPartitions(initialRecord("tx-é", 9007199254740993n, 5000, 1), [tp("a", 3)], 2),
      lastProducerId: 12n,
    };
    for (const e of [
      { kind: "txn", record },
      { kind: "noop", nowMs: 5 },
      { kind: "expire", nowMs: 6, expirationMs: 7, transactionalIds: ["a", "b"] },
    ] as TxnLogEntry[]) {
      expect(decodeEntry(encodeEntry(e))).toEqual(e);
    }
  });

  it("refuses malformed entries", () => {
    expect(() => decodeEntry(new Uint8Array([9, 1, 2]))).toThrow(/version/);
    const bad = encodeEntry({ kind: "noop", nowMs: 1 });
    expect(() => decodeEntry(bad.subarray(0, bad.length - 1))).toThrow();
  });
});

describe("TransactionStateMachine", () => {
  it("applies records as the latest state per id and refuses illegal transitions identically", () => {
    const sm = new TransactionStateMachine(3);
    const r0 = initialRecord("t", 1n, 1000, 10);
    const r1 = addPartitions(r0, [tp("a", 0)], 20);
    const results = feed(sm, [
      { kind: "txn", record: r0 },
      { kind: "txn", record: r1 },
      { kind: "txn", record: completeEnd(prepareEnd(r1, true, "client", 30, undefined), 40) },
      { kind: "noop", nowMs: 50 },
    ]);
    expect(results[0]).toMatchObject({ kind: "txn", ok: true });
    expect(results[1]).toMatchObject({ kind: "txn", ok: true });
    expect(results[2]).toMatchObject({ kind: "txn", ok: false });
    expect(results[3]).toEqual({ kind: "noop" });
    expect(sm.get("t")).toEqual(r1);
    expect(sm.appliedIndex()).toBe(4);
  });

  it("refuses an epoch going backwards", () => {
    const sm = new TransactionStateMachine(0);
    const r0 = { ...initialRecord("t", 1n, 1000, 10), producerEpoch: 5 };
    const [, res] = feed(sm, [
      { kind: "txn", record: r0 },
      { kind: "txn", record: { ...r0, producerEpoch: 4 } },
    ]);
    expect(res).toMatchObject({ ok: false });
  });

  it("expires idle ids by the time carried in the entry, never open ones", () => {
    const sm = new TransactionStateMachine(0);
    feed(sm, [
      { kind: "txn", record: initialRecord("idle", 1n, 1000, 100) },
      { kind: "txn", record: initialRecord("open", 2n, 1000, 100) },
      {
        kind: "txn",
        record: addPartitions(initialRecord("open", 2n, 1000, 100), [tp("a", 0)], 100),
      },
      { kind: "expire", nowMs: 150, expirationMs: 100, transactionalIds: ["idle", "open"] },
    ]);
    expect(sm.size()).toBe(2);
    const [res] = feed(
      sm,
      [
        {
          kind: "expire",
          nowMs: 200,
          expirationMs: 100,
          transactionalIds: ["idle", "open", "missing"],
        },
      ],
      5,
    );
    expect(res).toEqual({ kind: "expire", removed: 1 });
    expect(sm.get("idle")).toBeUndefined();
    expect(sm.get("open")?.state).toBe("Ongoing");
  });

  it("snapshot keeps only the latest record per id and restores byte-identically", () => {
    const a = new TransactionStateMachine(7);
    const r = initialRecord("x", 1n, 1000, 1);
    feed(a, [
      { kind: "txn", record: initialRecord("y", 2n, 1000, 1) },
      { kind: "txn", record: r },
      { kind: "txn", record: addPartitions(r, [tp("t", 1)], 2) },
    ]);
    const snap = a.snapshot();
    const b = new TransactionStateMachine(7);
    b.restore(snap, 3);
    expect(b.size()).toBe(2);
    expect(b.get("x")?.state).toBe("Ongoing");
    expect(b.snapshot()).toEqual(snap);
    expect(b.appliedIndex()).toBe(3);
    expect(() => new TransactionStateMachine(8).restore(snap, 3)).toThrow(/partition/);
  });

  it("replicas fed the same entries reach the same state (determinism)", () => {
    const entries: TxnLogEntry[] = [];
    let rec = initialRecord("d", 5n, 1000, 0);
    entries.push({ kind: "txn", record: rec });
    for (let i = 0; i < 20; i++) {
      rec = addPartitions(rec, [tp("t", i % 4)], i * 10 + 1);
      entries.push({ kind: "txn", record: rec });
      if (i % 3 === 2) {
        rec = prepareEnd(rec, i % 2 === 0, "client", i * 10 + 2, undefined);
        entries.push({ kind: "txn", record: rec });
        rec = completeEnd(rec, i * 10 + 3);
        entries.push({ kind: "txn", record: rec });
      }
    }
    const a = new TransactionStateMachine(1);
    const b = new TransactionStateMachine(1);
    const ra = feed(a, entries);
    const rb = feed(b, entries);
    expect(ra.every((x) => x.kind === "txn" && x.ok)).toBe(true);
    expect(ra).toEqual(rb);
    expect(a.snapshot()).toEqual(b.snapshot());
  });
});
