// The multi-group Raft host: many cores in one process, one level database, one transport.
//
// Scheduling: there are no per-group timers. One process-wide interval ticks every group; a
// "turn" (scheduled with setImmediate whenever a group has work) drains the Ready of every
// group that was touched into the next level batch: ready-pipeline.ts, which the simulator
// (libs/sim) runs too. This file plugs in its ports: level and the entry journal for storage,
// the gRPC transport for the network, setImmediate for turns.
import type * as grpc from "@grpc/grpc-js";
import type { Logger } from "pino";
import { register as defaultRegistry, type Registry } from "prom-client";
import { assert } from "../common/assert.js";
import { TernError } from "../common/errors.js";
import { SeededRandom } from "../common/prng.js";
import { createRaftNode } from "../raft/raw-node.js";
import type { CreateRaftNode, Message, NodeId } from "../raft/types.js";
import type { GroupOptions, LeaderChange, RaftGroup, RaftHostApi } from "./api.js";
import type { BatchStore, DiskBatch, TurnScheduler } from "./pipeline-ports.js";
import { ReadyPipeline, type TurnStats } from "./ready-pipeline.js";
import { GroupStorage } from "./group-storage.js";
import { HeadBudget } from "./head-budget.js";
import { HostGroup, restoreFromSnapshot, type GroupHostContext } from "./host-group.js";
import { LayeredStorage } from "./layered-storage.js";
import { join } from "node:path";
import { EntryJournal } from "./entry-journal.js";
import { withJournal } from "./journal-recovery.js";
import { GroupKeys } from "./keys.js";
import { openSyncManifest } from "../common/sync-manifest.js";
import { LevelStore, type BatchOp } from "./level-store.js";
import { resolveLimits, type RaftHostLimits } from "./limits.js";
import { hostMetrics, registerGroupPositions, type HostMetrics } from "./metrics.js";
import { registerReplicationHealth } from "./replication-health.js";
import { RaftTransport } from "./transport.js";
import { NodeLiveness, reportNodeLost } from "./node-liveness.js";

/**
 * Quiesced groups with waiters are ticked only every this many ticks: their core's tick is a
 * no-op, only their waiters' deadlines need checking (late by less than this; a request on a
 * group wakes it). Quiesced groups without waiters are not ticked at all.
 */
const QUIESCED_SWEEP_TICKS = 5;
/**
 * A group created here whose preferred leader (first initial voter) is this node campaigns
 * after this many ticks, not a randomized election timeout: a new topic's partitions, and a
 * new cluster's controller quorum and internal partitions, get leaders in ~100 ms instead of
 * 1.5-3 s. Two ticks leave the other replicas, told of the group at about the same time, a
 * moment to open it; a pre-vote that still finds no replica there waits the normal timeout.
 */
const FIRST_CAMPAIGN_TICKS = 2;
/** Batches close() waits for: the one in flight and the one assembled behind it. */
const CLOSE_WRITES_MAX = 3;

/** Turns run after the current event-loop task; a turn's next round after the microtasks queued. */
const IMMEDIATE_TURNS: TurnScheduler = {
  soon: (turn) => setImmediate(turn),
  afterMicrotasks: (turn) => queueMicrotask(() => process.nextTick(turn)),
};

export interface RaftHostOptions {
  readonly nodeId: NodeId;
  readonly dataDir: string;
  readonly logger: Logger;
  /** One tick of every group's logical clock. */
  readonly tickMs: number;
  readonly electionTicks: number;
  readonly heartbeatTicks: number;
  /**
   * Heartbeat interval of idle groups (followers caught up, nothing pending); default a third of
   * the election timeout, so at least three land within the shortest timeout. Idle groups are
   * most of a process's groups: this sets its idle CPU (docs/raft-performance.md).
   */
  readonly idleHeartbeatTicks?: number;
  /**
   * Idle groups quiesce (no heartbeats, followers' election clocks stopped) while node-level
   * liveness beats (one frame per peer per idle heartbeat interval) say their leader's node is
   * up (default true; node-liveness.ts).
   */
  readonly quiesce?: boolean;
  readonly limits?: Partial<RaftHostLimits>;
  /** Peers of the same role by node id, "host:port". More can be added with setPeerAddress. */
  readonly peerAddresses?: ReadonlyMap<NodeId, string>;
  /** For tests and the simulator: another core implementation. */
  readonly createNode?: CreateRaftNode;
  /** Plain heartbeats (and responses) leave once per tick in one frame per peer (default true). */
  readonly deferHeartbeats?: boolean;
  /** prom-client metrics: false for none, a Registry (e.g. ServiceContext.metrics), or the default registry when omitted/true. */
  readonly metrics?: boolean | Registry;
}

