import { describe, expect, it } from "vitest";
import { CodecError } from "../raft/codec.js";
import { EntryType } from "../raft/types.js";
import { decodeSnapshotEnvelope, encodeSnapshotEnvelope } from "./snapshot-envelope.js";

const bytes = (...b: number[]): Uint8Array => new Uint8Array(b);

describe("snapshot envelope", () => {
  it("round-trips the state, retainFromIndex and retained entries", () => {
    const entries = [
      { index: 7, term: 2, type: EntryType.Normal, data: bytes(1, 2, 3) },
      { index: 9, term: 3, type: EntryType.Normal, data: bytes() },
    ];
    const back = decodeSnapshotEnvelope(encodeSnapshotEnvelope({ state: bytes(42, 43), retainFromIndex: 2 ** 40, entries }));
    expect([...back.state]).toEqual([42, 43]);
    expect(back.retainFromIndex).toBe(2 ** 40);
    expect(back.entries.map((e) => ({ ...e, data: [...e.data] }))).toEqual(entries.map((e) => ({ ...e, data: [...e.data] })));
  });

  it("refuses truncated, trailing, out-of-order and unknown-version data", () => {
    const good = encodeSnapshotEnvelope({ state: bytes(1), retainFromIndex: 1, entries: [{ index: 1, term: 1, type: EntryType.Normal, data: bytes(5) }] });
    expect(() => decodeSnapshotEnvelope(good.subarray(0, good.byteLength - 1))).toThrow(CodecError);
    const trailing = new Uint8Array(good.byteLength + 1);
    trailing.set(good);
    expect(() => decodeSnapshotEnvelope(trailing)).toThrow(/trailing/);
    const version = Uint8Array.from(good);
    version[0] = 9;
    expect(() => decodeSnapshotEnvelope(version)).toThrow(/version 9/);
    const e = { term: 1, type: EntryType.Normal, data: bytes() };
    const unordered = encodeSnapshotEnvelope({ state: bytes(), retainFromIndex: 1, entries: [{ ...e, index: 3 }, { ...e, index: 3 }] });
    expect(() => decodeSnapshotEnvelope(unordered)).toThrow(/entry 3 after 3/);
  });
});
