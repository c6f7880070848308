// The compacted workload's checker (docs/chaos.md, "Compaction"). Compaction removes superseded
// records, so the queue checker's "every committed write is read back" does not apply; what must
// hold instead, from every write's outcome and acknowledged offset, the reads made during the run
// and the final read_committed read of the topic from offset 0:
// - no aborted write is ever read (a value, or a tombstone at an aborted write's offset);
// - no record read is one nobody wrote, nor a committed write at another offset than acknowledged;
// - each key's latest record in the final read is its last committed write, or a write of a
//   transaction whose outcome the run never learned that came after it; absent only when that
//   write is a tombstone (delete.retention.ms lets the cleaner remove it);
// - a key whose last committed write is a tombstone has no later non-null value (a resurrected key);
// - the cleaner really ran (cleans and bytes read > 0), or the run tested nothing.
import type { Outcome } from "../../../libs/verify/history.js";

export type CompactionAnomaly =
  | "aborted-read"
  | "phantom-record"
  | "offset-mismatch"
  | "latest-value-lost"
  | "tombstone-resurrected"
  | "cleaner-idle";

/** One keyed write of the workload; value null is a tombstone. */
export interface KvWrite {
  readonly partition: number;
  readonly key: string;
  readonly value: string | null;
  /** The offset the broker acknowledged (always known for a committed transaction's writes). */
  readonly offset?: number;
  readonly outcome: Outcome;
}

/** One record read under read_committed. */
export interface KvRecord {
  readonly partition: number;
  readonly offset: number;
  readonly key: string | null;
  readonly value: string | null;
}

/** The brokers' cleaner counters over the run (every incarnation of each broker summed). */
export interface CleanerTotals {
  readonly cleans: number;
  readonly bytesRead: number;
  readonly bytesWritten: number;
}

export interface CompactionExample {
  readonly type: CompactionAnomaly;
  readonly message: string;
  readonly details: Record<string, unknown>;
}

export interface CompactionCheck {
  readonly valid: boolean;
  readonly anomalies: Partial<Record<CompactionAnomaly, number>>;
  readonly examples: CompactionExample[];
  readonly stats: {
    readonly keys: number;
    readonly writes: number;
    readonly recordsRead: number;
    readonly tombstonesRead: number;
    /** Committed writes whose offset the final read no longer holds: what the cleaner removed. */
    readonly committedRemoved: number;
    /** Keys whose last committed write is a delete and that the final read no longer holds (tombstone removed). */
    readonly deletedKeysGone: number;
    /** Records read during the run. */
    readonly runReads: number;
  };
}

const EXAMPLES_PER_TYPE = 3;