/** Derives tick counts from ServiceConfig-style milliseconds (election 1500 / tick 50 = 30 ticks). */
export function ticksFromMs(config: {
  electionTimeoutMs: number;
  heartbeatIntervalMs: number;
  tickMs: number;
}): { tickMs: number; electionTicks: number; heartbeatTicks: number } {
  const electionTicks = Math.max(2, Math.round(config.electionTimeoutMs / config.tickMs));
  const heartbeatTicks = Math.max(1, Math.round(config.heartbeatIntervalMs / config.tickMs));
  assert(
    heartbeatTicks < electionTicks,
    "heartbeat interval must be shorter than the election timeout",
  );
  return { tickMs: config.tickMs, electionTicks, heartbeatTicks };
}

export function defaultIdleHeartbeatTicks(electionTicks: number, heartbeatTicks: number): number {
  return Math.max(heartbeatTicks, Math.floor(electionTicks / 3));
}

export async function openRaftHost(options: RaftHostOptions): Promise<RaftHost> {
  openSyncManifest(options.dataDir); // chaos test seam (TERN_SYNC_MANIFEST=1), else nothing
  const store = await LevelStore.open(options.dataDir);
  const journal = await EntryJournal.open(
    join(options.dataDir, "entry-journal"),
    options.logger.child({ component: "entry-journal" }),
  );
  return new RaftHost(options, store, journal);
}

export type { TurnStats } from "./ready-pipeline.js";

export class RaftHost implements RaftHostApi {
  readonly nodeId: NodeId;
  readonly limits: RaftHostLimits;
  readonly transport: RaftTransport;
  private readonly logger: Logger;
  private readonly groupsById = new Map<string, HostGroup>();
  /**
   * The groups the tick visits: all but the quiesced ones without waiters. A group joins on
   * every wake (a message, a request, a node down); the tick drops it once it is quiesced and
   * nothing waits on it, so an idle node's tick costs nothing per idle group.
   */
  private readonly awake = new Set<HostGroup>();
  private readonly opening = new Set<string>();
  /** Turns, batches and what waits for them (ready-pipeline.ts). */
  private readonly pipeline: ReadyPipeline;
  private readonly listeners = new Set<(c: LeaderChange) => void>();
  private readonly metrics: HostMetrics | undefined;
  private readonly headBudget: HeadBudget;
  private readonly unregisterPositions: (() => void) | undefined;
  private readonly unregisterReplicationHealth: (() => void) | undefined;
  private readonly createNode: CreateRaftNode;
  private readonly ticker: NodeJS.Timeout;
  private readonly liveness: NodeLiveness | undefined;
  private tickCount = 0;
  /** The write in flight (level, then the journal), for dropGroup and close to wait on. */
  private writing: Promise<void> | undefined;
  private closing = false;

