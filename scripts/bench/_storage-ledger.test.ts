import { describe, expect, it } from "vitest";
import { RecordLedger } from "./_storage-ledger.js";

describe("RecordLedger", () => {
  it("finds an acknowledged record missing from the read-back by its id", () => {
    const l = new RecordLedger();
    const records = Array.from({ length: 5 }, () => l.next());
    for (const r of records) l.ack(r.id);
    for (const r of records.filter((_, i) => i !== 3)) l.read(r.value);
    expect(l.summary()).toMatchObject({
      acked: 5,
      read: 4,
      lost: 1,
      duplicates: 0,
      unackedRead: 0,
    });
  });

  it("tells duplicates and unacknowledged writes apart from losses", () => {
    const l = new RecordLedger();
    const a = l.next();
    const b = l.next();
    l.ack(a.id);
    l.read(a.value);
    l.read(a.value);
    l.read(b.value);
    l.read(Buffer.from("xy"));
    expect(l.summary()).toMatchObject({
      acked: 1,
      read: 4,
      lost: 0,
      duplicates: 1,
      unackedRead: 1,
      foreign: 1,
    });
  });

  it("grows past its first bitmap", () => {
    const l = new RecordLedger();
    let last = l.next();
    for (let i = 0; i < 20_000; i++) last = l.next();
    l.ack(last.id);
    expect(l.summary().lost).toBe(1);
    l.read(last.value);
    expect(l.summary().lost).toBe(0);
  });
});
