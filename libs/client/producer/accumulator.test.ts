import { describe, expect, it } from "vitest";
import { Accumulator, SEQUENCE_MAX, sequenceBefore } from "./accumulator.js";
import type { ProducerBatch } from "./producer-batch.js";

function record(bytes: number) {
  return {
    key: null,
    value: Buffer.alloc(bytes),
    headers: [],
    timestampMs: 0n,
    bytes,
    resolve: () => {},
    reject: () => {},
  };
}

/** Appends `count` full batches to t/0 and gives them consecutive sequences as the sender would. */
function batches(acc: Accumulator, count: number, recordsEach: number): ProducerBatch[] {
  const q = acc.queue("t", 0);
  for (let i = 0; i < count * recordsEach; i++) acc.append("t", 0, record(100), 0);
  expect(q.batches.length).toBe(count);
  let sequence = 0;
  for (const b of q.batches) {
    b.baseSequence = sequence;
    sequence += b.records.length;
  }
  return [...q.batches];
}

describe("sequenceBefore", () => {
  it("orders sequences in the wrapping 31-bit space", () => {
    expect(sequenceBefore(0, 5)).toBe(true);
    expect(sequenceBefore(5, 0)).toBe(false);
    expect(sequenceBefore(7, 7)).toBe(false);
    expect(sequenceBefore(SEQUENCE_MAX - 2, 3)).toBe(true);
    expect(sequenceBefore(3, SEQUENCE_MAX - 2)).toBe(false);
  });
});

describe("Accumulator retry order", () => {
  it("requeues failed batches in sequence order ahead of never-sent ones", () => {
    const acc = new Accumulator(400, 60_000);
    const [b0, b1, b2, b3] = batches(acc, 4, 4);
    const q = acc.queue("t", 0);
    // b0..b2 go out; b3 never leaves. Answers come back b2, b0, b1.
    for (const b of [b0!, b1!, b2!]) {
      q.batches.splice(q.batches.indexOf(b), 1);
      q.inFlight.add(b);
    }
    b3!.baseSequence = -1;
    acc.requeue(q, b2!);
    acc.requeue(q, b0!);
    acc.requeue(q, b1!);
    expect(q.batches).toEqual([b0, b1, b2, b3]);
    expect(q.retrying).toBe(true);
    expect(q.inFlight.size).toBe(0);
  });

  it("hasEarlierUnresolved: true behind an in-flight or requeued earlier batch, false for the first", () => {
    const acc = new Accumulator(400, 60_000);
    const [b0, b1, b2] = batches(acc, 3, 4);
    const q = acc.queue("t", 0);
    q.batches.length = 0;
    q.inFlight.add(b0!);
    q.inFlight.add(b1!);
    expect(acc.hasEarlierUnresolved(q, b0!)).toBe(false);
    expect(acc.hasEarlierUnresolved(q, b1!)).toBe(true);
    // b0 acknowledged: b1 is now the first unresolved one.
    q.inFlight.delete(b0!);
    expect(acc.hasEarlierUnresolved(q, b1!)).toBe(false);
    // b1 failed and waits for its resend: b2 (in flight) is behind it.
    q.inFlight.delete(b1!);
    acc.requeue(q, b1!);
    q.inFlight.add(b2!);
    expect(acc.hasEarlierUnresolved(q, b2!)).toBe(true);
    // A batch without a sequence is never "behind".
    b2!.baseSequence = -1;
    expect(acc.hasEarlierUnresolved(q, b2!)).toBe(false);
  });
});
