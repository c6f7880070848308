// A SegmentedLog seen by the Raft host as a group's applied log (libs/raft-host/applied-log.ts):
// records become Raft entries, and the oldest segment's checkpoint becomes the snapshot a
// follower behind the log's first entry installs.
import type { AppliedLog } from "../raft-host/applied-log.js";
import { encodeSnapshotEnvelope } from "../raft-host/snapshot-envelope.js";
import type { Entry, EntryType, Snapshot } from "../raft/types.js";
import type { SegmentedLog } from "./segmented-log.js";

export class SegmentedAppliedLog implements AppliedLog {
  constructor(
    private readonly log: SegmentedLog,
    private readonly onOpenAt: (applied: number) => void,
  ) {}

  firstIndex(): number {
    return this.log.firstIndex();
  }
  lastIndex(): number {
    return this.log.lastIndex();
  }
  term(index: number): number | undefined {
    return this.log.term(index);
  }

  cached(lo: number, hi: number, maxBytes: number): Entry[] | undefined {
    const records = this.log.cached(lo, hi, maxBytes);
    return records?.map((r) => ({
      index: r.index,
      term: r.term,
      type: r.entryType as EntryType,
      data: r.data,
    }));
  }

  sync(): Promise<void> {
    return this.log.sync();
  }

  onReadAhead(listener: () => void): () => void {
    return this.log.onReadAhead(listener);
  }

  snapshotBeforeFirst(): Snapshot {
    const c = this.log.checkpoint();
    return {
      metadata: {
        index: c.index,
        term: c.term,
        confState: { voters: [...c.voters], learners: [...c.learners], outgoingVoters: [] },
      },
      data: encodeSnapshotEnvelope(c.state, c.index),
    };
  }

  openAt(applied: number): void {
    this.onOpenAt(applied);
  }
}
