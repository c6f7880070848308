// The entry journal on real files: recovery folds records in order, a torn tail is cut at any
// byte, a corrupt record before the last file refuses to open, files are deleted only once no
// group needs them, and a group that holds the oldest file back is named (or, if it was never
// opened again, carried forward) so the journal stays bounded.
import {
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { silentLogger } from "../common/logger.js";
import { EntryType, type ConfState, type Entry } from "../raft/types.js";
import { SYNC_WRITE_BYTES_MAX } from "../common/loop-writes.js";
import { EntryJournal, foldEntries } from "./entry-journal.js";
import { withJournal } from "./journal-recovery.js";
import type { PersistedGroup } from "./level-store.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), "tern-journal-"));
  dirs.push(d);
  return d;
}

function entries(from: number, to: number, term = 1, bytes = 100): Entry[] {
  const out: Entry[] = [];
  for (let i = from; i <= to; i++)
    out.push({ index: i, term, type: EntryType.Normal, data: new Uint8Array(bytes).fill(i % 251) });
  return out;
}

function indexes(log: readonly Entry[] | undefined): number[] {
  return (log ?? []).map((e) => e.index);
}

describe("entry journal", () => {
  it("recovers each group's log: appends, replacements and resets, in file order", async () => {
    const dir = tempDir();
    const j = await EntryJournal.open(dir, silentLogger(), { fileBytesMax: 2_000 });
    await j.write([
      { kind: "entries", groupId: "a", entries: entries(1, 10) },
      { kind: "entries", groupId: "b", entries: entries(1, 5) },
    ]);
    await j.write([{ kind: "entries", groupId: "a", entries: entries(11, 20) }]);
    // A conflicting append replaces a's log from 15; b is reset by a snapshot at 40.
    await j.write([
      { kind: "entries", groupId: "a", entries: entries(15, 17, 2) },
      { kind: "reset", groupId: "b", index: 40, term: 3 },
      { kind: "entries", groupId: "b", entries: entries(41, 42, 3) },
    ]);
    await j.close();
    const again = await EntryJournal.open(dir, silentLogger());
    const a = again.take("a")!;
    expect(indexes(a)).toEqual([...Array(17).keys()].map((i) => i + 1));
    expect(a.slice(14).every((e) => e.term === 2)).toBe(true);
    expect(a[3]!.data).toEqual(new Uint8Array(100).fill(4));
    expect(indexes(again.take("b"))).toEqual([41, 42]);
    expect(again.take("a")).toBeUndefined();
  });

  it("writes small batches on the event loop and large ones in the thread pool, both recovered", async () => {
    const dir = tempDir();
    const j = await EntryJournal.open(dir, silentLogger());
    const small = entries(1, 3, 1, 100);
    const large = entries(4, 6, 1, SYNC_WRITE_BYTES_MAX);
    await j.write([{ kind: "entries", groupId: "g", entries: small }]);
    await j.write([{ kind: "entries", groupId: "g", entries: large }]);
    await j.write([{ kind: "entries", groupId: "g", entries: entries(7, 7) }]);
    expect(j.stats.fsyncs).toBe(3);
    await j.close();
    const again = await EntryJournal.open(dir, silentLogger());
    const log = again.take("g")!;
    expect(indexes(log)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(log[4]!.data).toEqual(new Uint8Array(SYNC_WRITE_BYTES_MAX).fill(5));
  });

  it("cuts a torn tail at any byte and recovers exactly the records before it", async () => {
    const dir = tempDir();
    const j = await EntryJournal.open(dir, silentLogger());
    const writes = [entries(1, 3), entries(4, 4), entries(5, 9)];
    for (const w of writes) await j.write([{ kind: "entries", groupId: "g", entries: w }]);
    await j.close();
    const [name] = readdirSync(dir);
    const path = join(dir, name!);
    const whole = readFileSync(path);
    const ends: number[] = [];
    for (let i = 0, at = 0; i < writes.length; i++) {
      at += 8 + whole.readUInt32BE(at);
      ends.push(at);
    }
    for (let cut = 0; cut < whole.byteLength; cut += 37) {
      writeFileSync(path, whole.subarray(0, cut));
      const r = await EntryJournal.open(dir, silentLogger());
      const complete = ends.filter((e) => e <= cut).length;
      expect(indexes(r.take("g")).length, `cut at ${cut}`).toBe([3, 4, 9][complete - 1] ?? 0);
      expect(statSync(path).size).toBe(ends[complete - 1] ?? 0);
      // Recovery starts a new file; drop it so the next cut sees only the original.
      for (const n of readdirSync(dir)) if (n !== name) rmSync(join(dir, n));
    }
    // A flipped byte in the middle of the only (last) file: cut there too.
    const flipped = Buffer.from(whole);
    flipped[ends[0]! + 30] ^= 0xff;
    writeFileSync(path, flipped);
    const r = await EntryJournal.open(dir, silentLogger());
    expect(indexes(r.take("g"))).toEqual([1, 2, 3]);
  });

  it("refuses to open when a file before the last is corrupt", async () => {
    const dir = tempDir();
    const j = await EntryJournal.open(dir, silentLogger(), { fileBytesMax: 500 });
    for (let i = 0; i < 4; i++)
      await j.write([{ kind: "entries", groupId: "g", entries: entries(1 + i * 5, 5 + i * 5) }]);
    await j.close();
    const names = readdirSync(dir).sort();
    expect(names.length).toBeGreaterThan(2);
    truncateSync(join(dir, names[0]!), statSync(join(dir, names[0]!)).size - 3);
    await expect(EntryJournal.open(dir, silentLogger())).rejects.toThrow(
      /corrupt record.*not at the end/,
    );
  });

  it("deletes files only once every group in them compacted past them, and names the group holding them", async () => {
    const dir = tempDir();
    const j = await EntryJournal.open(dir, silentLogger(), {
      fileBytesMax: 1_000,
      filesBeforeCompactingMax: 3,
    });
    // "idle" writes once; "busy" keeps writing and compacting behind itself.
    await j.write([{ kind: "entries", groupId: "idle", entries: entries(1, 2) }]);
    for (let i = 0; i < 20; i++) {
      const from = 1 + i * 10;
      await j.write(
        [{ kind: "entries", groupId: "busy", entries: entries(from, from + 9) }],
        i > 0 ? [{ groupId: "busy", index: from - 1 }] : [],
      );
    }
    expect(j.fileCount()).toBeGreaterThan(3);
    expect(j.pinning()).toEqual(["idle"]);
    // idle compacts (its snapshot landed): the old files go at the next write.
    await j.write(
      [],
      [
        { groupId: "idle", index: 2 },
        { groupId: "busy", index: 200 },
      ],
    );
    expect(j.fileCount()).toBe(1);
    expect(j.pinning()).toEqual([]);
    await j.close();
    const again = await EntryJournal.open(dir, silentLogger());
    expect(indexes(again.take("busy"))).toEqual([...Array(10).keys()].map((i) => 191 + i));
  });

  it("carries a recovered group that is never opened forward, so its file can go, and keeps its log", async () => {
    const dir = tempDir();
    const j = await EntryJournal.open(dir, silentLogger());
    await j.write([{ kind: "entries", groupId: "orphan", entries: entries(5, 8) }]);
    await j.close();
    const r = await EntryJournal.open(dir, silentLogger(), {
      fileBytesMax: 1_000,
      filesBeforeCompactingMax: 2,
    });
    for (let i = 0; i < 8; i++) {
      const from = 1 + i * 10;
      await r.write(
        [{ kind: "entries", groupId: "busy", entries: entries(from, from + 9) }],
        [{ groupId: "busy", index: from - 1 }],
      );
      expect(r.pinning()).toEqual([]); // the orphan is restated by the journal itself
    }
    expect(r.fileCount()).toBeLessThanOrEqual(3);
    await r.close();
    const again = await EntryJournal.open(dir, silentLogger());
    expect(indexes(again.take("orphan"))).toEqual([5, 6, 7, 8]);
  });

  it("folds a record into a log: append, replace from an index, start over after a gap", () => {
    expect(indexes(foldEntries(entries(1, 5), entries(6, 7)))).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(indexes(foldEntries(entries(1, 5), entries(3, 3)))).toEqual([1, 2, 3]);
    expect(indexes(foldEntries(entries(4, 5), entries(1, 2)))).toEqual([1, 2]);
    expect(indexes(foldEntries(entries(1, 5), entries(9, 9)))).toEqual([9]);
  });
});

describe("journal recovery against level", () => {
  const conf: ConfState = { voters: [1, 2, 3], learners: [], outgoingVoters: [] };
  function level(over: Partial<PersistedGroup>): PersistedGroup {
    return {
      hardState: { term: 3, vote: 1, commit: 10 },
      confState: conf,
      snapshot: undefined,
      logStart: { index: 0, term: 0 },
      entries: [],
      runs: [],
      ...over,
    };
  }

  it("clamps a commit index that level wrote with entries whose journal write did not land", () => {
    const p = withJournal(
      "g",
      level({ hardState: { term: 3, vote: 1, commit: 12 } }),
      entries(1, 9, 3),
      1_000,
    )!;
    expect(p.hardState.commit).toBe(9);
    expect(indexes(p.entries)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it("drops a log older than an installed snapshot whose journal reset did not land; keeps one that matches", () => {
    const snapshot = { metadata: { index: 20, term: 3, confState: conf }, data: new Uint8Array(0) };
    const installed = level({
      snapshot,
      logStart: { index: 20, term: 3 },
      hardState: { term: 3, vote: 1, commit: 20 },
    });
    expect(withJournal("g", installed, entries(15, 25, 2), 1_000)!.entries).toEqual([]);
    expect(withJournal("g", installed, entries(1, 12, 3), 1_000)!.entries).toEqual([]);
    expect(indexes(withJournal("g", installed, entries(18, 22, 3), 1_000)!.entries)).toEqual([
      21, 22,
    ]);
  });

  it("ignores journal leftovers of a group level does not hold, and refuses a log with entries missing", () => {
    expect(withJournal("g", undefined, entries(1, 3), 1_000)).toBeUndefined();
    const compacted = level({
      logStart: { index: 10, term: 1 },
      snapshot: { metadata: { index: 10, term: 1, confState: conf }, data: new Uint8Array(0) },
    });
    expect(() => withJournal("g", compacted, entries(13, 15, 1), 1_000)).toThrow(
      /entries are missing/,
    );
  });
});