export function checkCompaction(input: {
  readonly writes: readonly KvWrite[];
  readonly finalRead: readonly KvRecord[];
  readonly runReads: readonly KvRecord[];
  readonly cleaner: CleanerTotals;
}): CompactionCheck {
  const anomalies: Partial<Record<CompactionAnomaly, number>> = {};
  const examples: CompactionExample[] = [];
  const flag = (
    type: CompactionAnomaly,
    message: string,
    details: Record<string, unknown>,
  ): void => {
    anomalies[type] = (anomalies[type] ?? 0) + 1;
    if (examples.filter((e) => e.type === type).length < EXAMPLES_PER_TYPE)
      examples.push({ type, message, details });
  };
  const byValue = new Map<string, KvWrite>();
  const byOffset = new Map<string, KvWrite>();
  for (const w of input.writes) {
    if (w.value !== null) byValue.set(w.value, w);
    if (w.offset !== undefined) byOffset.set(`${w.partition}/${w.offset}`, w);
  }

  // Every record read, during the run or at the end: written, where acknowledged, never aborted.
  const checkRecord = (r: KvRecord, when: string): void => {
    const at = byOffset.get(`${r.partition}/${r.offset}`);
    const w = r.value !== null ? byValue.get(r.value) : at;
    const details = { when, record: r, write: w };
    if (w === undefined || w.key !== r.key || w.value !== r.value || w.partition !== r.partition) {
      flag("phantom-record", `${when}: ${describe(r)} matches no write`, details);
      return;
    }
    if (w.outcome === "fail") {
      flag("aborted-read", `${when}: ${describe(r)} is an aborted write`, details);
      return;
    }
    if (w.offset !== undefined && w.offset !== r.offset)
      flag(
        "offset-mismatch",
        `${when}: ${describe(r)} was acknowledged at offset ${w.offset}`,
        details,
      );
  };
  for (const r of input.runReads) checkRecord(r, "read during the run");
  for (const r of input.finalRead) checkRecord(r, "final read");

  // Each key's latest record in the final read against its last committed write.
  const latestRead = new Map<string, KvRecord>();
  for (const r of input.finalRead) {
    if (r.key === null) continue;
    const prev = latestRead.get(r.key);
    if (prev === undefined || r.offset > prev.offset) latestRead.set(r.key, r);
  }
  const writesByKey = new Map<string, KvWrite[]>();
  for (const w of input.writes) {
    const list = writesByKey.get(w.key) ?? [];
    list.push(w);
    writesByKey.set(w.key, list);
  }
  const readOffsets = new Set(input.finalRead.map((r) => `${r.partition}/${r.offset}`));
  let committedRemoved = 0;
  let deletedKeysGone = 0;
  for (const [key, writes] of writesByKey) {
    let lastOk: KvWrite | undefined;
    for (const w of writes)
      if (w.outcome === "ok") {
        if (!readOffsets.has(`${w.partition}/${w.offset}`)) committedRemoved++;
        if (lastOk === undefined || w.offset! > lastOk.offset!) lastOk = w;
      }
    // Writes whose transaction's outcome the run never learned, possibly after lastOk.
    const later = writes.filter(
      (w) =>
        w.outcome === "unknown" &&
        (lastOk === undefined || w.offset === undefined || w.offset > lastOk.offset!),
    );
    const latest = latestRead.get(key);
    if (lastOk?.value === null && latest === undefined) deletedKeysGone++;
    const candidates = lastOk ? [lastOk, ...later] : later;
    const explained =
      latest === undefined
        ? // Nothing left: only a delete may end a key (or a key nothing committed).
          lastOk === undefined || candidates.some((w) => w.value === null)
        : candidates.some(
            (w) =>
              // A later unknown write must sit after the last committed one.
              (w === lastOk || lastOk === undefined || latest.offset > lastOk.offset!) &&
              (w.value === null
                ? latest.value === null && (w.offset === undefined || w.offset === latest.offset)
                : latest.value === w.value),
          );
    if (explained) continue;
    const details = { key, lastCommitted: lastOk, latestRead: latest, laterUnknown: later.length };
    if (lastOk?.value === null)
      flag(
        "tombstone-resurrected",
        `${key} was deleted at offset ${lastOk.offset} (committed) but reads ${latest ? describe(latest) : "nothing"}`,
        details,
      );
    else
      flag(
        "latest-value-lost",
        `${key}'s last committed write ${lastOk ? `${JSON.stringify(lastOk.value)} at offset ${lastOk.offset}` : "(none)"} but the final read's latest is ${latest ? describe(latest) : "nothing"}`,
        details,
      );
  }

  if (input.cleaner.cleans <= 0 || input.cleaner.bytesRead <= 0)
    flag(
      "cleaner-idle",
      `no broker's cleaner completed a clean (cleans ${input.cleaner.cleans}, bytes read ${input.cleaner.bytesRead}): the run tested nothing`,
      { cleaner: input.cleaner },
    );

  return {
    valid: Object.keys(anomalies).length === 0,
    anomalies,
    examples,
    stats: {
      keys: writesByKey.size,
      writes: input.writes.length,
      recordsRead: input.finalRead.length,
      tombstonesRead: input.finalRead.filter((r) => r.value === null).length,
      committedRemoved,
      deletedKeysGone,
      runReads: input.runReads.length,
    },
  };
}

function describe(r: KvRecord): string {
  return `${r.key}=${r.value === null ? "null" : JSON.stringify(r.value.slice(0, 40))} at ${r.partition}/${r.offset}`;
}
