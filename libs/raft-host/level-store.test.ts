import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Level } from "level";
import { afterEach, describe, expect, it } from "vitest";
import { EntryType, type Entry, type Ready } from "../raft/types.js";
import { encodeEntryRecord } from "./disk-codec.js";
import { GroupStorage } from "./group-storage.js";
import { GroupKeys } from "./keys.js";
import { LARGE_VALUE_BYTES, largeValuesLast, LevelStore, type BatchOp } from "./level-store.js";

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "raft-host-store-"));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function entry(index: number, term: number, text = `e${index}`): Entry {
  return { index, term, type: EntryType.Normal, data: new TextEncoder().encode(text) };
}

function ready(partial: Partial<Ready>): Ready {
  return {
    entries: [],
    committedEntries: [],
    messages: [],
    readStates: [],
    mustSync: true,
    ...partial,
  };
}

describe("LevelStore + GroupStorage", () => {
  it("reads back exactly what was written, across close and reopen", async () => {
    const dir = tempDir();
    let store = await LevelStore.open(dir);
    const keys = new GroupKeys("orders/3");
    const ops: BatchOp[] = [];
    const g = GroupStorage.create(keys, [1, 2, 3], ops);
    g.stageReady(
      ready({
        entries: [1, 2, 3, 4, 5].map((i) => entry(i, 1)),
        hardState: { term: 1, vote: 1, commit: 3 },
      }),
      ops,
    );
    // A conflicting append from a new leader replaces 4..5 with 4 (term 2).
    g.stageReady(
      ready({ entries: [entry(4, 2, "new")], hardState: { term: 2, vote: 2, commit: 4 } }),
      ops,
    );
    await store.write(ops, true);
    await store.close();

    store = await LevelStore.open(dir);
    const p = await store.loadGroup(keys, 1000);
    expect(p).toBeDefined();
    expect(p!.hardState).toEqual({ term: 2, vote: 2, commit: 4 });
    expect(p!.confState.voters).toEqual([1, 2, 3]);
    expect(p!.entries.map((e) => [e.index, e.term])).toEqual([
      [1, 1],
      [2, 1],
      [3, 1],
      [4, 2],
    ]);
    expect(new TextDecoder().decode(p!.entries[3]!.data)).toBe("new");
    const r = GroupStorage.recover(keys, p!);
    expect(r.memory.lastIndex()).toBe(4);
    expect(r.memory.term(4)).toBe(2);
    expect(await store.loadGroup(new GroupKeys("orders/30"), 1000)).toBeUndefined();
    await store.close();
  });

  it("recovers a compacted log with a snapshot newer than the log start", async () => {
    const dir = tempDir();
    let store = await LevelStore.open(dir);
    const keys = new GroupKeys("g");
    const ops: BatchOp[] = [];
    const g = GroupStorage.create(keys, [1], ops);
    g.stageReady(
      ready({
        entries: Array.from({ length: 10 }, (_, i) => entry(i + 1, 1)),
        hardState: { term: 1, vote: 1, commit: 10 },
      }),
      ops,
    );
    const conf = g.memory.initialState().confState;
    g.stageLocalSnapshot(8, conf, new Uint8Array([8, 8]), 5, ops);
    await store.write(ops, true);
    await store.close();

    store = await LevelStore.open(dir);
    const p = (await store.loadGroup(keys, 1000))!;
    expect(p.logStart).toEqual({ index: 5, term: 1 });
    expect(p.entries.map((e) => e.index)).toEqual([6, 7, 8, 9, 10]);
    const r = GroupStorage.recover(keys, p);
    expect(r.memory.firstIndex()).toBe(6);
    expect(r.memory.snapshot().metadata.index).toBe(8);
    expect([...r.memory.snapshot().data]).toEqual([8, 8]);
    await store.close();
  });

  it("keeps runs consistent through conflicting appends, compaction and reopen", async () => {
    const dir = tempDir();
    let store = await LevelStore.open(dir);
    const keys = new GroupKeys("runs");
    const ops: BatchOp[] = [];
    const g = GroupStorage.create(keys, [1, 2, 3], ops);
    g.stageReady(
      ready({
        entries: [1, 2, 3, 4].map((i) => entry(i, 1)),
        hardState: { term: 1, vote: 1, commit: 2 },
      }),
      ops,
    );
    g.stageReady(ready({ entries: [5, 6, 7, 8].map((i) => entry(i, 1)) }), ops);
    // A new leader overwrites from 3 (inside the first run): runs 1..2 and 3..5 remain.
    g.stageReady(
      ready({
        entries: [3, 4, 5].map((i) => entry(i, 2, `t2-${i}`)),
        hardState: { term: 2, vote: 2, commit: 2 },
      }),
      ops,
    );
    expect(g.runs()).toEqual([
      { first: 1, last: 2 },
      { first: 3, last: 5 },
    ]);
    g.stageReady(
      ready({
        entries: [6, 7, 8, 9].map((i) => entry(i, 2)),
        hardState: { term: 2, vote: 2, commit: 9 },
      }),
      ops,
    );
    // Compaction to 4 deletes run 1..2 only; run 3..5 straddles and stays.
    g.stageLocalSnapshot(7, g.memory.initialState().confState, new Uint8Array([7]), 4, ops);
    expect(g.runs()).toEqual([
      { first: 3, last: 5 },
      { first: 6, last: 9 },
    ]);
    // An overwrite of 5.. (inside the straddling run) rewrites it from the first retained index.
    g.stageReady(
      ready({ entries: [entry(8, 3, "t3-8")], hardState: { term: 3, vote: 3, commit: 7 } }),
      ops,
    );
    expect(g.runs()).toEqual([
      { first: 3, last: 5 },
      { first: 6, last: 7 },
      { first: 8, last: 8 },
    ]);
    await store.write(ops, true);
    await store.close();

    store = await LevelStore.open(dir);
    const p = (await store.loadGroup(keys, 1000))!;
    expect(p.logStart).toEqual({ index: 4, term: 2 });
    expect(p.entries.map((e) => [e.index, e.term, new TextDecoder().decode(e.data)])).toEqual([
      [5, 2, "t2-5"],
      [6, 2, "e6"],
      [7, 2, "e7"],
      [8, 3, "t3-8"],
    ]);
    const r = GroupStorage.recover(keys, p);
    expect(r.runs()).toEqual([
      { first: 3, last: 5 },
      { first: 6, last: 7 },
      { first: 8, last: 8 },
    ]);
    // Further appends after recovery continue the runs.
    const more: BatchOp[] = [];
    r.stageReady(
      ready({ entries: [entry(9, 3)], hardState: { term: 3, vote: 3, commit: 8 } }),
      more,
    );
    await store.write(more, true);
    expect((await store.loadGroup(keys, 1000))!.entries.map((e) => e.index)).toEqual([
      5, 6, 7, 8, 9,
    ]);
    await store.close();
  });

  it("reads single-entry records written before the run format", async () => {
    const dir = tempDir();
    const keys = new GroupKeys("old");
    {
      const store = await LevelStore.open(dir);
      const ops: BatchOp[] = [];
      GroupStorage.create(keys, [1], ops).stageReady(
        ready({ hardState: { term: 1, vote: 1, commit: 0 } }),
        ops,
      );
      await store.write(ops, true);
      await store.close();
      const raw = new Level<Uint8Array, Uint8Array>(dir, {
        keyEncoding: "view",
        valueEncoding: "view",
      });
      for (const i of [1, 2]) await raw.put(keys.entry(i), encodeEntryRecord(entry(i, 1)));
      await raw.close();
    }
    const store = await LevelStore.open(dir);
    const p = (await store.loadGroup(keys, 10))!;
    expect(p.entries.map((e) => e.index)).toEqual([1, 2]);
    expect(p.runs).toEqual([
      { first: 1, last: 1 },
      { first: 2, last: 2 },
    ]);
    await store.close();
  });

  it("groups a dropped group's data in one range", async () => {
    const dir = tempDir();
    const store = await LevelStore.open(dir);
    const a = new GroupKeys("a");
    const ab = new GroupKeys("a/b");
    const ops: BatchOp[] = [];
    for (const k of [a, ab])
      GroupStorage.create(k, [1], ops).stageReady(
        ready({ entries: [entry(1, 1)], hardState: { term: 1, vote: 1, commit: 1 } }),
        ops,
      );
    await store.write(ops, false);
    await store.deleteGroup(a);
    expect(await store.loadGroup(a, 10)).toBeUndefined();
    expect((await store.loadGroup(ab, 10))!.entries.length).toBe(1);
    await store.close();
  });

  it("refuses a log with a gap, a corrupt record, or a commit beyond the log", async () => {
    const dir = tempDir();
    const keys = new GroupKeys("g");
    {
      const store = await LevelStore.open(dir);
      const ops: BatchOp[] = [];
      // One Ready per entry: one run record per entry, so single entries can be tampered with.
      const g = GroupStorage.create(keys, [1], ops);
      for (const i of [1, 2, 3])
        g.stageReady(
          ready({ entries: [entry(i, 1)], hardState: { term: 1, vote: 1, commit: i } }),
          ops,
        );
      expect(g.runs()).toEqual([
        { first: 1, last: 1 },
        { first: 2, last: 2 },
        { first: 3, last: 3 },
      ]);
      await store.write(ops, true);
      await store.close();
    }
    // Tamper with the raw database: delete entry 2 (a gap).
    const raw = new Level<Uint8Array, Uint8Array>(dir, {
      keyEncoding: "view",
      valueEncoding: "view",
    });
    await raw.del(keys.entry(2));
    await raw.close();
    let store = await LevelStore.open(dir);
    await expect(store.loadGroup(keys, 100)).rejects.toThrow(/gap/);
    await store.close();

    const raw2 = new Level<Uint8Array, Uint8Array>(dir, {
      keyEncoding: "view",
      valueEncoding: "view",
    });
    await raw2.del(keys.entry(3));
    await raw2.close();
    store = await LevelStore.open(dir);
    await expect(store.loadGroup(keys, 100)).rejects.toThrow(/commit 3 beyond the last index 1/);
    await store.close();

    const raw3 = new Level<Uint8Array, Uint8Array>(dir, {
      keyEncoding: "view",
      valueEncoding: "view",
    });
    const v = (await raw3.get(keys.entry(1)))!;
    const flipped = v.slice();
    flipped[flipped.length - 1]! ^= 0xff;
    await raw3.put(keys.entry(1), flipped);
    await raw3.put(keys.hard, v.subarray(0, 3));
    await raw3.close();
    store = await LevelStore.open(dir);
    await expect(store.loadGroup(keys, 100)).rejects.toThrow(/corrupt/);
    await store.close();
  });
});

