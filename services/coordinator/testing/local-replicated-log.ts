// Test support: an in-process stand-in for one Raft group replicated on several nodes, for unit
// tests of the coordinator's failover logic before (and apart from) the real raft host. One
// shared log; every live replica applies every committed entry to its own state machine, in
// order; one replica is leader at a time. Commits can be paused to observe pending states.
// Each node sees leader changes as its raft host reports them (leaderChanges(nodeId)).
import { assert } from "../../../libs/common/assert.js";
import { TernError } from "../../../libs/common/errors.js";
import type { NodeId, RaftStatus, Entry } from "../../../libs/raft/types.js";
import type { LeaderChange, ProposeResult, RaftGroup } from "../../../libs/raft-host/api.js";
import type { StateMachine } from "../../../libs/raft-host/state-machine.js";

interface Replica {
  readonly nodeId: NodeId;
  readonly sm: StateMachine;
  applied: number;
  alive: boolean;
  readonly listeners: Set<(change: LeaderChange) => void>;
}

interface PendingProposal {
  readonly index: number;
  readonly term: number;
  readonly proposer: NodeId;
  readonly resolve: (r: ProposeResult) => void;
  readonly reject: (e: unknown) => void;
}

export class LocalReplicatedLog {
  private readonly entries: Array<{ index: number; term: number; data: Uint8Array }> = [];
  private readonly replicas = new Map<NodeId, Replica>();
  private pending: PendingProposal[] = [];
  private leaderId: NodeId = -1;
  private currentTerm = 0;
  private committed = 0;
  private paused = false;

  constructor(readonly groupId: string) {}

  addReplica(nodeId: NodeId, sm: StateMachine): RaftGroup {
    assert(!this.replicas.has(nodeId), "replica added once");
    this.replicas.set(nodeId, { nodeId, sm, applied: 0, alive: true, listeners: new Set() });
    return this.groupView(nodeId);
  }

  /** The leader-change signal of nodeId's raft host, for this group (RaftHostApi.onLeaderChange). */
  leaderChanges(nodeId: NodeId): {
    onLeaderChange(listener: (change: LeaderChange) => void): () => void;
  } {
    const replica = this.replicas.get(nodeId);
    assert(replica !== undefined, "leader changes of a known replica");
    return {
      onLeaderChange: (listener) => {
        replica.listeners.add(listener);
        return () => replica.listeners.delete(listener);
      },
    };
  }

  /** What a live replica's host reports when it learns of a new leader or term. */
  private notify(replica: Replica): void {
    if (!replica.alive) return;
    const change: LeaderChange = {
      groupId: this.groupId,
      leader: this.leaderId,
      term: this.currentTerm,
    };
    for (const listener of [...replica.listeners]) listener(change);
  }

  /** Elects nodeId in a new term; the old leader (if alive) learns it stepped down. */
  elect(nodeId: NodeId): void {
    const replica = this.replicas.get(nodeId);
    assert(replica?.alive, "elect a live replica");
    const old = this.leaderId;
    this.currentTerm++;
    this.leaderId = nodeId;
    // Uncommitted proposals of the old term are lost, as when a new leader overwrites them.
    this.entries.length = this.committed;
    for (const p of this.pending)
      p.reject(new TernError("NOT_LEADER_OR_FOLLOWER", "leadership changed", { leader: nodeId }));
    this.pending = [];
    if (old >= 0 && old !== nodeId && this.replicas.get(old)?.alive)
      this.replicas.get(old)!.sm.onRoleChange?.(false, this.currentTerm);
    replica.sm.onRoleChange?.(true, this.currentTerm);
    for (const r of this.replicas.values()) this.notify(r);
  }

  /** SIGKILL: the replica stops applying and answering; if it led, there is no leader until elect(). */
  kill(nodeId: NodeId): void {
    const replica = this.replicas.get(nodeId);
    assert(replica !== undefined, "kill a known replica");
    replica.alive = false;
    if (this.leaderId === nodeId) {
      this.leaderId = -1;
      this.entries.length = this.committed;
      for (const p of this.pending)
        p.reject(new TernError("NOT_LEADER_OR_FOLLOWER", "leader died", { leader: -1 }));
      this.pending = [];
    }
  }

  /**
   * Check-quorum: the leader steps down without a new leader (cut off from its followers). Its
   * pending proposals stay pending, outcome unknown, as in Raft: a later leader may still commit
   * or overwrite them (resumeCommits commits them here).
   */
  stepDown(nodeId: NodeId): void {
    assert(this.leaderId === nodeId, "only the leader steps down");
    this.leaderId = -1;
    this.replicas.get(nodeId)!.sm.onRoleChange?.(false, this.currentTerm);
    this.notify(this.replicas.get(nodeId)!);
  }

  pauseCommits(): void {
    this.paused = true;
  }

  resumeCommits(): void {
    this.paused = false;
    this.commitAll();
  }

  term(): number {
    return this.currentTerm;
  }

  /** Entries appended so far (committed or not). */
  get length(): number {
    return this.entries.length;
  }

  private propose(nodeId: NodeId, data: Uint8Array): Promise<ProposeResult> {
    if (this.leaderId !== nodeId || !this.replicas.get(nodeId)!.alive) {
      return Promise.reject(
        new TernError("NOT_LEADER_OR_FOLLOWER", "not the leader", { leader: this.leaderId }),
      );
    }
    const index = this.entries.length + 1;
    this.entries.push({ index, term: this.currentTerm, data });
    return new Promise<ProposeResult>((resolve, reject) => {
      this.pending.push({ index, term: this.currentTerm, proposer: nodeId, resolve, reject });
      // Commit on a later turn, like a real round trip.
      setImmediate(() => this.commitAll());
    });
  }

  private commitAll(): void {
    if (this.paused) return;
    this.committed = this.entries.length;
    const results = new Map<number, unknown>();
    for (const replica of this.replicas.values()) {
      if (!replica.alive) continue;
      while (replica.applied < this.committed) {
        const entry = this.entries[replica.applied]!;
        const result = replica.sm.apply(entry);
        replica.applied++;
        if (replica.nodeId === this.leaderId) results.set(entry.index, result);
      }
    }
    const done = this.pending.filter((p) => p.index <= this.committed);
    this.pending = this.pending.filter((p) => p.index > this.committed);
    for (const p of done) p.resolve({ index: p.index, term: p.term, result: results.get(p.index) });
  }

  private groupView(nodeId: NodeId): RaftGroup {
    const replica = (): Replica => this.replicas.get(nodeId)!;
    return {
      groupId: this.groupId,
      propose: <R>(data: Uint8Array) => this.propose(nodeId, data) as Promise<ProposeResult<R>>,
      readBarrier: async () => undefined,
      waitApplied: async () => undefined,
      isLeader: () => this.leaderId === nodeId && replica().alive,
      leader: () => this.leaderId,
      term: () => this.currentTerm,
      appliedIndex: () => replica().applied,
      status: () => ({}) as RaftStatus,
      readEntries: () => [] as Entry[],
      firstIndex: () => 1,
      transferLeadership: () => undefined,
      addVoter: async () => undefined,
      removeNode: async () => undefined,
    };
  }
}
