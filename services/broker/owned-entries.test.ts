import { describe, expect, it } from "vitest";
import { encodeEntry, type EntryHeader } from "./partition-entry.js";
import { markOwnedEntry, takeOwnedEntry } from "./owned-entries.js";
import { PartitionStateMachine } from "./partition-state-machine.js";

const HEADER: EntryHeader = { appendTimeMs: 1_000_000, retentionMs: -1, retentionBytes: -1, producerExpiryMs: 3_600_000 };

function entry(value: string): Uint8Array {
  return encodeEntry({ kind: "batch", header: HEADER, producerId: -1n, producerEpoch: 0, baseSequence: -1, isTransactional: false, records: [{ key: null, value: Buffer.from(value), headers: [], timestampMs: 0 }] });
}

function readValue(sm: PartitionStateMachine): Uint8Array {
  return sm.read(0n, 1 << 20, "READ_UNCOMMITTED", true).batches[0]!.records[0]!.value!;
}

describe("owned entries", () => {
  it("a buffer marked by the proposer is kept by apply without a copy, once", () => {
    const data = entry("mine");
    markOwnedEntry(data);
    const sm = new PartitionStateMachine("t", 0);
    sm.apply({ index: 1, term: 1, data });
    expect(readValue(sm).buffer).toBe(data.buffer);
    expect(takeOwnedEntry(data)).toBe(false);
  });

  it("any other buffer is copied: later writes to it do not reach the partition", () => {
    const data = entry("abcd");
    const sm = new PartitionStateMachine("t", 0);
    sm.apply({ index: 1, term: 1, data });
    expect(readValue(sm).buffer).not.toBe(data.buffer);
    data.fill(0);
    expect(Buffer.from(readValue(sm)).toString()).toBe("abcd");
  });
});
