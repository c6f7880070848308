// The compacted workload's checker on hand-made histories: each anomaly found, and a cleaned
// log (superseded records gone, a delete removed after delete.retention.ms, a later write of
// unknown outcome) accepted.
import { describe, expect, it } from "vitest";
import {
  checkCompaction,
  type CleanerTotals,
  type KvRecord,
  type KvWrite,
} from "./compaction-checker.js";

const CLEANED: CleanerTotals = { cleans: 2, bytesRead: 40_000, bytesWritten: 9_000 };

const w = (
  key: string,
  value: string | null,
  offset: number | undefined,
  outcome: KvWrite["outcome"] = "ok",
): KvWrite => ({ partition: 0, key, value, offset, outcome });
const r = (key: string, value: string | null, offset: number): KvRecord => ({
  partition: 0,
  key,
  value,
  offset,
});

/** a: 3 updates; b: written then deleted; c: an aborted update after a committed one. */
const WRITES: KvWrite[] = [
  w("a", "a1", 0),
  w("b", "b1", 1),
  w("a", "a2", 2),
  w("b", null, 3),
  w("c", "c1", 4),
  w("c", "c2", 5, "fail"),
  w("a", "a3", 6),
];

function check(finalRead: KvRecord[], extra: Partial<Parameters<typeof checkCompaction>[0]> = {}) {
  return checkCompaction({ writes: WRITES, finalRead, runReads: [], cleaner: CLEANED, ...extra });
}

describe("checkCompaction", () => {
  it("accepts a cleaned log: latest values kept, the delete kept or removed", () => {
    const kept = check([r("b", null, 3), r("c", "c1", 4), r("a", "a3", 6)]);
    expect(kept.anomalies).toEqual({});
    expect(kept.valid).toBe(true);
    expect(kept.stats.committedRemoved).toBe(3);
    expect(kept.stats.deletedKeysGone).toBe(0);
    const gone = check([r("c", "c1", 4), r("a", "a3", 6)]);
    expect(gone.valid).toBe(true);
    expect(gone.stats.deletedKeysGone).toBe(1);
    // Uncleaned is fine too.
    expect(
      check([
        r("a", "a1", 0),
        r("b", "b1", 1),
        r("a", "a2", 2),
        r("b", null, 3),
        r("c", "c1", 4),
        r("a", "a3", 6),
      ]).valid,
    ).toBe(true);
  });

  it("finds a lost latest value, an older value in its place, and a missing key", () => {
    expect(check([r("b", null, 3), r("c", "c1", 4), r("a", "a2", 2)]).anomalies).toEqual({
      "latest-value-lost": 1,
    });
    expect(check([r("b", null, 3), r("c", "c1", 4)]).anomalies).toEqual({
      "latest-value-lost": 1,
    });
  });

  it("finds a deleted key that comes back", () => {
    const back = check([r("b", "b1", 1), r("c", "c1", 4), r("a", "a3", 6)]);
    expect(back.anomalies).toEqual({ "tombstone-resurrected": 1 });
  });

  it("finds an aborted value read, at the end or during the run", () => {
    expect(check([r("c", "c2", 5), r("a", "a3", 6)]).anomalies).toMatchObject({
      "aborted-read": 1,
    });
    expect(
      check([r("c", "c1", 4), r("a", "a3", 6)], { runReads: [r("c", "c2", 5)] }).anomalies,
    ).toEqual({ "aborted-read": 1 });
  });

  it("finds records nobody wrote and committed writes at another offset", () => {
    expect(check([r("c", "c1", 4), r("a", "a3", 6), r("d", "d1", 7)]).anomalies).toEqual({
      "phantom-record": 1,
    });
    expect(check([r("c", "c1", 4), r("a", "a3", 7)]).anomalies).toEqual({
      "offset-mismatch": 1,
    });
  });

  it("accepts a later write of unknown outcome as the latest, committed or not", () => {
    const writes = [...WRITES, w("a", "a4", undefined, "unknown"), w("b", "b2", 8, "unknown")];
    const withThem = [r("c", "c1", 4), r("a", "a3", 6), r("a", "a4", 7), r("b", "b2", 8)];
    expect(
      checkCompaction({ writes, finalRead: withThem, runReads: [], cleaner: CLEANED }).valid,
    ).toBe(true);
    const without = [r("c", "c1", 4), r("a", "a3", 6)];
    expect(
      checkCompaction({ writes, finalRead: without, runReads: [], cleaner: CLEANED }).valid,
    ).toBe(true);
    // An unknown write before the last committed one never stands in for it.
    const early = [...WRITES, w("a", "a0", 1, "unknown")];
    expect(
      checkCompaction({
        writes: early,
        finalRead: [r("a", "a0", 1), r("c", "c1", 4)],
        runReads: [],
        cleaner: CLEANED,
      }).anomalies,
    ).toEqual({ "latest-value-lost": 1 });
  });

  it("fails a run whose cleaners never cleaned", () => {
    const idle = check([r("b", null, 3), r("c", "c1", 4), r("a", "a3", 6)], {
      cleaner: { cleans: 0, bytesRead: 0, bytesWritten: 0 },
    });
    expect(idle.anomalies).toEqual({ "cleaner-idle": 1 });
  });
});
