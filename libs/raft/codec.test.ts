import { describe, expect, it } from "vitest";
import {
  decodeConfChange,
  decodeConfState,
  decodeEntry,
  decodeHardState,
  decodeMessage,
  decodeSnapshot,
  decodeSnapshotMetadata,
  encodeConfChange,
  encodeConfState,
  encodeEntry,
  encodeHardState,
  encodeMessage,
  encodeSnapshot,
  encodeSnapshotMetadata,
  messageSizeBytes,
} from "./codec.js";
import { ConfChangeType, EntryType, MessageType, type Message } from "./types.js";
import { DecodeError } from "../common/decode-error.js";

const big = Number.MAX_SAFE_INTEGER;

describe("codec", () => {
  it("round-trips every type", () => {
    const e = {
      term: big,
      index: 2 ** 40 + 7,
      type: EntryType.ConfChange,
      data: new Uint8Array([1, 2, 3]),
    };
    expect(decodeEntry(encodeEntry(e))).toEqual(e);
    const hs = { term: 5, vote: -1, commit: 2 ** 33 };
    expect(decodeHardState(encodeHardState(hs))).toEqual(hs);
    const cs = { voters: [1, 2, 3], learners: [4], outgoingVoters: [] };
    expect(decodeConfState(encodeConfState(cs))).toEqual(cs);
    const cc = { type: ConfChangeType.RemoveNode, nodeId: 7 };
    expect(decodeConfChange(encodeConfChange(cc))).toEqual(cc);
    const md = { index: 10, term: 2, confState: cs };
    expect(decodeSnapshotMetadata(encodeSnapshotMetadata(md))).toEqual(md);
    const snap = { metadata: md, data: new Uint8Array([5, 6]) };
    expect(decodeSnapshot(encodeSnapshot(snap))).toEqual(snap);
  });

  it("round-trips messages with entries, snapshot and context", () => {
    const m: Message = {
      type: MessageType.Append,
      from: 1,
      to: 2,
      term: 9,
      logTerm: 8,
      index: 100,
      commit: 99,
      reject: true,
      rejectHint: 50,
      entries: [
        { term: 9, index: 101, type: EntryType.Normal, data: new Uint8Array(1024).fill(7) },
        { term: 9, index: 102, type: EntryType.Normal, data: new Uint8Array(0) },
      ],
      snapshot: {
        metadata: {
          index: 3,
          term: 1,
          confState: { voters: [1], learners: [], outgoingVoters: [2] },
        },
        data: new Uint8Array([1]),
      },
      context: new Uint8Array([42, 43]),
    };
    const bytes = encodeMessage(m);
    expect(bytes.byteLength).toBe(messageSizeBytes(m));
    expect(decodeMessage(bytes)).toEqual(m);
    const plain: Message = {
      type: MessageType.Heartbeat,
      from: 0,
      to: 3,
      term: 1,
      logTerm: 0,
      index: 0,
      commit: 0,
      reject: false,
      rejectHint: 0,
      entries: [],
    };
    const back = decodeMessage(encodeMessage(plain));
    expect(back).toEqual(plain);
    expect("snapshot" in back).toBe(false);
  });

  it("decodes from a view at a non-zero byte offset", () => {
    const hs = encodeHardState({ term: 3, vote: 2, commit: 1 });
    const framed = new Uint8Array(hs.byteLength + 3);
    framed.set(hs, 3);
    expect(decodeHardState(framed.subarray(3))).toEqual({ term: 3, vote: 2, commit: 1 });
  });

  it("rejects malformed input", () => {
    const m = encodeMessage({
      type: MessageType.Vote,
      from: 1,
      to: 2,
      term: 1,
      logTerm: 0,
      index: 0,
      commit: 0,
      reject: false,
      rejectHint: 0,
      entries: [],
    });
    expect(() => decodeMessage(m.subarray(0, m.byteLength - 1))).toThrow(DecodeError);
    expect(() => decodeMessage(new Uint8Array([...m, 0]))).toThrow(/trailing/);
    const badType = m.slice();
    badType[1] = 200;
    expect(() => decodeMessage(badType)).toThrow(/unknown type/);
    const badVersion = m.slice();
    badVersion[0] = 9;
    expect(() => decodeMessage(badVersion)).toThrow(/version/);
    const hugeCount = m.slice();
    hugeCount.set([0xff, 0xff, 0xff, 0xff], m.byteLength - 4);
    expect(() => decodeMessage(hugeCount)).toThrow(/implausible/);
    expect(() => decodeConfChange(new Uint8Array([9, 0, 0, 0, 1]))).toThrow(/unknown type/);
    expect(() => decodeEntry(new Uint8Array(5))).toThrow(/truncated/);
    const unsafe = encodeHardState({ term: 1, vote: 1, commit: 1 });
    unsafe[0] = 0xff;
    expect(() => decodeHardState(unsafe)).toThrow(/safe integer/);
    expect(() => encodeHardState({ term: -1, vote: 1, commit: 0 })).toThrow(DecodeError);
  });
});