  constructor(
    private readonly options: RaftHostOptions,
    private readonly store: LevelStore,
    private readonly journal: EntryJournal,
  ) {
    this.nodeId = options.nodeId;
    this.limits = resolveLimits(options.limits);
    this.headBudget = new HeadBudget(this.limits.journaledHeadBytesMax);
    this.logger = options.logger.child({ component: "raft-host" });
    this.createNode = options.createNode ?? createRaftNode;
    this.metrics =
      options.metrics === false
        ? undefined
        : hostMetrics(
            options.metrics === true || options.metrics === undefined ? undefined : options.metrics,
          );
    this.unregisterPositions =
      options.metrics === false
        ? undefined
        : registerGroupPositions(
            () => this.groupsById.values(),
            options.metrics === true || options.metrics === undefined ? undefined : options.metrics,
          );
    const registry =
      options.metrics === false
        ? undefined
        : options.metrics === true || options.metrics === undefined
          ? defaultRegistry
          : options.metrics;
    this.unregisterReplicationHealth =
      registry === undefined
        ? undefined
        : registerReplicationHealth(this.nodeId, () => this.groupsById.values(), registry);
    this.transport = new RaftTransport(
      this.nodeId,
      {
        deliver: (groupId, message) => this.deliver(groupId, message),
        unreachable: (groupId, peer) => this.groupsById.get(groupId)?.node.reportUnreachable(peer),
        snapshotDone: (groupId, peer, ok) => {
          const g = this.groupsById.get(groupId);
          if (!g) return;
          g.node.reportSnapshot(peer, ok);
          this.wake(g);
        },
        peerRestarted: (peer) =>
          this.liveness?.nodeDown(peer, this.groupsById.values(), (g) => this.wake(g)),
        peerLost: (peer) => reportNodeLost(peer, this.groupsById.values(), (g) => this.wake(g)),
      },
      this.limits,
      this.logger,
      options.deferHeartbeats ?? true,
      options.tickMs * options.electionTicks,
    );
    for (const [id, address] of options.peerAddresses ?? [])
      this.transport.setPeerAddress(id, address);
    const idleTicks =
      options.idleHeartbeatTicks ??
      defaultIdleHeartbeatTicks(options.electionTicks, options.heartbeatTicks);
    this.liveness =
      (options.quiesce ?? true)
        ? new NodeLiveness(this.transport, idleTicks, options.electionTicks)
        : undefined;
    this.pipeline = new ReadyPipeline(
      this.batchStore(),
      { flush: () => this.flushTransport() },
      IMMEDIATE_TURNS,
      {
        nodeId: this.nodeId,
        ...(this.metrics ? { metrics: this.metrics } : {}),
        failed: (err) => this.turnFailed(err),
      },
    );
    this.ticker = setInterval(() => this.tickAll(), options.tickMs);
  }

  /** Turns, writes and fsyncs so far. */
  get turnStats(): TurnStats {
    return this.pipeline.turnStats;
  }

  /** The RaftTransport service for the process's one gRPC server. */
  grpcService(): {
    definition: grpc.ServiceDefinition;
    implementation: grpc.UntypedServiceImplementation;
  } {
    return this.transport.grpcService();
  }

  // ---- RaftHostApi -----------------------------------------------------------------------

