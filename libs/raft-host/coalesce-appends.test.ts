import { describe, expect, it } from "vitest";
import { EntryType, MessageType, type Entry, type Message } from "../raft/types.js";
import { coalesceAppends } from "./coalesce-appends.js";

const e = (index: number, term = 2): Entry => ({
  index,
  term,
  type: EntryType.Normal,
  data: new Uint8Array(10),
});
function append(to: number, index: number, entries: Entry[], commit = 0, term = 2): Message {
  return {
    type: MessageType.Append,
    from: 1,
    to,
    term,
    logTerm: 2,
    index,
    entries,
    commit,
    reject: false,
    rejectHint: 0,
  };
}

describe("coalesceAppends", () => {
  it("merges contiguous Appends per peer, keeping the newest commit and per-peer order", () => {
    const hb: Message = { ...append(3, 0, []), type: MessageType.Heartbeat };
    const out = coalesceAppends(
      [
        append(2, 4, [e(5)], 3),
        append(3, 4, [e(5)]),
        append(2, 5, [e(6)], 4),
        hb,
        append(3, 5, [e(6)]),
        append(2, 6, [e(7)], 5),
      ],
      1000,
    );
    expect(
      out.map((m) => [m.to, m.type, m.index, m.entries.map((x) => x.index), m.commit]),
    ).toEqual([
      [2, MessageType.Append, 4, [5, 6, 7], 5],
      [3, MessageType.Append, 4, [5], 0],
      [3, MessageType.Heartbeat, 0, [], 0],
      [3, MessageType.Append, 5, [6], 0], // not merged across the heartbeat
    ]);
  });

  it("does not merge gaps, other terms, or beyond the byte bound", () => {
    expect(coalesceAppends([append(2, 4, [e(5)]), append(2, 6, [e(7)])], 1000)).toHaveLength(2);
    expect(coalesceAppends([append(2, 4, [e(5)]), append(2, 5, [e(6)], 0, 3)], 1000)).toHaveLength(
      2,
    );
    expect(coalesceAppends([append(2, 4, [e(5)]), append(2, 5, [e(6)])], 15)).toHaveLength(2);
    expect(coalesceAppends([append(2, 4, [e(5)]), append(2, 5, [e(6)])], 20)).toHaveLength(1);
  });
});
