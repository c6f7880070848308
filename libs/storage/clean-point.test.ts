// The stored clean point: a crash at any step of a write leaves the old value or the new one,
// never garbage (a torn temporary file is removed when the log opens; a file that does not check
// reads as nothing cleaned, never as a wrong offset).
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  CLEAN_POINT_FILE,
  decodeCleanPoint,
  encodeCleanPoint,
  readCleanPoint,
  writeCleanPoint,
} from "./clean-point.js";
import { RecordCache } from "./record-cache.js";
import { SegmentedLog } from "./segmented-log.js";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "tern-clean-point-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const openLog = (): SegmentedLog =>
  SegmentedLog.open(
    dir,
    {
      segmentBytes: 4096,
      segmentMs: -1,
      indexIntervalBytes: 512,
      readAheadBytes: 32 * 1024,
      cache: new RecordCache(1024 * 1024),
    },
    { index: 0, term: 0, nextOffset: 0n, voters: [1], learners: [], state: new Uint8Array(0) },
  );

/** Appends n entries of one offset each. */
function fill(log: SegmentedLog, n: number): void {
  for (let i = 0; i < n; i++)
    log.append({
      index: log.lastIndex() + 1,
      term: 1,
      entryType: 0,
      baseOffset: log.nextOffset(),
      offsetCount: 1,
      maxTimestampMs: 1,
      appendTimeMs: 1,
      codec: 0,
      data: Buffer.from(`r${i}`),
    });
}

describe("clean point file", () => {
  it("round-trips; a file that does not check reads as nothing cleaned", () => {
    expect(decodeCleanPoint(encodeCleanPoint(12_345n))).toBe(12_345n);
    expect(readCleanPoint(dir)).toBe(0n);
    writeCleanPoint(dir, 77n);
    expect(readCleanPoint(dir)).toBe(77n);
    const good = readFileSync(join(dir, CLEAN_POINT_FILE));
    for (let cut = 0; cut < good.byteLength; cut++) {
      writeFileSync(join(dir, CLEAN_POINT_FILE), good.subarray(0, cut));
      expect(readCleanPoint(dir), `cut at ${cut}`).toBe(0n);
    }
    for (let bit = 0; bit < good.byteLength * 8; bit++) {
      const flipped = Buffer.from(good);
      flipped[bit >> 3]! ^= 1 << (bit & 7);
      writeFileSync(join(dir, CLEAN_POINT_FILE), flipped);
      expect(readCleanPoint(dir), `bit ${bit}`).toBe(0n);
    }
  });

  it("a crash at each step of a write opens to the old value or the new one", async () => {
    const log = openLog();
    fill(log, 50);
    expect(log.cleanedUpTo(20n, log.rewriteCount())).toBe(true);
    await log.close();
    const next = encodeCleanPoint(30n);
    const tmp = join(dir, `${CLEAN_POINT_FILE}.tmp`);
    // The steps of writeCleanPoint: temporary file written in part, whole, then renamed.
    const crashes: Array<[string, () => void, bigint]> = [
      ["temporary file torn", () => writeFileSync(tmp, next.subarray(0, 5)), 20n],
      ["temporary file written, not renamed", () => writeFileSync(tmp, next), 20n],
      ["renamed", () => writeCleanPoint(dir, 30n), 30n],
    ];
    for (const [step, crash, expected] of crashes) {
      crash();
      const reopened = openLog();
      expect(reopened.firstDirtyOffset(), step).toBe(expected);
      expect(existsSync(tmp), step).toBe(false);
      await reopened.close();
    }
  });

  it("is clamped to the log end: at open, on truncation and on reset, stored before appends", async () => {
    const log = openLog();
    fill(log, 100);
    expect(log.cleanedUpTo(80n, log.rewriteCount())).toBe(true);
    await log.close();
    // A point above what the files hold (a lost tail): the log end.
    writeCleanPoint(dir, 500n);
    let l = openLog();
    expect(l.firstDirtyOffset()).toBe(100n);
    expect(readCleanPoint(dir)).toBe(100n);
    // Truncated below it (entries after index 40 applied again, raw): 40 offsets remain.
    const since = l.rewriteCount();
    l.truncateAfter(40);
    expect(l.firstDirtyOffset()).toBe(40n);
    expect(readCleanPoint(dir)).toBe(40n);
    // A clean that started before the truncation stores nothing.
    fill(l, 60);
    expect(l.cleanedUpTo(90n, since)).toBe(false);
    expect(readCleanPoint(dir)).toBe(40n);
    // Truncated above it: unchanged.
    await l.flushed();
    l.truncateAfter(95);
    expect(readCleanPoint(dir)).toBe(40n);
    // Points only move up through cleanedUpTo.
    expect(l.cleanedUpTo(30n, l.rewriteCount())).toBe(true);
    expect(l.firstDirtyOffset()).toBe(40n);
    // An installed snapshot replaces the log: a log that starts at offset 10 has nothing clean.
    l.resetTo({
      index: 10,
      term: 1,
      nextOffset: 10n,
      voters: [1],
      learners: [],
      state: new Uint8Array(0),
    });
    expect(l.firstDirtyOffset()).toBe(10n);
    expect(readCleanPoint(dir)).toBe(10n);
    await l.close();
    l = openLog();
    expect(l.firstDirtyOffset()).toBe(10n);
    await l.close();
  });
});
