// The simulator's oracle. It watches every role change, append and apply across all replicas
// (including ones that crashed and restarted) and throws SimViolation the moment one of Raft's
// safety properties breaks.
import type { Entry, NodeId } from "../raft/types.js";
import { bytesHash } from "./trace-hash.js";

export class SimViolation extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SimViolation";
  }
}

interface LogView {
  termAt(index: number): number;
  firstIndex(): number;
}

const TERM_SPAN = 1 << 20;

export class SafetyChecker {
  private readonly leaderOfTerm = new Map<number, NodeId>();
  /** (index, term) -> payload hash and previous term: Log Matching by induction. */
  private readonly entries = new Map<number, { hash: number; prevTerm: number }>();
  /** index -> the entry every replica must apply there. */
  private readonly applied = new Map<number, { term: number; hash: number }>();
  private readonly leaderLast = new Map<NodeId, { term: number; last: number }>();
  leaders = 0;
  maxApplied = 0;
  maxAcked = 0;
  acked = 0;

  private fail(message: string): never {
    throw new SimViolation(message);
  }

  /** Election safety, then leader completeness for a node that is leader in `term`. */
  onLeader(id: NodeId, term: number, log: LogView): void {
    const known = this.leaderOfTerm.get(term);
    if (known === undefined) {
      this.leaderOfTerm.set(term, id);
      this.leaders++;
      this.checkCompleteness(id, term, log);
    } else if (known !== id) {
      this.fail(`election safety: nodes ${known} and ${id} are both leader in term ${term}`);
    }
  }

  private checkCompleteness(id: NodeId, term: number, log: LogView): void {
    for (let i = Math.max(1, log.firstIndex()); i <= this.maxApplied; i++) {
      const want = this.applied.get(i);
      if (want === undefined) continue;
      const have = log.termAt(i);
      if (have !== want.term) {
        this.fail(
          `leader completeness: leader ${id} of term ${term} has term ${have} at committed index ${i} (want ${want.term})`,
        );
      }
    }
  }

  /** Leader append-only: a leader only ever appends after its own last index within its term. */
  onLeaderAppend(id: NodeId, term: number, entries: readonly Entry[], lastBefore: number): void {
    if (entries.length === 0) return;
    const prev = this.leaderLast.get(id);
    const last = entries[entries.length - 1]!.index;
    if (prev && prev.term === term && entries[0]!.index <= prev.last) {
      this.fail(
        `leader append-only: leader ${id} rewrote index ${entries[0]!.index} <= ${prev.last} in term ${term}`,
      );
    }
    if (entries[0]!.index <= lastBefore && prev?.term === term) {
      this.fail(`leader append-only: leader ${id} overwrote its log at ${entries[0]!.index}`);
    }
    this.leaderLast.set(id, { term, last });
  }

  /** firstPrevTerm: the term before entries[0] in this node's log when they were handed out. */
  onAppend(id: NodeId, entries: readonly Entry[], firstPrevTerm: number): void {
    let prevTerm = firstPrevTerm;
    for (const e of entries) {
      if (e.term >= TERM_SPAN) this.fail(`term ${e.term} beyond the checker's range`);
      const key = e.index * TERM_SPAN + e.term;
      const hash = bytesHash(e.data) ^ (e.type << 31);
      const known = this.entries.get(key);
      if (known === undefined) {
        this.entries.set(key, { hash, prevTerm });
      } else if (known.hash !== hash) {
        this.fail(
          `log matching: node ${id} has a different entry at index ${e.index} term ${e.term}`,
        );
      } else if (prevTerm !== -1 && known.prevTerm !== -1 && known.prevTerm !== prevTerm) {
        this.fail(
          `log matching: node ${id} entry ${e.index}/${e.term} follows term ${prevTerm}, another replica's follows ${known.prevTerm}`,
        );
      }
      prevTerm = e.term;
    }
  }

  /** State machine safety: nobody applies a different entry at an index. */
  onApply(id: NodeId, e: Entry): void {
    const hash = bytesHash(e.data) ^ (e.type << 31);
    const known = this.applied.get(e.index);
    if (known === undefined) {
      this.applied.set(e.index, { term: e.term, hash });
      if (e.index > this.maxApplied) this.maxApplied = e.index;
    } else if (known.term !== e.term || known.hash !== hash) {
      this.fail(
        `state machine safety: node ${id} applied ${e.index}/${e.term}, another replica applied ${e.index}/${known.term}`,
      );
    }
  }

  onAck(index: number): void {
    this.acked++;
    if (index > this.maxAcked) this.maxAcked = index;
  }

  /** A read-index answer must cover every write acknowledged before the read was asked. */
  onReadState(id: NodeId, index: number, ackedAtRequest: number): void {
    if (index < ackedAtRequest) {
      this.fail(
        `read-index: node ${id} got read index ${index} but ${ackedAtRequest} was acknowledged before the request`,
      );
    }
  }

  appliedAt(index: number): { term: number; hash: number } | undefined {
    return this.applied.get(index);
  }
}
