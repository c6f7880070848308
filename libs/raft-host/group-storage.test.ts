import { describe, expect, it } from "vitest";
import { EntryType, type Entry, type Ready } from "../raft/types.js";
import { GroupStorage } from "./group-storage.js";
import { GroupKeys } from "./keys.js";
import type { BatchOp } from "./level-store.js";

/** Entries that are views into one 1 MiB buffer, as a follower's transport frame delivers them. */
function frameEntries(): Entry[] {
  const frame = new Uint8Array(1024 * 1024).fill(9);
  return [1, 2, 3].map((index) => ({
    index,
    term: 1,
    type: EntryType.Normal,
    data: frame.subarray(index * 100, index * 100 + 50),
  }));
}

function stage(entries: Entry[]): Entry[] {
  const ops: BatchOp[] = [];
  const storage = GroupStorage.create(new GroupKeys("g"), [1], ops);
  const rd: Ready = { entries, committedEntries: [], messages: [], readStates: [], mustSync: true };
  storage.stageReady(rd, ops);
  return storage.memory.entries(1, 4, Number.MAX_SAFE_INTEGER);
}

describe("GroupStorage entry buffers", () => {
  it("keeps the entries it is given, frame views included (the log is compacted within a snapshot interval)", () => {
    const views = frameEntries();
    expect(stage(views).every((e, i) => e.data === views[i]!.data)).toBe(true);
    const own = [1, 2, 3].map((index) => ({
      index,
      term: 1,
      type: EntryType.Normal,
      data: new Uint8Array(64 * 1024),
    }));
    expect(stage(own).every((e, i) => e.data === own[i]!.data)).toBe(true);
  });
});
