// The fake network: delivery after a seeded delay (which reorders), loss, duplication, and
// directional blocks that make symmetric or asymmetric partitions. Time is the simulator's
// tick counter; nothing here reads a clock.
import type { Random } from "../common/prng.js";
import type { Message, NodeId } from "../raft/types.js";

export interface NetworkFaults {
  lossRate: number;
  duplicateRate: number;
  /** Each message takes 1..delayTicksMax ticks. */
  delayTicksMax: number;
  /** Shuffle messages due at the same tick. */
  reorder: boolean;
}

export type SendOutcome = "queued" | "lost" | "partitioned";

/** Bound on messages in flight; beyond it the network drops (a real transport's queue limit). */
const IN_FLIGHT_MAX = 200_000;
const NODE_ID_SPAN = 1024;

export class SimNetwork {
  private readonly due = new Map<number, Message[]>();
  private readonly blocked = new Set<number>();
  private inFlight = 0;

  constructor(
    private readonly random: Random,
    public faults: NetworkFaults,
  ) {}

  send(m: Message, now: number): SendOutcome {
    if (this.blocked.has(m.from * NODE_ID_SPAN + m.to)) return "partitioned";
    if (this.inFlight >= IN_FLIGHT_MAX || this.random.bool(this.faults.lossRate)) return "lost";
    this.enqueue(m, now);
    if (this.random.bool(this.faults.duplicateRate)) this.enqueue(m, now);
    return "queued";
  }

  private enqueue(m: Message, now: number): void {
    const at = now + 1 + this.random.int(0, this.faults.delayTicksMax);
    let bucket = this.due.get(at);
    if (bucket === undefined) {
      bucket = [];
      this.due.set(at, bucket);
    }
    bucket.push(m);
    this.inFlight++;
  }

  /** Messages to deliver at tick `now`, in delivery order. */
  take(now: number): Message[] {
    const bucket = this.due.get(now);
    if (bucket === undefined) return [];
    this.due.delete(now);
    this.inFlight -= bucket.length;
    if (this.faults.reorder) {
      for (let i = bucket.length - 1; i > 0; i--) {
        const j = this.random.int(0, i + 1);
        const t = bucket[i]!;
        bucket[i] = bucket[j]!;
        bucket[j] = t;
      }
    }
    return bucket;
  }

  isBlocked(from: NodeId, to: NodeId): boolean {
    return this.blocked.has(from * NODE_ID_SPAN + to);
  }

  block(from: NodeId, to: NodeId): void {
    this.blocked.add(from * NODE_ID_SPAN + to);
  }

  heal(): void {
    this.blocked.clear();
  }
}