describe("largeValuesLast (leveldb WriteBatch sized once)", () => {
  const key = (n: number): Uint8Array => new Uint8Array([7, n]);
  const put = (k: number, bytes: number): BatchOp => ({
    type: "put",
    key: key(k),
    value: new Uint8Array(bytes).fill(k),
  });
  const del = (k: number): BatchOp => ({ type: "del", key: key(k) });
  const big = LARGE_VALUE_BYTES;

  it("moves large puts after the small ops, each group in its order", () => {
    const ops = [put(1, 50), put(2, big * 16), put(3, 40), del(4), put(5, big), put(6, 10)];
    expect(largeValuesLast(ops)).toEqual([ops[0], ops[2], ops[3], ops[5], ops[1], ops[4]]);
    const done = [put(1, 50), put(2, big)];
    expect(largeValuesLast(done)).toBe(done);
  });

  it("keeps the order when a large put's key comes again later (the later op must win)", () => {
    const ops = [put(2, big), put(1, 50), del(2)];
    expect(largeValuesLast(ops)).toBe(ops);
    // A delete of the key before its large put (a rewritten run) may stay before it.
    const rewrite = [put(2, big), del(3), put(3, big), put(9, 30)];
    expect(largeValuesLast(rewrite)).toEqual([rewrite[1], rewrite[3], rewrite[0], rewrite[2]]);
  });

  it("writes the same data either way", async () => {
    const dir = tempDir();
    const store = await LevelStore.open(dir);
    await store.write([put(2, big), put(1, 50), del(2)], false);
    await store.write([del(3), put(3, big * 2), put(4, 20)], false);
    await store.close();
    const db = new Level<Uint8Array, Uint8Array>(dir, {
      keyEncoding: "view",
      valueEncoding: "view",
    });
    await db.open();
    expect(await db.get(key(2))).toBeUndefined();
    expect((await db.get(key(1)))?.byteLength).toBe(50);
    expect((await db.get(key(3)))?.byteLength).toBe(big * 2);
    expect((await db.get(key(4)))?.byteLength).toBe(20);
    await db.close();
  });
});
