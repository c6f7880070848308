// Storage with a crash model: every write goes to a volatile MemoryStorage at once and into a
// journal; sync() makes the journal durable. A crash keeps the durable state plus a random
// prefix of the journal (writes may or may not have reached the disk, in order) and loses the
// rest, which is exactly what a host that honours Ready.mustSync may lose.
import type { Random } from "../common/prng.js";
import { MemoryStorage, type InitialMembership } from "../raft/memory-storage.js";
import type { ConfState, Entry, HardState, Snapshot } from "../raft/types.js";

type Write = (s: MemoryStorage) => void;

/** Bound on unsynced writes; a run that never syncs is a bug in the simulator. */
const JOURNAL_MAX = 100_000;

export class CrashStorage {
  volatile: MemoryStorage;
  private durable: MemoryStorage;
  private journal: Write[] = [];
  /** Writes made durable so far (sync, syncTo, crash): journal[0] is write number `synced`. */
  private synced = 0;

  constructor(initial: InitialMembership) {
    this.volatile = new MemoryStorage(initial);
    this.durable = new MemoryStorage(initial);
  }

  private write(w: Write): void {
    if (this.journal.length >= JOURNAL_MAX)
      throw new Error("crash storage: journal limit reached without a sync");
    w(this.volatile);
    this.journal.push(w);
  }

  append(entries: readonly Entry[]): void {
    if (entries.length > 0) this.write((s) => s.append(entries));
  }
  setHardState(hs: HardState): void {
    this.write((s) => s.setHardState(hs));
  }
  setConfState(cs: ConfState): void {
    this.write((s) => s.setConfState(cs));
  }
  applySnapshot(snap: Snapshot): void {
    this.write((s) => s.applySnapshot(snap));
  }
  createSnapshot(index: number, cs: ConfState, data: Uint8Array): void {
    this.write((s) => {
      s.createSnapshot(index, cs, data);
    });
  }
  compact(index: number): void {
    this.write((s) => s.compact(index));
  }

  sync(): void {
    this.syncTo(this.mark());
  }

  /** Number of writes so far: syncTo(mark) later makes exactly these durable (async writes). */
  mark(): number {
    return this.synced + this.journal.length;
  }

  /** Makes the writes before `mark` durable, later ones stay in the journal (still losable). */
  syncTo(mark: number): void {
    const n = Math.min(Math.max(0, mark - this.synced), this.journal.length);
    for (let i = 0; i < n; i++) this.journal[i]!(this.durable);
    this.journal = this.journal.slice(n);
    this.synced += n;
  }

  /** The durable log holds (index, term), or compacted it into the durable snapshot. */
  holdsDurably(index: number, term: number): boolean {
    const d = this.durable;
    if (index <= d.snapshot().metadata.index) return true;
    return index <= d.lastIndex() && d.term(index) === term;
  }

  /** Loses a random suffix of the unsynced writes; the volatile view restarts from disk. */
  crash(random: Random): number {
    const kept = this.journal.length === 0 ? 0 : random.int(0, this.journal.length + 1);
    for (let i = 0; i < kept; i++) this.journal[i]!(this.durable);
    const lost = this.journal.length - kept;
    this.synced += this.journal.length;
    this.journal = [];
    this.volatile = this.durable.clone();
    return lost;
  }
}
