// Bounded sets of callers waiting on a group: proposals keyed by log index, and callers
// waiting for the applied index to reach a point. Deadlines are checked on every tick (no
// per-request timers), so 10^4 in-flight proposals cost nothing until they expire.
import { TernError } from "../common/errors.js";

export interface Pending<T> {
  readonly index: number;
  readonly term: number;
  readonly deadlineMs: number;
  readonly resolve: (value: T) => void;
  readonly reject: (error: Error) => void;
}

export interface AppliedWaiter {
  readonly index: number;
  readonly deadlineMs: number;
  readonly resolve: () => void;
  readonly reject: (error: Error) => void;
}

/** Proposals awaiting commit+apply, in index order (a Map keeps insertion order = index order). */
export class PendingProposals<T> {
  private readonly byIndex = new Map<number, Pending<T>>();
  constructor(private readonly max: number) {}

  get size(): number {
    return this.byIndex.size;
  }
  full(): boolean {
    return this.byIndex.size >= this.max;
  }

  add(p: Pending<T>): void {
    this.byIndex.set(p.index, p);
  }

  take(index: number): Pending<T> | undefined {
    const p = this.byIndex.get(index);
    if (p) this.byIndex.delete(index);
    return p;
  }

  /** Rejects every proposal at or below index (their entries were skipped by a snapshot). */
  rejectUpTo(index: number, error: () => Error): void {
    for (const [i, p] of this.byIndex) {
      if (i > index) break;
      this.byIndex.delete(i);
      p.reject(error());
    }
  }

  /** Rejects proposals whose (index, term) no longer matches the local log. */
  rejectOverwritten(termAt: (index: number) => number | undefined, error: () => Error): void {
    for (const [i, p] of this.byIndex) {
      const term = termAt(i);
      if (term !== undefined && term !== p.term) {
        this.byIndex.delete(i);
        p.reject(error());
      }
    }
  }

  expire(nowMs: number): void {
    for (const [i, p] of this.byIndex) {
      if (p.deadlineMs > nowMs) continue;
      this.byIndex.delete(i);
      p.reject(
        new TernError(
          "REQUEST_TIMED_OUT",
          `proposal at index ${i} not applied before its deadline (outcome unknown)`,
        ),
      );
    }
  }

  rejectAll(error: () => Error): void {
    const all = [...this.byIndex.values()];
    this.byIndex.clear();
    for (const p of all) p.reject(error());
  }
}

export class AppliedWaiters {
  private waiters: AppliedWaiter[] = [];
  constructor(private readonly max: number) {}

  get size(): number {
    return this.waiters.length;
  }
  full(): boolean {
    return this.waiters.length >= this.max;
  }

  add(w: AppliedWaiter): void {
    this.waiters.push(w);
  }

  release(applied: number): void {
    if (this.waiters.length === 0) return;
    const keep: AppliedWaiter[] = [];
    for (const w of this.waiters) {
      if (w.index <= applied) w.resolve();
      else keep.push(w);
    }
    this.waiters = keep;
  }

  expire(nowMs: number): void {
    if (this.waiters.length === 0) return;
    const keep: AppliedWaiter[] = [];
    for (const w of this.waiters) {
      if (w.deadlineMs <= nowMs)
        w.reject(
          new TernError("REQUEST_TIMED_OUT", `index ${w.index} not applied before the deadline`),
        );
      else keep.push(w);
    }
    this.waiters = keep;
  }

  rejectAll(error: () => Error): void {
    const all = this.waiters;
    this.waiters = [];
    for (const w of all) w.reject(error());
  }
}
