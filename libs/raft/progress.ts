// The leader's view of one follower (etcd-raft's Progress): probe sends one Append at a time
// until the follower's log position is found; replicate pipelines up to the inflight window;
// snapshot waits for an InstallSnapshot to land.
import { Inflights } from "./inflights.js";

export type ProgressState = "probe" | "replicate" | "snapshot";

export class Progress {
  match = 0;
  next: number;
  state: ProgressState = "probe";
  /** Index of the snapshot in flight (snapshot state only). */
  pendingSnapshot = 0;
  /** Heard from since the last check-quorum round. */
  recentActive = false;
  /** Probe state: an Append is outstanding; wait for its answer or a heartbeat response. */
  probeSent = false;
  readonly inflights: Inflights;

  constructor(
    next: number,
    inflightMax: number,
    public isLearner: boolean,
    inflightBytesMax = 0,
  ) {
    this.next = next;
    this.inflights = new Inflights(inflightMax, inflightBytesMax);
  }

  private resetState(state: ProgressState): void {
    this.probeSent = false;
    this.pendingSnapshot = 0;
    this.state = state;
    this.inflights.reset();
  }

  becomeProbe(): void {
    if (this.state === "snapshot") {
      const pending = this.pendingSnapshot;
      this.resetState("probe");
      this.next = Math.max(this.match + 1, pending + 1);
    } else {
      this.resetState("probe");
      this.next = this.match + 1;
    }
  }

  becomeReplicate(): void {
    this.resetState("replicate");
    this.next = this.match + 1;
  }

  becomeSnapshot(snapshotIndex: number): void {
    this.resetState("snapshot");
    this.pendingSnapshot = snapshotIndex;
  }

  /** An acknowledgement up to n; false when it is stale. */
  maybeUpdate(n: number): boolean {
    const updated = this.match < n;
    if (updated) {
      this.match = n;
      this.probeSent = false;
    }
    this.next = Math.max(this.next, n + 1);
    return updated;
  }

  /** A rejection of the Append at index `rejected`; false when it is stale. */
  maybeDecrTo(rejected: number, matchHint: number): boolean {
    if (this.state === "replicate") {
      if (rejected <= this.match) return false;
      this.next = this.match + 1;
      return true;
    }
    if (this.next - 1 !== rejected) return false;
    this.next = Math.max(Math.min(rejected, matchHint + 1), this.match + 1);
    this.probeSent = false;
    return true;
  }

  isPaused(): boolean {
    switch (this.state) {
      case "probe":
        return this.probeSent;
      case "replicate":
        return this.inflights.full();
      case "snapshot":
        return true;
    }
  }

  /** Records an Append carrying entries up to lastIndex (count entries of `bytes` in all). */
  sentEntries(count: number, lastIndex: number, bytes = 0): void {
    if (this.state === "replicate") {
      if (count > 0) {
        this.next = lastIndex + 1;
        this.inflights.add(lastIndex, bytes);
      }
    } else if (this.state === "probe") {
      this.probeSent = true;
    }
  }
}
