// The process's one level database (key layout in keys.ts). Writes arrive as one batch per
// event-loop turn from the scheduler (group commit); reads happen only when a group is opened.
// Everything read back is checked: checksums (disk-codec), contiguous entry indexes,
// non-decreasing terms, commit within the log.
import { mkdirSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { noteSynced, recordingSyncs } from "../common/sync-manifest.js";
import { Level } from "level";
import { assert } from "../common/assert.js";
import type { ConfState, Entry, HardState, Snapshot } from "../raft/types.js";
import {
  decodeBlobRecord,
  decodeConfStateRecord,
  decodeEntryRunRecord,
  decodeHardStateRecord,
  decodeLogStartRecord,
  decodeSnapshotMetadataRecord,
  type LogStart,
} from "./disk-codec.js";
import { GroupKeys } from "./keys.js";

export type BatchOp =
  | { readonly type: "put"; readonly key: Uint8Array; readonly value: Uint8Array }
  | { readonly type: "del"; readonly key: Uint8Array };

/** A contiguous run of entries stored under one key (the key of its first index). */
export interface EntryRun {
  readonly first: number;
  readonly last: number;
}

/** What a group left on disk. */
export interface PersistedGroup {
  readonly hardState: HardState;
  readonly confState: ConfState;
  readonly snapshot: Snapshot | undefined;
  readonly logStart: LogStart;
  /** Contiguous, starting at logStart.index + 1. */
  readonly entries: Entry[];
  /** The runs on disk, ascending; the first may start at or below logStart.index. */
  readonly runs: EntryRun[];
}

/** A put at least this large is "large" for largeValuesLast. */
export const LARGE_VALUE_BYTES = 4096;

/**
 * The same batch with its large puts moved to the end (in their order), when that changes
 * nothing: a level batch is atomic, so only the order of ops on the same key matters, and the
 * ops are returned unchanged if a moved put's key appears in any later op. Why: leveldb's
 * WriteBatch is one std::string that grows by doubling; a 66 KiB run record followed by a
 * 50-byte hard state grows it to ~132 KiB, past glibc's mmap threshold, so every batch maps fresh
 * pages (~15-20 first-touch page faults, ~18 us each on this VM) and unmaps them again.
 * Small ops first, then the large value, and the string is sized once.
 */
export function largeValuesLast(ops: BatchOp[]): BatchOp[] {
  let lastSmall = -1;
  let firstLarge = -1;
  for (let i = 0; i < ops.length; i++) {
    if (isLargePut(ops[i]!)) {
      if (firstLarge < 0) firstLarge = i;
    } else lastSmall = i;
  }
  if (firstLarge < 0 || firstLarge > lastSmall) return ops; // none, or already at the end
  const small: BatchOp[] = [];
  const large: BatchOp[] = [];
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i]!;
    if (!isLargePut(op)) {
      small.push(op);
      continue;
    }
    for (let j = i + 1; j < ops.length; j++)
      if (!isLargePut(ops[j]!) && sameBytes(ops[j]!.key, op.key)) return ops;
    large.push(op);
  }
  return small.concat(large);
}

function isLargePut(op: BatchOp): boolean {
  return op.type === "put" && op.value.byteLength >= LARGE_VALUE_BYTES;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  for (let i = 0; i < a.byteLength; i++) if (a[i] !== b[i]) return false;
  return true;
}

export class LevelStore {
  private constructor(
    private readonly db: Level<Uint8Array, Uint8Array>,
    private readonly dir: string,
  ) {}

  static async open(dataDir: string): Promise<LevelStore> {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const db = new Level<Uint8Array, Uint8Array>(dataDir, {
      keyEncoding: "view",
      valueEncoding: "view",
    });
    await db.open();
    const store = new LevelStore(db, dataDir);
    store.noteWriteAheadLogs(); // what open recovered is in synced tables now
    return store;
  }

  /** Writes one batch (atomically); with sync the promise resolves only after fsync. */
  async write(ops: BatchOp[], sync: boolean): Promise<void> {
    if (ops.length === 0) return;
    await this.db.batch(largeValuesLast(ops) as never, { sync });
    if (sync) this.noteWriteAheadLogs();
  }

  /**
   * Chaos test seam (libs/common/sync-manifest.ts): a synced batch made level's write-ahead
   * log durable to its current length. Level syncs its tables and MANIFEST itself; its
   * write-ahead log (<n>.log) is the one file whose unsynced tail a crash can lose.
   */
  private noteWriteAheadLogs(): void {
    if (!recordingSyncs()) return;
    for (const name of readdirSync(this.dir)) {
      if (!/^\d+\.log$/.test(name)) continue;
      const path = join(this.dir, name);
      try {
        noteSynced(path, statSync(path).size);
      } catch {
        // rotated away meanwhile: its records are in a synced table
      }
    }
  }

  async deleteGroup(keys: GroupKeys): Promise<void> {
    await this.db.clear({ gte: keys.rangeStart, lt: keys.rangeEnd });
  }

