// What a state machine that keeps its own log of applied entries (a topic partition's segment
// files) offers the host. The host then hands it every applied entry (empty ones and conf
// changes too, so the log has no holes), and the Raft core reads entries older than the
// host's in-memory tail from it: a follower that fell behind, or a new replica, is caught up by
// ordinary appends streamed from that log, and only a follower behind its first entry gets a
// snapshot (the state just before that entry).
import type { Entry, Snapshot } from "../raft/types.js";

export interface AppliedLog {
  /** First entry held (lastIndex() + 1 when empty). */
  firstIndex(): number;
  lastIndex(): number;
  /** Term of an entry held, or of the entry just before the first; undefined otherwise. */
  term(index: number): number | undefined;
  /**
   * Entries [lo, hi) if they are in memory now (about maxBytes, at least one); undefined when
   * they must be read from disk first: the read starts, and onReadAhead listeners hear when it
   * lands.
   */
  cached(lo: number, hi: number, maxBytes: number): Entry[] | undefined;
  onReadAhead(listener: () => void): () => void;
  /** Makes everything appended so far durable (before the host compacts its own copy). */
  sync(): Promise<void>;
  /** A snapshot at firstIndex() - 1: the state before the first entry, as host snapshot data. */
  snapshotBeforeFirst(): Snapshot;
  /**
   * Called once when the group opens, after any restore: entries after `applied` are dropped
   * (the host applies them again from its own log). Throws AppliedLogBehindError when the log
   * ends before `applied` (files lost or cut below what was synced): the group does not open.
   * (It cannot simply start its log over: the leader's progress says this replica holds those
   * entries, and Raft never lowers a match index; a replica that lost its disk must leave the
   * group and join again, as a blank data directory does.) openAt(0) also empties the state
   * machine (a new group).
   */
  openAt(applied: number): void;
}

/** The applied log lost entries the host had already compacted from its own log. */
export class AppliedLogBehindError extends Error {
  constructor(
    readonly groupId: string,
    readonly lastIndex: number,
    readonly applied: number,
  ) {
    super(`${groupId}: the applied log ends at ${lastIndex}, before the applied index ${applied}`);
    this.name = "AppliedLogBehindError";
  }
}