  async openGroup(options: GroupOptions): Promise<RaftGroup> {
    this.checkUsable();
    const id = options.groupId;
    assert(
      !this.groupsById.has(id) && !this.opening.has(id),
      () => `group ${id} is already open on node ${this.nodeId}`,
    );
    if (this.groupsById.size + this.opening.size >= this.limits.groupsMax) {
      throw new TernError(
        "THROTTLING_QUOTA_EXCEEDED",
        `node ${this.nodeId} already hosts ${this.limits.groupsMax} groups`,
      );
    }
    this.opening.add(id);
    try {
      const keys = new GroupKeys(id);
      // A group whose state machine keeps an applied log has its entries in the entry journal.
      const journaled = options.stateMachine.appliedLog !== undefined;
      const fromLevel = await this.store.loadGroup(
        keys,
        this.limits.logEntriesOnOpenMax,
        !journaled,
      );
      const persisted = journaled
        ? withJournal(id, fromLevel, this.journal.take(id), this.limits.logEntriesOnOpenMax)
        : fromLevel;
      let storage: GroupStorage;
      let applied = 0;
      if (persisted) {
        storage = GroupStorage.recover(keys, persisted, journaled);
        if (journaled) this.journal.release(id, persisted.logStart.index);
        const snap = storage.memory.snapshot();
        if (snap.metadata.index > 0) {
          restoreFromSnapshot(options.stateMachine, snap.data, snap.metadata.index, {
            term: snap.metadata.term,
            confState: snap.metadata.confState,
          });
          applied = snap.metadata.index;
        }
      } else {
        storage = GroupStorage.create(
          keys,
          options.initialVoters,
          this.pipeline.carryOps,
          journaled ? this.pipeline.nextWrite.journal : undefined,
        );
        this.pipeline.carryUrgent = true;
      }
      const appliedLog = options.stateMachine.appliedLog;
      appliedLog?.openAt(applied);
      const raftStorage =
        appliedLog === undefined ? storage.memory : new LayeredStorage(storage.memory, appliedLog);
      const node = this.createNode(
        this.raftConfig(applied),
        raftStorage,
        new SeededRandom(Math.floor(Math.random() * 2 ** 52)),
      );
      const group = new HostGroup(
        id,
        node,
        storage,
        options.stateMachine,
        this.groupContext(),
        applied,
      );
      if (journaled) this.headBudget.opened(group);
      if (persisted === undefined && options.initialVoters[0] === this.nodeId)
        node.campaignSoon?.(FIRST_CAMPAIGN_TICKS);
      // Entries read from the applied log's files: send the appends that waited for them.
      appliedLog?.onReadAhead(() => {
        if (group.dropped || this.closing) return;
        node.retryAppends?.();
        this.wake(group);
      });
      this.groupsById.set(id, group);
      this.logger.debug(
        {
          groupId: id,
          recovered: persisted !== undefined,
          applied,
          lastIndex: storage.memory.lastIndex(),
        },
        "raft group opened",
      );
      this.wake(group);
      return group;
    } finally {
      this.opening.delete(id);
    }
  }

  /** Applied entry bytes the journaled groups keep in memory until their next snapshots (head-budget.ts). */
  journaledHeadBytes(): number {
    return this.headBudget.usedBytes();
  }

  async dropGroup(groupId: string): Promise<void> {
    const group = this.groupsById.get(groupId);
    if (group) {
      group.dropped = true;
      if (group.storage.journaled) this.headBudget.closed(group);
      this.groupsById.delete(groupId);
      this.awake.delete(group);
      this.pipeline.active.delete(group);
      group.failAll(
        () =>
          new TernError(
            "UNKNOWN_TOPIC_OR_PARTITION",
            `group ${groupId} was dropped from node ${this.nodeId}`,
          ),
      );
    }
    // The batch being assembled loses this group's keys; the one in flight may still hold
    // some: delete after it lands.
    const keys = new GroupKeys(groupId);
    const p = this.pipeline;
    p.nextWrite.ops = p.nextWrite.ops.filter((op) => !hasPrefix(op.key, keys.prefix));
    p.dropCarried((op) => hasPrefix(op.key, keys.prefix));
    await this.writing;
    await this.store.deleteGroup(keys);
    // The journal forgets it too (a no-op record for a group that never had entries there).
    this.journal.take(groupId);
    p.nextWrite.journal = p.nextWrite.journal.filter((r) => r.groupId !== groupId);
    p.nextWrite.journal.push({ kind: "reset", groupId, index: 0, term: 0 });
    p.carryUrgent = true;
    p.schedule();
  }

  group(groupId: string): RaftGroup | undefined {
    return this.groupsById.get(groupId);
  }

  groups(): Iterable<RaftGroup> {
    return this.groupsById.values();
  }

  setPeerAddress(nodeId: NodeId, address: string): void {
    if (nodeId === this.nodeId) return;
    this.transport.setPeerAddress(nodeId, address);
  }