  /**
   * Reads a group back and checks it (unless `check` is false: a journaled group is checked once
   * its journal entries are added, journal-recovery.ts); undefined when nothing of it is on disk.
   */
  async loadGroup(
    keys: GroupKeys,
    entriesMax: number,
    check = true,
  ): Promise<PersistedGroup | undefined> {
    const hardBytes = await this.db.get(keys.hard);
    const confBytes = await this.db.get(keys.conf);
    const metaBytes = await this.db.get(keys.snapMeta);
    const startBytes = await this.db.get(keys.logStart);
    const logStart = startBytes ? decodeLogStartRecord(startBytes) : { index: 0, term: 0 };
    const { entries, runs } = await this.loadEntries(keys, entriesMax, logStart.index);
    if (
      hardBytes === undefined &&
      confBytes === undefined &&
      metaBytes === undefined &&
      entries.length === 0
    )
      return undefined;
    assert(confBytes !== undefined, () => `group ${keys.groupId}: data on disk but no conf state`);
    const hardState = hardBytes
      ? decodeHardStateRecord(hardBytes)
      : { term: 0, vote: -1, commit: 0 };
    const confState = decodeConfStateRecord(confBytes);
    let snapshot: Snapshot | undefined;
    if (metaBytes !== undefined) {
      const { metadata, dataBytes } = decodeSnapshotMetadataRecord(metaBytes);
      const dataRecord = await this.db.get(keys.snapData);
      assert(
        dataRecord !== undefined,
        () => `group ${keys.groupId}: snapshot metadata without data`,
      );
      const data = decodeBlobRecord(dataRecord, "snapshot data");
      assert(
        data.byteLength === dataBytes,
        () =>
          `group ${keys.groupId}: snapshot data is ${data.byteLength} bytes, metadata says ${dataBytes}`,
      );
      snapshot = { metadata, data };
    }
    if (check) checkGroup(keys.groupId, hardState, snapshot, logStart, entries);
    return { hardState, confState, snapshot, logStart, entries, runs };
  }

  /** Reads the entry runs; entries at or below the log start (compacted) are skipped. */
  private async loadEntries(
    keys: GroupKeys,
    entriesMax: number,
    logStartIndex: number,
  ): Promise<{ entries: Entry[]; runs: EntryRun[] }> {
    const entries: Entry[] = [];
    const runs: EntryRun[] = [];
    for await (const [key, value] of this.db.iterator({
      gte: keys.entriesStart,
      lt: keys.entriesEnd,
    })) {
      const run = decodeEntryRunRecord(value);
      const first = run[0]!.index;
      const last = run[run.length - 1]!.index;
      assert(
        first === keys.indexOf(key),
        () => `group ${keys.groupId}: entry key ${keys.indexOf(key)} holds index ${first}`,
      );
      assert(
        runs.length === 0 || runs[runs.length - 1]!.last + 1 === first,
        () =>
          `group ${keys.groupId}: log gap or overlap: run ${first}..${last} follows ${runs[runs.length - 1]!.last}`,
      );
      runs.push({ first, last });
      for (const e of run) {
        if (e.index <= logStartIndex) continue;
        assert(
          entries.length < entriesMax,
          () => `group ${keys.groupId}: more than ${entriesMax} log entries on disk`,
        );
        entries.push(e);
      }
    }
    return { entries, runs };
  }

  async close(): Promise<void> {
    await this.db.close();
  }
}

export function checkGroup(
  groupId: string,
  hard: HardState,
  snapshot: Snapshot | undefined,
  start: LogStart,
  entries: Entry[],
): void {
  const snapIndex = snapshot?.metadata.index ?? 0;
  assert(
    start.index <= snapIndex,
    () => `group ${groupId}: log starts at ${start.index} after the snapshot ${snapIndex}`,
  );
  let previous = start;
  for (const e of entries) {
    assert(
      e.index === previous.index + 1,
      () => `group ${groupId}: log gap or overlap: ${e.index} follows ${previous.index}`,
    );
    assert(
      e.term >= previous.term,
      () => `group ${groupId}: term goes back from ${previous.term} to ${e.term} at ${e.index}`,
    );
    previous = e;
  }
  const lastIndex = previous.index;
  assert(
    lastIndex >= snapIndex,
    () => `group ${groupId}: log ends at ${lastIndex}, before the snapshot ${snapIndex}`,
  );
  if (snapshot && entries.length > 0 && start.index < snapIndex) {
    const atSnap = entries[snapIndex - start.index - 1]!;
    assert(
      atSnap.term === snapshot.metadata.term,
      () =>
        `group ${groupId}: snapshot term ${snapshot.metadata.term} != log term ${atSnap.term} at ${snapIndex}`,
    );
  }
  assert(
    hard.commit <= lastIndex,
    () => `group ${groupId}: commit ${hard.commit} beyond the last index ${lastIndex}`,
  );
  assert(
    previous.term <= hard.term,
    () =>
      `group ${groupId}: last log term ${previous.term} exceeds the hard-state term ${hard.term}`,
  );
}
