// A journaled group's state after a restart: level's part (hard state, conf state, snapshot,
// log start, and any entry runs written before the group's entries moved to the journal) with
// the journal's entries folded over it. The host writes a batch's level part before its journal
// part, so a crash can leave level one batch ahead of the journal, never behind; this is where
// that is reconciled (commit clamped to the log, a log that predates an installed snapshot
// dropped), and then the same checks as a level-only group are made.
import type { Entry } from "../raft/types.js";
import { foldEntries } from "./entry-journal.js";
import { checkGroup, type PersistedGroup } from "./level-store.js";

export function withJournal(
  groupId: string,
  level: PersistedGroup | undefined,
  journaled: Entry[] | undefined,
  entriesMax: number,
): PersistedGroup | undefined {
  // Nothing in level: the group was dropped (or never written); journal leftovers are stale.
  if (level === undefined) return undefined;
  let log: Entry[] = level.entries.slice();
  if (journaled !== undefined && journaled.length > 0) log = foldEntries(log, journaled);
  const start = level.logStart;
  const first = log[0]?.index ?? 0;
  const atStart =
    start.index >= first && start.index - first < log.length ? log[start.index - first] : undefined;
  // The entry at the log start disagrees: this log is from before a snapshot install whose
  // journal reset did not land. (An agreeing one is the same log, by Raft's log matching.)
  if (atStart !== undefined && atStart.term !== start.term) log = [];
  const live = log.filter((e) => e.index > start.index);
  if (live.length > 0 && live[0]!.index !== start.index + 1) {
    throw new Error(
      `group ${groupId}: the entry journal's log starts at ${live[0]!.index}, after the log start ${start.index}: entries are missing`,
    );
  }
  if (live.length > entriesMax)
    throw new Error(`group ${groupId}: more than ${entriesMax} log entries on disk`);
  const snapIndex = level.snapshot?.metadata.index ?? 0;
  const lastIndex = Math.max(live[live.length - 1]?.index ?? start.index, snapIndex);
  // A commit index written with entries whose journal write did not land: learned again from the leader.
  const hardState =
    level.hardState.commit > lastIndex
      ? { ...level.hardState, commit: lastIndex }
      : level.hardState;
  checkGroup(groupId, hardState, level.snapshot, start, live);
  return { ...level, hardState, entries: live };
}