  onLeaderChange(listener: (change: LeaderChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async transferAllLeaderships(timeoutMs: number): Promise<void> {
    const deadlineMs = performance.now() + timeoutMs;
    const pollMs = Math.max(5, Math.min(50, this.options.tickMs));
    let askedMs = -Infinity;
    while (performance.now() < deadlineMs) {
      const leading = [...this.groupsById.values()].filter((g) => g.isLeader());
      if (leading.length === 0) return;
      // Ask again every few election timeouts: a transfer can be dropped if the target is slow.
      if (performance.now() - askedMs > this.options.tickMs * this.options.electionTicks) {
        for (const g of leading) this.transferOne(g);
        askedMs = performance.now();
      }
      await new Promise((r) => setTimeout(r, pollMs));
    }
    const still = [...this.groupsById.values()].filter((g) => g.isLeader()).length;
    if (still > 0)
      this.logger.warn({ groups: still }, "leaderships not transferred before the deadline");
  }

  private transferOne(g: HostGroup): void {
    const status = g.status();
    let best: NodeId = -1;
    let bestMatch = -1;
    for (const [id, pr] of status.progress) {
      if (id === this.nodeId || pr.isLearner) continue;
      if (pr.match > bestMatch) {
        best = id;
        bestMatch = pr.match;
      }
    }
    if (best >= 0) g.transferLeadership(best);
  }

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    const p = this.pipeline;
    p.closing = true;
    clearInterval(this.ticker);
    this.unregisterPositions?.();
    this.unregisterReplicationHealth?.();
    // Let the batch in flight and the one assembled land (no new turns run while closing).
    for (
      let i = 0;
      i < CLOSE_WRITES_MAX &&
      (p.inFlight || p.nextWrite.ops.length > 0 || p.nextWrite.journal.length > 0) &&
      !p.failure;
      i++
    ) {
      if (!p.inFlight) p.maybeStartWrite();
      await this.writing;
    }
    // Deferred commit indexes: not needed for safety, but a clean stop leaves nothing behind.
    if (p.carryOps.length > 0 && !p.failure) await this.store.write(p.carryOps, true);
    p.dropCarried(() => true);
    for (const g of this.groupsById.values())
      g.failAll(() => new TernError("SHUTTING_DOWN", `node ${this.nodeId} is shutting down`));
    this.transport.close();
    await this.store.close();
    await this.journal.close();
  }

  // ---- scheduling ------------------------------------------------------------------------

  private raftConfig(applied: number) {
    const l = this.limits;
    return {
      id: this.nodeId,
      electionTick: this.options.electionTicks,
      heartbeatTick: this.options.heartbeatTicks,
      idleHeartbeatTick:
        this.options.idleHeartbeatTicks ??
        defaultIdleHeartbeatTicks(this.options.electionTicks, this.options.heartbeatTicks),
      maxSizePerMsg: l.appendBytesMax,
      maxInflightMsgs: l.inflightMessagesMax,
      maxInflightBytes: l.inflightBytesMax,
      maxUncommittedEntriesSize: l.uncommittedBytesMax,
      maxCommittedSizePerReady: l.committedBytesPerReadyMax,
      preVote: true,
      checkQuorum: true,
      quiesce: this.liveness !== undefined,
      applied,
    };
  }

  private groupContext(): GroupHostContext {
    return {
      nodeId: this.nodeId,
      limits: this.limits,
      headBudget: this.headBudget,
      wake: (g) => this.wake(g),
      send: (groupId, m) => this.transport.send(groupId, m),
      onSnapshotSyncFailed: (groupId, error) =>
        this.logger.error(
          { groupId, err: error },
          "syncing the applied log before a snapshot failed; the snapshot is skipped",
        ),
      stageForNextBatch: (ops, journalRelease) => this.pipeline.stage(ops, journalRelease),
      leaderChanged: (change) => {
        this.metrics?.leaderChanges.inc();
        for (const l of this.listeners) l(change);
      },
      onApplied: (count) => this.metrics?.applied.inc(count),
      onCommitted: (latencyMs) => this.metrics?.commitLatency.observe(latencyMs / 1000),
      onSnapshot: (kind) => this.metrics?.snapshots.inc({ kind }),
      nowMs: () => performance.now(),
      isClosing: () => this.closing,
    };
  }

  private checkUsable(): void {
    if (this.pipeline.failure) throw this.pipeline.failure;
    if (this.closing) throw new TernError("SHUTTING_DOWN", `node ${this.nodeId} is shutting down`);
  }

  private deliver(groupId: string, message: Message): void {
    const g = this.groupsById.get(groupId);
    if (!g || this.closing || message.to !== this.nodeId) return;
    g.step(message);
  }

  private tickAll(): void {
    if (this.closing) return;
    // Plain heartbeats (and responses) queued since the last flush leave once per heartbeat
    // interval, all groups in one frame per peer: idle cost is per frame (HTTP/2, wakeups), so
    // groups whose heartbeats fall due on different ticks still share frames. Delay <= one
    // heartbeat interval, far below the election timeout; read-index heartbeats are urgent.
    this.tickCount += 1;
    this.flushTransport(this.tickCount % this.options.heartbeatTicks === 0);
    this.liveness?.tick(this.tickCount, this.groupsById.values(), (g) => this.wake(g));
    const nowMs = performance.now();
    // Only groups the tick gave work (heartbeats, a campaign) join the turn: an idle tick of
    // many groups schedules nothing.
    const sweep = this.tickCount % QUIESCED_SWEEP_TICKS === 0;
    for (const g of this.awake) {
      if (g.node.isQuiesced?.() === true) {
        if (!g.hasWaiters()) {
          this.awake.delete(g); // until a wake: anything that could end quiescence wakes
          continue;
        }
        if (!sweep) continue;
      }
      g.tick(nowMs);
      if (g.node.hasReady()) this.pipeline.active.add(g);
    }
    if (this.pipeline.active.size > 0 || this.pipeline.carryUrgent) this.pipeline.schedule();
  }

  private wake(g: HostGroup): void {
    if (!g.dropped) this.awake.add(g);
    this.pipeline.wake(g);
  }

  private turnFailed(err: Error): void {
    // A failed write leaves disk and memory apart: stop this node rather than guess.
    this.logger.fatal({ err }, "raft host turn failed; stopping the process");
    setImmediate(() => {
      throw err;
    });
  }

  private flushTransport(heartbeatsToo = false): void {
    const sentBefore = this.transport.stats.messagesSent;
    this.transport.flush(heartbeatsToo);
    this.metrics?.messagesSent.inc(this.transport.stats.messagesSent - sentBefore);
  }

  /** The pipeline's storage port: level, then the entry journal. */
  private batchStore(): BatchStore {
    return {
      write: (ops, w, landed, failed) => {
        this.writing = this.writeBoth(ops, w).then(landed, failed);
      },
    };
  }

  /**
   * Level first, then the journal: a crash between them leaves level at most one batch ahead
   * of the journal (a commit index past the log, a snapshot whose journal reset is missing),
   * which journal-recovery.ts reconciles; the journal is never ahead of level.
   */
  private async writeBoth(ops: BatchOp[], w: DiskBatch): Promise<void> {
    await this.store.write(ops, w.sync);
    if (w.journal.length === 0 && w.releases.length === 0) return;
    const before = this.journal.stats.bytesWritten;
    const fsyncsBefore = this.journal.stats.fsyncs;
    await this.journal.write(w.journal, w.releases);
    if (this.journal.stats.fsyncs > fsyncsBefore) {
      this.turnStats.fsyncs += 1;
      this.metrics?.observeJournalWrite(this.journal.stats.bytesWritten - before);
    }
    // Groups holding the oldest journal file back (idle, or slow to snapshot) are asked to compact.
    for (const id of this.journal.pinning()) this.groupsById.get(id)?.compactForJournal();
  }
}

function hasPrefix(key: Uint8Array, prefix: Uint8Array): boolean {
  if (key.byteLength < prefix.byteLength) return false;
  for (let i = 0; i < prefix.byteLength; i++) if (key[i] !== prefix[i]) return false;
  return true;
}
