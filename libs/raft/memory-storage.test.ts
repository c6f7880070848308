import { describe, expect, it } from "vitest";
import { MemoryStorage } from "./memory-storage.js";
import { EntryType, LogCompactedError, LogUnavailableError, type Entry } from "./types.js";

function ents(from: number, to: number, term: number): Entry[] {
  const out: Entry[] = [];
  for (let i = from; i <= to; i++)
    out.push({ index: i, term, type: EntryType.Normal, data: new Uint8Array([i & 255]) });
  return out;
}

describe("MemoryStorage", () => {
  it("starts empty with the initial membership", () => {
    const s = new MemoryStorage({ voters: [1, 2, 3] });
    expect(s.firstIndex()).toBe(1);
    expect(s.lastIndex()).toBe(0);
    expect(s.term(0)).toBe(0);
    expect(s.initialState().confState.voters).toEqual([1, 2, 3]);
    expect(s.initialState().hardState).toEqual({ term: 0, vote: -1, commit: 0 });
  });

  it("appends and truncates a conflicting suffix", () => {
    const s = new MemoryStorage({ voters: [1] });
    s.append(ents(1, 5, 1));
    expect(s.lastIndex()).toBe(5);
    s.append(ents(3, 4, 2));
    expect(s.lastIndex()).toBe(4);
    expect([1, 2, 3, 4].map((i) => s.term(i))).toEqual([1, 1, 2, 2]);
    expect(() => s.term(5)).toThrow(LogUnavailableError);
    expect(() => s.append(ents(7, 7, 2))).toThrow(/gap/);
  });

  it("bounds entries() by bytes but returns at least one", () => {
    const s = new MemoryStorage({ voters: [1] });
    s.append(ents(1, 10, 1));
    expect(s.entries(1, 11, 0).length).toBe(1);
    expect(s.entries(1, 11, 22 * 3).length).toBe(3);
    expect(s.entries(2, 11, Infinity).map((e) => e.index)).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });

  it("compacts, snapshots and applies a snapshot", () => {
    const s = new MemoryStorage({ voters: [1, 2] });
    s.append(ents(1, 10, 3));
    const snap = s.createSnapshot(
      6,
      { voters: [1, 2], learners: [], outgoingVoters: [] },
      new Uint8Array([9]),
    );
    expect(snap.metadata).toMatchObject({ index: 6, term: 3 });
    s.compact(6);
    expect(s.firstIndex()).toBe(7);
    expect(s.term(6)).toBe(3);
    expect(() => s.term(5)).toThrow(LogCompactedError);
    expect(() => s.entries(6, 8, Infinity)).toThrow(LogCompactedError);
    expect(s.entries(7, 11, Infinity).length).toBe(4);
    // appending entries partly below the compaction point keeps only the new part
    s.append(ents(5, 12, 4));
    expect(s.lastIndex()).toBe(12);
    expect(s.term(7)).toBe(4);
    s.applySnapshot({
      metadata: {
        index: 20,
        term: 5,
        confState: { voters: [1, 2, 3], learners: [], outgoingVoters: [] },
      },
      data: new Uint8Array(),
    });
    expect(s.firstIndex()).toBe(21);
    expect(s.lastIndex()).toBe(20);
    expect(s.term(20)).toBe(5);
    expect(s.initialState().confState.voters).toEqual([1, 2, 3]);
    expect(() => s.applySnapshot(s.snapshot())).toThrow(/not newer/);
  });
});
