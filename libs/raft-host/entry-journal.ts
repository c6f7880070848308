// The process's entry journal: where the Raft host makes the log entries of groups with an
// applied log (topic partitions, whose records live in segment files) durable. One append-only
// file at a time, opened with O_DSYNC and written with one writev per host write for every such
// group of the process (group commit; the writev returns once the data is durable, as a writev
// followed by fdatasync would, in one thread-pool task instead of two), and nothing else: no
// memtable, no compaction, which is what level spent most of a partition entry's write cost on
// (docs/storage.md).
//
// Records (journal-codec.ts) say "group G's log from index i is these entries" (replacing what
// it held from i) or "group G's log is empty after (index, term)". Recovery folds them in
// file order. A file is deleted, oldest first, once no group needs anything in it: every group
// with entries there has compacted past them (its segments and snapshot hold them) or was
// reset later. A group that holds the oldest file back for long is asked to compact
// (pinning()); a recovered group that was never opened again is restated into the new file.
import { nextLoopIteration, SYNC_WRITE_BYTES_MAX } from "../common/loop-writes.js";
import { noteSynced } from "../common/sync-manifest.js";
import { constants as fsConstants, mkdirSync, readdirSync, writeSync, writevSync } from "node:fs";
import { open, readFile, truncate, unlink, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "pino";
import type { Entry } from "../raft/types.js";
import { decodeJournal, encodeJournalRecord, type JournalRecord } from "./journal-codec.js";

export interface EntryJournalOptions {
  /** A new file starts once the current one holds this much (default 32 MiB). */
  readonly fileBytesMax?: number;
  /** Past this many files, groups holding the oldest back are asked to compact (default 4). */
  readonly filesBeforeCompactingMax?: number;
}

interface JournalFile {
  readonly seq: number;
  readonly path: string;
  bytes: number;
  /** Highest index each group still has live in this file. */
  readonly lastIndex: Map<string, number>;
}

export interface JournalStats {
  fsyncs: number;
  bytesWritten: number;
  filesDeleted: number;
}

const FILE_SUFFIX = ".journal";
/** A new file ("wx"), every write durable on return (O_DSYNC: data and the size, as fdatasync). */
const JOURNAL_OPEN_FLAGS =
  fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_DSYNC;

export class EntryJournal {
  readonly stats: JournalStats = { fsyncs: 0, bytesWritten: 0, filesDeleted: 0 };
  private readonly files: JournalFile[] = [];
  /** Entries of each group below or at this index are not needed any more. */
  private readonly released = new Map<string, number>();
  /** Files before this sequence number hold nothing of the group (it was reset after them). */
  private readonly resetSeq = new Map<string, number>();
  /** The last index each group wrote, to see when a record replaces older entries. */
  private readonly lastWritten = new Map<string, number>();
  private handle: FileHandle | undefined;
  private readonly fileBytesMax: number;
  private readonly filesBeforeCompactingMax: number;
  private restating: JournalRecord[] = [];

  private constructor(
    private readonly dir: string,
    private readonly logger: Logger,
    /** Folded logs of groups found on disk and not opened yet. */
    private readonly recovered: Map<string, Entry[]>,
    options: EntryJournalOptions,
  ) {
    this.fileBytesMax = options.fileBytesMax ?? 32 * 1024 * 1024;
    this.filesBeforeCompactingMax = options.filesBeforeCompactingMax ?? 4;
  }

  /** Reads every file (a torn tail of the last one is cut off), folding each group's log. */
  static async open(
    dir: string,
    logger: Logger,
    options: EntryJournalOptions = {},
  ): Promise<EntryJournal> {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const names = readdirSync(dir)
      .filter((n) => n.endsWith(FILE_SUFFIX))
      .sort();
    const logs = new Map<string, Entry[]>();
    const files: JournalFile[] = [];
    for (let i = 0; i < names.length; i++) {
      const path = join(dir, names[i]!);
      const buf = await readFile(path);
      const decoded = decodeJournal(buf);
      if (decoded.stop !== undefined) {
        // Only the last file can end in a torn write: files before it were complete and synced
        // before the next one was started.
        if (i < names.length - 1)
          throw new Error(
            `entry journal ${path}: corrupt record at byte ${decoded.validBytes} (${decoded.stop}), not at the end of the journal`,
          );
        logger.warn(
          { path, at: decoded.validBytes, bytes: buf.byteLength, reason: decoded.stop },
          "entry journal: torn tail cut off",
        );
        await truncate(path, decoded.validBytes);
      }
      const file: JournalFile = {
        seq: Number(names[i]!.slice(0, -FILE_SUFFIX.length)),
        path,
        bytes: decoded.validBytes,
        lastIndex: new Map(),
      };
      for (const r of decoded.records) {
        if (r.kind === "reset") {
          logs.delete(r.groupId);
          for (const f of files) f.lastIndex.delete(r.groupId);
          file.lastIndex.delete(r.groupId);
          continue;
        }
        logs.set(r.groupId, foldEntries(logs.get(r.groupId), r.entries));
        clampOlder(files, r.groupId, r.entries[0]!.index);
        file.lastIndex.set(r.groupId, r.entries[r.entries.length - 1]!.index);
      }
      files.push(file);
    }
    const journal = new EntryJournal(dir, logger, logs, options);
    journal.files.push(...files);
    for (const [g, entries] of logs) journal.lastWritten.set(g, entries[entries.length - 1]!.index);
    logger.debug({ files: files.length, groups: logs.size }, "entry journal opened");
    return journal;
  }

  /** The recovered log of a group being opened (undefined if the journal holds none). */
  take(groupId: string): Entry[] | undefined {
    const entries = this.recovered.get(groupId);
    this.recovered.delete(groupId);
    return entries;
  }

  /**
   * Appends records and makes them durable (one O_DSYNC writev). One call at a time, in
   * staging order. Then applies `releases` and deletes the files nothing needs any more.
   */
  async write(
    records: readonly JournalRecord[],
    releases: readonly JournalRelease[] = [],
  ): Promise<void> {
    const all = this.restating.length > 0 ? [...this.restating, ...records] : records;
    this.restating = [];
    if (all.length > 0) {
      const file = await this.fileForWrite();
      const parts: Uint8Array[] = [];
      let bytes = 0;
      for (const r of all) {
        for (const p of encodeJournalRecord(r)) {
          parts.push(p);
          bytes += p.byteLength;
        }
        this.noteWritten(file, r);
      }
      // O_DSYNC: durable when it returns (libuv splits more than IOV_MAX parts into several
      // writes, each durable before the next). A small write is made on the event loop itself:
      // what waits for it (a follower's answer, the leader's own durable report) would
      // otherwise wait for two more wake-ups, a thread-pool worker's and then the event loop's.
      // A batch is small when the process is not busy (it holds what arrived during the
      // previous write); the blocking O_DSYNC writev takes p50 0.6 ms, p99 7 ms on the test VM.
      if (bytes <= SYNC_WRITE_BYTES_MAX) {
        await nextLoopIteration(); // a leader's Appends leave before the loop blocks
        writevAllSync(this.handle!.fd, parts, bytes);
      } else await this.handle!.writev(parts);
      file.bytes += bytes;
      noteSynced(file.path, file.bytes);
      this.stats.fsyncs += 1;
      this.stats.bytesWritten += bytes;
    }
    for (const r of releases)
      this.released.set(r.groupId, Math.max(this.released.get(r.groupId) ?? 0, r.index));
    await this.retire();
  }

  /** Groups (open ones: not recovered and waiting) that hold the oldest file back while the journal is long. */
  pinning(): string[] {
    if (this.files.length <= this.filesBeforeCompactingMax) return [];
    const oldest = this.files[0]!;
    const out: string[] = [];
    for (const [g, last] of oldest.lastIndex) {
      if (this.frees(oldest, g, last)) continue;
      const entries = this.recovered.get(g);
      if (entries === undefined) {
        out.push(g);
        continue;
      }
      // Recovered and not opened (yet): carry its log forward into the next write.
      if (!this.restating.some((r) => r.groupId === g))
        this.restating.push({ kind: "entries", groupId: g, entries });
    }
    return out;
  }

  /** At open: the group's entries up to index are compacted (its durable log start). */
  release(groupId: string, index: number): void {
    this.released.set(groupId, Math.max(this.released.get(groupId) ?? 0, index));
  }

  /** Files on disk (for tests and diagnostics). */
  fileCount(): number {
    return this.files.length;
  }

  async close(): Promise<void> {
    await this.handle?.close();
    this.handle = undefined;
  }

  private noteWritten(file: JournalFile, r: JournalRecord): void {
    if (r.kind === "reset") {
      this.resetSeq.set(r.groupId, file.seq);
      this.released.set(r.groupId, r.index);
      this.lastWritten.set(r.groupId, r.index);
      return;
    }
    const first = r.entries[0]!.index;
    const last = r.entries[r.entries.length - 1]!.index;
    // A record that replaces entries: older files no longer hold anything live at or after it.
    if (first <= (this.lastWritten.get(r.groupId) ?? 0))
      clampOlder(this.files, r.groupId, first, file);
    file.lastIndex.set(r.groupId, last);
    this.lastWritten.set(r.groupId, last);
    // A restated recovered log: everything before it is carried in this file now.
    if (this.recovered.get(r.groupId) === r.entries)
      this.released.set(r.groupId, Math.max(this.released.get(r.groupId) ?? 0, first - 1));
  }

  private frees(file: JournalFile, groupId: string, last: number): boolean {
    return (
      (this.resetSeq.get(groupId) ?? -1) > file.seq || (this.released.get(groupId) ?? 0) >= last
    );
  }

  private async retire(): Promise<void> {
    while (this.files.length > 1) {
      const oldest = this.files[0]!;
      for (const [g, last] of oldest.lastIndex) if (!this.frees(oldest, g, last)) return;
      this.files.shift();
      await unlink(oldest.path);
      this.stats.filesDeleted += 1;
      this.logger.debug({ path: oldest.path }, "entry journal: file deleted");
    }
  }

  /** The file to append to: a new one after opening (never appended to a recovered file) and past fileBytesMax. */
  private async fileForWrite(): Promise<JournalFile> {
    const current = this.files[this.files.length - 1];
    if (this.handle !== undefined && current !== undefined && current.bytes < this.fileBytesMax)
      return current;
    await this.handle?.close();
    const seq = (current?.seq ?? 0) + 1;
    const path = join(this.dir, `${String(seq).padStart(20, "0")}${FILE_SUFFIX}`);
    this.handle = await open(path, JOURNAL_OPEN_FLAGS);
    const file: JournalFile = { seq, path, bytes: 0, lastIndex: new Map() };
    this.files.push(file);
    return file;
  }
}

/** After a write lands, the group needs none of its journaled entries at or below index. */
export interface JournalRelease {
  readonly groupId: string;
  readonly index: number;
}

/** A group's log after a record that replaces it from the record's first index (log is reused). */
export function foldEntries(log: Entry[] | undefined, entries: readonly Entry[]): Entry[] {
  const first = entries[0]!.index;
  if (
    log === undefined ||
    log.length === 0 ||
    first <= log[0]!.index ||
    first > log[log.length - 1]!.index + 1
  ) {
    // A gap: what came before was compacted (or is stale); the check against the group's log
    // start decides at open.
    return entries.slice();
  }
  log.length = first - log[0]!.index;
  for (const e of entries) log.push(e);
  return log;
}

/** Entries of the group at or after `from` in files other than `except` are dead. */
function clampOlder(
  files: readonly JournalFile[],
  groupId: string,
  from: number,
  except?: JournalFile,
): void {
  for (const f of files) {
    if (f === except) continue;
    const last = f.lastIndex.get(groupId);
    if (last === undefined || last < from) continue;
    if (from - 1 <= 0) f.lastIndex.delete(groupId);
    else f.lastIndex.set(groupId, from - 1);
  }
}

/** writev on the event loop; a short write (a full disk, a signal) has its rest written, or throws. */
function writevAllSync(fd: number, parts: readonly Uint8Array[], bytes: number): void {
  const written = writevSync(fd, parts as Uint8Array[]);
  if (written === bytes) return;
  const rest = Buffer.concat(parts).subarray(written);
  for (let at = 0; at < rest.byteLength;) at += writeSync(fd, rest, at);
}
