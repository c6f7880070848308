// One simulated run: N real RawNodes over crash-prone storage and a faulty network, driven tick
// by tick from one seed, checked after every step; then a liveness phase with faults healed.
// Each node is a raft host with one group: the host's own HostGroup and Ready pipeline
// (raft-host/ready-pipeline.ts) persist, send, apply and advance its Readies, through ports
// that write to crash storage, send on the simulated network and run turns from the step loop.
import { AssertionError } from "../common/assert.js";
import { SeededRandom, type Random } from "../common/prng.js";
import { HeadBudget } from "../raft-host/head-budget.js";
import { HostGroup, restoreFromSnapshot, type GroupHostContext } from "../raft-host/host-group.js";
import { resolveLimits, type RaftHostLimits } from "../raft-host/limits.js";
import type { BatchNetwork, BatchStore, TurnScheduler } from "../raft-host/pipeline-ports.js";
import { ReadyPipeline } from "../raft-host/ready-pipeline.js";
import type { AppliedEntry } from "../raft-host/state-machine.js";
import { RawNode } from "../raft/raw-node.js";
import {
  ConfChangeType,
  MessageType,
  ProposalDroppedError,
  type ConfChange,
  type Message,
  type NodeId,
  type RaftConfig,
  type RaftStorage,
  type Ready,
} from "../raft/types.js";
import { CrashStorage } from "./crash-storage.js";
import { HashChainStateMachine } from "./hash-chain-state-machine.js";
import { SimGroupLog } from "./sim-group-log.js";
import { SafetyChecker, SimViolation } from "./safety-checker.js";
import { SimNetwork } from "./sim-network.js";
import { SimLiveness } from "./sim-liveness.js";
import { SimPeerLoss } from "./sim-peer-loss.js";
import { drawSwarmPlan, type SwarmPlan } from "./swarm.js";
import { TraceHash, bytesHash } from "./trace-hash.js";

export interface SimOptions {
  seed: number;
  nodes: number;
  /** Ticks of the fault phase. */
  steps: number;
  /**
   * The Raft core of every node (default: the real RawNode). Tests plug in a deliberately
   * broken core here to check that the safety checker catches it.
   */
  createCore?: (config: RaftConfig, storage: RaftStorage, random: Random) => RawNode;
  /** Pins parts of the seed's swarm plan (regression cases); the rest is still drawn from the seed. */
  planOverride?: {
    raft?: Partial<SwarmPlan["raft"]>;
    network?: Partial<SwarmPlan["network"]>;
  } & Partial<Omit<SwarmPlan, "raft" | "network">>;
}

export interface SimResult {
  seed: number;
  nodes: number;
  steps: number;
  ok: boolean;
  violation?: string;
  traceHash: string;
  stats: SimStats;
}

export interface SimStats {
  leaders: number;
  proposed: number;
  acked: number;
  /** Entries with data applied, summed over the nodes (HostGroup gives no others to the state machine). */
  applied: number;
  crashes: number;
  lostWrites: number;
  delivered: number;
  dropped: number;
  snapshotsSent: number;
  reads: number;
  confChanges: number;
  livenessTicks: number;
  /** reportNodeDown calls made by the node-liveness model (quiescence seeds only). */
  nodeDownReports: number;
  /** Node-ticks spent quiesced (the clock stopped). */
  quiescedTicks: number;
  /** Quiescence seeds whose healed group quiesced and then lost its leader (quiescedFailover). */
  quiescedFailovers: number;
  /** reportNodeLost calls made by the connection-loss model (crash-driven, late, spurious). */
  peerLossReports: number;
  /** Of those, spurious ones about a live peer. */
  peerLossSpurious: number;
  /** reportUnreachable calls: most for a message the network dropped, a few spurious. */
  unreachableReports: number;
}

/** Bound on pipeline rounds (a write landing, a turn) per node per tick. */
const READY_ROUNDS_MAX = 8;
/** Simulated milliseconds per tick (the host's clock for proposal deadlines). */
const TICK_MS = 10;
/** The one group each simulated host runs. */
const GROUP_ID = "sim";
/** The liveness phase must elect a leader and commit within this many ticks... */
const LIVENESS_TICKS_BASE = 600;
/** ...plus this many per entry of backlog still to replicate when faults heal (seed 2387: a
 * leader with 548 uncommitted entries, one Append in flight and 64-byte messages needed ~550
 * ticks just to drain; that is flow control working, not a liveness bug). */
const LIVENESS_TICKS_PER_BACKLOG_ENTRY = 4;
const MARKER_RETRY_TICKS = 60;
/** After healing, a quiescence seed's group must quiesce within this many election timeouts... */
const QUIESCE_TICKS_MAX_PER_ELECTION = 10;
/**
 * ...and, once its leader crashes, elect a new one within this many: lapse 1 + campaign < 1,
 * then pre-vote/vote rounds. Both survivors wake on the same tick and a pre-candidate grants
 * any pre-vote of a higher term, so split rounds repeat with fair probability (seed 21935:
 * 8 split rounds, 135 ticks); the bound only has to catch followers that never wake.
 */
const FAILOVER_TICKS_MAX_PER_ELECTION = 30;

interface SimNode {
  readonly id: NodeId;
  readonly storage: CrashStorage;
  /** The core, its host group and the host's pipeline: set while the node is up. */
  raw: RawNode | undefined;
  group: HostGroup | undefined;
  pipeline: ReadyPipeline | undefined;
  sm: HashChainStateMachine;
  pending: Map<number, { term: number; hash: number }>;
  reads: Map<number, number>;
  /** Turns the pipeline asked for (its scheduler port), run by drain(): at most a scheduled one and a next round. */
  turns: (() => void)[];
  /** The pipeline's batch on its way to disk (at most one): lands when drain() says. */
  write: { readonly mark: number; readonly sync: boolean; readonly landed: () => void } | undefined;
  /** Bumped on every start; node-level liveness beats carry it. */
  incarnation: number;
}

export class Simulation {
  readonly random: SeededRandom;
  readonly plan: SwarmPlan;
  readonly checker = new SafetyChecker();
  readonly trace = new TraceHash();
  readonly network: SimNetwork;
  readonly nodes: SimNode[] = [];
  readonly stats: SimStats = {
    leaders: 0,
    proposed: 0,
    acked: 0,
    applied: 0,
    crashes: 0,
    lostWrites: 0,
    delivered: 0,
    dropped: 0,
    snapshotsSent: 0,
    reads: 0,
    confChanges: 0,
    livenessTicks: 0,
    nodeDownReports: 0,
    quiescedTicks: 0,
    quiescedFailovers: 0,
    peerLossReports: 0,
    peerLossSpurious: 0,
    unreachableReports: 0,
  };
  /** Node-level liveness, modelled only when the seed's cores quiesce (they depend on it). */
  private readonly nodeLiveness: SimLiveness | undefined;
  private readonly peerLoss: SimPeerLoss;
  private now = 0;
  private proposalSeq = 0;
  private readSeq = 0;
  private faultsOn = true;
  private readonly raftRandom: Random;
  /** Draws for the host's timing signals, reportUnreachable and campaignSoon (its own stream, as peerLoss's). */
  private readonly hostSignalsRandom: Random;
  /** The host limits of every node: snapshots every compactEvery entries, Appends of maxSizePerMsg. */
  private readonly limits: RaftHostLimits;

  constructor(readonly options: SimOptions) {
    this.random = new SeededRandom(options.seed);
    const drawn = drawSwarmPlan(this.random.fork());
    const o = options.planOverride ?? {};
    this.plan = {
      ...drawn,
      ...o,
      raft: { ...drawn.raft, ...o.raft },
      network: { ...drawn.network, ...o.network },
    };
    this.network = new SimNetwork(this.random.fork(), { ...this.plan.network });
    this.raftRandom = this.random.fork();
    // Its own stream, so that the other streams (and so older seeds' network and faults) are unchanged.
    this.peerLoss = new SimPeerLoss(
      new SeededRandom(options.seed ^ 0x10551055),
      this.plan.peerLoss,
    );
    this.hostSignalsRandom = new SeededRandom(options.seed ^ 0x0dd5e1d);
    this.nodeLiveness = this.plan.raft.quiesce
      ? new SimLiveness(this.plan.raft.electionTick, this.plan.livenessBeatEveryTicks)
      : undefined;
    const never = 1_000_000_000;
    this.limits = resolveLimits({
      appendBytesMax: this.plan.raft.maxSizePerMsg,
      snapshotEntriesInterval: this.plan.compactEvery > 0 ? this.plan.compactEvery : never,
      snapshotBytesInterval: never,
      // Entries kept below a snapshot, so followers just behind catch up from the log or not.
      compactionMarginEntries: 1 + (options.seed % 8),
      logEntriesOnOpenMax: 2 * never,
    });
    const voters = Array.from({ length: options.nodes }, (_, i) => i + 1);
    for (const id of voters) {
      const node: SimNode = {
        id,
        storage: new CrashStorage({ voters }),
        raw: undefined,
        group: undefined,
        pipeline: undefined,
        sm: new HashChainStateMachine(),
        pending: new Map(),
        reads: new Map(),
        turns: [],
        write: undefined,
        incarnation: 0,
      };
      this.nodes.push(node);
      this.start(node);
    }
  }

  /** Starts (or restarts) a node from its durable state, as RaftHost.openGroup does from disk. */
  private start(n: SimNode): void {
    const storage = n.storage.volatile;
    const snap = storage.snapshot();
    const applied = snap.metadata.index;
    n.sm = new HashChainStateMachine((e) => this.applied(n, e));
    if (applied > 0)
      restoreFromSnapshot(n.sm, snap.data, applied, {
        term: snap.metadata.term,
        confState: snap.metadata.confState,
      });
    const createCore =
      this.options.createCore ?? ((config, s, random) => new RawNode(config, s, random));
    n.raw = createCore({ ...this.plan.raft, id: n.id, applied }, storage, this.raftRandom.fork());
    // A group created blank here: the host tells its preferred leader (the first voter) to
    // campaign soon (RaftHost.openGroup). Half the seeds, to keep the randomized-timeout path.
    const blank = storage.lastIndex() === 0 && storage.initialState().hardState.term === 0;
    if (blank && n.id === 1 && this.hostSignalsRandom.bool(0.5))
      n.raw.campaignSoon(1 + this.hostSignalsRandom.int(0, 3));
    n.turns = [];
    n.write = undefined;
    const store: BatchStore = {
      write: (_ops, batch, landed) => {
        n.write = { mark: n.storage.mark(), sync: batch.sync, landed };
      },
    };
    const network: BatchNetwork = { flush: () => {} }; // sent on the simulated network at once
    const scheduler: TurnScheduler = {
      soon: (turn) => n.turns.push(turn),
      afterMicrotasks: (turn) => n.turns.push(turn),
    };
    const pipeline = new ReadyPipeline(store, network, scheduler, {
      nodeId: n.id,
      failed: (err) => {
        throw err;
      },
      readyTaken: (_group, rd) => this.readyTaken(n, rd),
    });
    const context: GroupHostContext = {
      nodeId: n.id,
      limits: this.limits,
      headBudget: new HeadBudget(this.limits.journaledHeadBytesMax),
      wake: (g) => pipeline.wake(g),
      send: (_groupId, m) => this.send(n, m),
      stageForNextBatch: (ops, journalRelease) => pipeline.stage(ops, journalRelease),
      leaderChanged: () => {},
      onApplied: () => {},
      onSnapshot: () => {},
      nowMs: () => this.now * TICK_MS,
      isClosing: () => false,
    };
    const log = new SimGroupLog(n.storage, (h) => {
      this.trace.mix(h.term);
      this.trace.mix(h.commit);
    });
    n.group = new HostGroup(GROUP_ID, n.raw, log, n.sm, context, applied);
    n.pipeline = pipeline;
    n.pending.clear();
    n.reads.clear();
    n.incarnation++;
    this.nodeLiveness?.forget(n.id);
  }

  private crash(n: SimNode): void {
    n.raw = undefined;
    n.group = undefined;
    n.pipeline = undefined;
    n.turns = [];
    n.write = undefined;
    this.stats.crashes++;
    this.stats.lostWrites += n.storage.crash(this.random);
    this.peerLoss.onCrash(
      n.id,
      this.nodes.map((x) => ({ id: x.id, core: x.raw })),
      this.now,
    );
    this.trace.mix(0xc0ffee);
    this.trace.mix(n.id);
  }

  run(): SimResult {
    let violation: string | undefined;
    try {
      for (let i = 0; i < this.options.steps; i++) this.stepOnce();
      this.liveness();
      if (this.nodeLiveness) this.quiescedFailover();
    } catch (e) {
      if (!(e instanceof SimViolation || e instanceof AssertionError)) throw e;
      violation = `${e.name}: ${e.message} (tick ${this.now})`;
    }
    this.stats.leaders = this.checker.leaders;
    return {
      seed: this.options.seed,
      nodes: this.options.nodes,
      steps: this.options.steps,
      ok: violation === undefined,
      ...(violation ? { violation } : {}),
      traceHash: this.trace.hex(),
      stats: this.stats,
    };
  }

  private up(): SimNode[] {
    return this.nodes.filter((n) => n.raw !== undefined);
  }

  stepOnce(): void {
    this.now++;
    if (this.faultsOn) this.injectFaults();
    for (const n of this.up()) {
      if (this.faultsOn && this.random.bool(this.plan.tickSkipRate)) continue;
      if (n.raw!.isQuiesced()) this.stats.quiescedTicks++;
      n.group!.tick(this.now * TICK_MS);
      this.observe(n);
    }
    if (this.nodeLiveness) {
      const view = this.nodes.map((n) => ({ id: n.id, incarnation: n.incarnation, core: n.raw }));
      this.nodeLiveness.tick(view, this.now, (from, to) => this.network.isBlocked(from, to));
      this.stats.nodeDownReports = this.nodeLiveness.reports;
    }
    this.peerLoss.tick(
      this.nodes.map((n) => ({ id: n.id, core: n.raw })),
      this.now,
      this.faultsOn,
    );
    this.stats.peerLossReports = this.peerLoss.reports;
    this.stats.peerLossSpurious = this.peerLoss.spurious;
    for (const m of this.network.take(this.now)) this.deliver(m);
    if (this.faultsOn && !this.quietNow()) this.clientOps();
    for (const n of this.up()) this.drain(n);
  }

  private injectFaults(): void {
    const r = this.random;
    if (r.bool(this.plan.partitionRate)) this.changePartition();
    if (r.bool(this.plan.crashRate)) {
      const up = this.up();
      if (up.length > 0) this.crash(r.pick(up));
    }
    const down = this.nodes.filter((n) => n.raw === undefined);
    if (down.length > 0 && r.bool(this.plan.restartRate)) {
      const n = r.pick(down);
      this.start(n);
      this.trace.mix(0xbeef);
      this.trace.mix(n.id);
    }
  }

  private changePartition(): void {
    const r = this.random;
    const ids = this.nodes.map((n) => n.id);
    this.network.heal();
    const kind = r.int(0, 4);
    this.trace.mix(0xfa17 + kind);
    if (kind === 0) return; // healed
    if (kind === 1) {
      const lonely = r.pick(ids);
      for (const id of ids)
        if (id !== lonely) {
          this.network.block(lonely, id);
          this.network.block(id, lonely);
        }
    } else if (kind === 2) {
      const side = new Set(ids.filter(() => r.bool(0.5)));
      for (const a of ids)
        for (const b of ids) if (side.has(a) !== side.has(b)) this.network.block(a, b);
    } else {
      // asymmetric: some directed links fail
      for (const a of ids)
        for (const b of ids) if (a !== b && r.bool(0.25)) this.network.block(a, b);
    }
  }

  private deliver(m: Message): void {
    const to = this.nodes[m.to - 1];
    const from = this.nodes[m.from - 1];
    if (to?.raw === undefined) {
      this.stats.dropped++;
      if (m.type === MessageType.Snapshot) from?.raw?.reportSnapshot(m.to, false);
      else if (from?.raw !== undefined) this.maybeReportUnreachable(from.raw, m.to, true);
      return;
    }
    this.stats.delivered++;
    this.nodeLiveness?.onDelivered(m.to, m.from, this.now);
    const t = this.trace;
    t.mix(m.type);
    t.mix(m.from);
    t.mix(m.to);
    t.mix(m.term);
    t.mix(m.index);
    t.mix(m.commit);
    t.mix(m.entries.length);
    to.group!.step(m);
    if (m.type === MessageType.Snapshot) from?.raw?.reportSnapshot(m.to, true);
    this.observe(to);
  }

  /** Election safety and leader completeness, checked right after every state change. */
  private observe(n: SimNode): void {
    const s = n.raw!.basicStatus();
    if (s.role === "leader") this.checker.onLeader(n.id, s.term, n.raw!);
  }

  /** Quiescence seeds alternate busy and quiet windows, so groups go idle (and quiesce) under faults. */
  private quietNow(): boolean {
    const w = this.plan.quietWindowTicks;
    return w > 0 && Math.floor(this.now / w) % 2 === 1;
  }

  private clientOps(): void {
    const r = this.random;
    const leaders = this.up().filter((n) => n.raw!.basicStatus().role === "leader");
    if (leaders.length > 0 && r.bool(this.plan.proposeRate)) this.propose(r.pick(leaders));
    if (leaders.length > 0 && r.bool(this.plan.transferRate)) {
      const l = r.pick(leaders);
      l.raw!.transferLeadership(r.pick(this.nodes).id);
    }
    if (leaders.length > 0 && r.bool(this.plan.membershipRate))
      this.changeMembership(r.pick(leaders));
    const up = this.up();
    if (up.length > 0 && r.bool(this.plan.readRate)) {
      const n = r.pick(up);
      const seq = ++this.readSeq;
      const ctx = new Uint8Array([seq >>> 24, (seq >>> 16) & 255, (seq >>> 8) & 255, seq & 255]);
      n.reads.set(seq, this.checker.maxAcked);
      n.raw!.readIndex(ctx);
    }
  }

  /** Single-server changes that keep at least two voters: remove, re-add as learner, promote. */
  private changeMembership(leader: SimNode): void {
    const cs = leader.raw!.confState();
    const members = new Set([...cs.voters, ...cs.learners]);
    const options: ConfChange[] = [];
    for (const n of this.nodes)
      if (!members.has(n.id)) options.push({ type: ConfChangeType.AddLearner, nodeId: n.id });
    for (const id of cs.learners) options.push({ type: ConfChangeType.AddVoter, nodeId: id });
    if (cs.voters.length > 2)
      for (const id of cs.voters) options.push({ type: ConfChangeType.RemoveNode, nodeId: id });
    if (options.length === 0) return;
    const change = this.random.pick(options);
    try {
      const index = leader.raw!.proposeConfChange(change);
      this.stats.confChanges++;
      this.trace.mix(0xcc00 + change.type);
      this.trace.mix(change.nodeId);
      this.trace.mix(index);
    } catch (e) {
      if (!(e instanceof ProposalDroppedError)) throw e;
    }
  }

  private propose(n: SimNode, marker = false): number | undefined {
    const seq = ++this.proposalSeq;
    const data = new TextEncoder().encode(`${marker ? "marker" : "p"}-${this.options.seed}-${seq}`);
    try {
      const index = n.raw!.propose(data);
      n.pending.set(index, { term: n.raw!.basicStatus().term, hash: bytesHash(data) });
      this.stats.proposed++;
      this.trace.mix(index);
      return index;
    } catch (e) {
      if (e instanceof ProposalDroppedError) return undefined;
      throw e;
    }
  }

  /**
   * Runs the node's host pipeline: the turns it asked for, and its write landing. With
   * asyncReadyRate > 0 a write may stay on its way across ticks (a slow disk) while the node
   * keeps stepping messages, ticking and taking Readies into the next batch.
   */
  private drain(n: SimNode): void {
    for (let round = 0; round < READY_ROUNDS_MAX && n.raw !== undefined; round++) {
      // Proposals, reads and ticks go to the core directly: the host's wake after them.
      if (n.raw.hasReady()) n.pipeline!.wake(n.group!);
      const slow =
        this.faultsOn && this.plan.asyncReadyRate > 0 && this.random.bool(this.plan.asyncReadyRate);
      const w = n.write;
      if (w !== undefined && !slow) {
        n.write = undefined;
        // What the batch asked to sync is durable; otherwise its writes may still be lost in a crash.
        if (w.sync) n.storage.syncTo(w.mark);
        w.landed();
      }
      const turn = n.turns.shift();
      if (turn !== undefined) turn();
      else if (w === undefined || slow) return;
    }
  }

  /** The safety checker's view of every Ready the host's pipeline takes from a core. */
  private readyTaken(n: SimNode, rd: Ready): void {
    const raw = n.raw!;
    const first = rd.entries[0];
    if (first) {
      const st = raw.basicStatus();
      if (st.role === "leader")
        this.checker.onLeaderAppend(n.id, st.term, rd.entries, raw.lastIndex() - rd.entries.length);
      this.checker.onAppend(n.id, rd.entries, raw.termAt(first.index - 1));
    }
    // Committed entries are committed whether or not this node lives to apply them.
    for (const e of rd.committedEntries) {
      this.checker.onApply(n.id, e);
      this.trace.mix(e.index);
      this.trace.mix(e.term);
    }
    for (const rs of rd.readStates) {
      const seq = new DataView(rs.context.buffer, rs.context.byteOffset, 4).getUint32(0);
      const ackedAtRequest = n.reads.get(seq);
      if (ackedAtRequest !== undefined) {
        this.checker.onReadState(n.id, rs.index, ackedAtRequest);
        n.reads.delete(seq);
        this.stats.reads++;
      }
    }
  }

  private send(n: SimNode, m: Message): void {
    if (m.type === MessageType.Snapshot) this.stats.snapshotsSent++;
    const outcome = this.network.send(m, this.now);
    if (outcome !== "queued") {
      this.stats.dropped++;
      if (m.type === MessageType.Snapshot) n.raw!.reportSnapshot(m.to, false);
    }
    if (m.type !== MessageType.Snapshot)
      this.maybeReportUnreachable(n.raw!, m.to, outcome !== "queued");
  }

  /**
   * The host's transport reports a peer unreachable for the groups whose messages were on a
   * connection that failed: often for a dropped message, never for all of them (a message
   * lost in a stream's buffer goes unnoticed), and now and then for one that arrived (sent
   * just before the break). Raft may only change timing on it.
   */
  private maybeReportUnreachable(core: RawNode, to: NodeId, dropped: boolean): void {
    if (!this.hostSignalsRandom.bool(dropped ? 0.5 : 0.002)) return;
    this.stats.unreachableReports++;
    core.reportUnreachable(to);
  }

  /** HostGroup applied a normal entry on node n (its state machine's onApply): acknowledged if n proposed it. */
  private applied(n: SimNode, e: AppliedEntry): void {
    this.stats.applied++;
    const p = n.pending.get(e.index);
    if (p === undefined) return;
    n.pending.delete(e.index);
    if (p.term === e.term && p.hash === bytesHash(e.data)) {
      this.checkDurableOnQuorum(n, e);
      this.checker.onAck(e.index);
      this.stats.acked++;
    }
  }

  /**
   * Persist before acknowledging, checked directly: an entry acknowledged to its client is on
   * the disks of a majority of voters (a leader never counts its own undurable copy). Only
   * without membership changes, where the voters at commit and at acknowledgement are the same.
   */
  private checkDurableOnQuorum(leader: SimNode, e: AppliedEntry): void {
    if (this.plan.membershipRate > 0) return;
    const voters = leader.raw!.confState().voters;
    const durable = voters.filter((id) =>
      this.nodes[id - 1]!.storage.holdsDurably(e.index, e.term),
    ).length;
    if (durable < Math.floor(voters.length / 2) + 1) {
      throw new SimViolation(
        `durability: entry ${e.index} (term ${e.term}) acknowledged by node ${leader.id} while durable on ${durable} of ${voters.length} voters`,
      );
    }
  }

  /** Faults healed, every node up: a leader must emerge and a new entry commit everywhere. */
  private liveness(): void {
    this.faultsOn = false;
    this.network.heal();
    this.network.faults = { lossRate: 0, duplicateRate: 0, delayTicksMax: 1, reorder: false };
    for (const n of this.nodes) if (n.raw === undefined) this.start(n);
    let markerIndex = -1;
    let proposedAt = 0;
    const lastMax = Math.max(...this.nodes.map((n) => n.raw!.lastIndex()));
    const appliedMin = Math.min(...this.nodes.map((n) => n.group!.appliedIndex()));
    const ticksMax =
      LIVENESS_TICKS_BASE + LIVENESS_TICKS_PER_BACKLOG_ENTRY * (lastMax - appliedMin);
    for (let t = 0; t < ticksMax; t++) {
      this.stats.livenessTicks = t;
      if (markerIndex > 0 && this.members().every((n) => n.sm.index >= markerIndex)) {
        this.checkConverged(markerIndex);
        return;
      }
      if (markerIndex < 0 || t - proposedAt > MARKER_RETRY_TICKS) {
        // The newest term's leader: a removed leader without check-quorum can stay "leader" of
        // an old term forever, and a marker proposed there never commits (seed 20778).
        const leader = this.newestLeader();
        if (leader) {
          const index = this.propose(leader, true);
          if (index !== undefined) {
            markerIndex = index;
            proposedAt = t;
          }
        }
      }
      this.stepOnce();
    }
    const state = this.nodes
      .map(
        (n) =>
          `${n.id}:${n.raw?.basicStatus().role}/t${n.raw?.basicStatus().term}/applied ${n.sm.index}`,
      )
      .join(", ");
    throw new SimViolation(
      `liveness: no commit on every node within ${ticksMax} ticks after healing (marker ${markerIndex}; ${state})`,
    );
  }

  /**
   * Quiescence seeds, after the liveness phase: the healed group goes idle and quiesces; then
   * its leader crashes, and the followers (clocks stopped) must still elect a new leader within
   * a bound, woken by node-level liveness alone.
   */
  private quiescedFailover(): void {
    const e = this.plan.raft.electionTick;
    const leaderOf = (): SimNode | undefined =>
      this.up().find((n) => n.raw!.basicStatus().role === "leader");
    let quiet = false;
    for (let t = 0; t < QUIESCE_TICKS_MAX_PER_ELECTION * e && !quiet; t++) {
      this.stepOnce();
      const l = leaderOf();
      quiet = l !== undefined && this.members().every((n) => n.raw?.isQuiesced());
    }
    const old = leaderOf();
    // A group that did not quiesce (a voter still catching up), or cannot lose a node, is not this check's case.
    if (!quiet || old === undefined || old.raw!.confState().voters.length < 3) return;
    this.stats.quiescedFailovers++;
    const oldTerm = old.raw!.basicStatus().term;
    this.crash(old);
    for (let t = 0; t < FAILOVER_TICKS_MAX_PER_ELECTION * e; t++) {
      this.stepOnce();
      const l = leaderOf();
      if (l && l.raw!.basicStatus().term > oldTerm) return;
    }
    throw new SimViolation(
      `liveness: the quiesced group's leader ${old.id} crashed and no new leader was elected within ${FAILOVER_TICKS_MAX_PER_ELECTION * e} ticks`,
    );
  }

  private newestLeader(): SimNode | undefined {
    let best: SimNode | undefined;
    for (const n of this.up()) {
      const s = n.raw!.basicStatus();
      if (s.role === "leader" && (!best || s.term > best.raw!.basicStatus().term)) best = n;
    }
    return best;
  }

  /** The replicas in the newest leader's configuration (all nodes when there is no leader). */
  private members(): SimNode[] {
    const best = this.newestLeader();
    if (!best) return this.nodes;
    const cs = best.raw!.confState();
    const ids = new Set([...cs.voters, ...cs.learners]);
    return this.nodes.filter((n) => ids.has(n.id));
  }

  private checkConverged(markerIndex: number): void {
    const want = this.checker.appliedAt(markerIndex);
    if (want === undefined)
      throw new SimViolation(`liveness: marker ${markerIndex} applied nowhere`);
    const hashes = new Set<number>();
    for (const n of this.members()) {
      // Every node applied the same prefix, so equal lengths imply equal hashes.
      if (n.sm.index === markerIndex) hashes.add(n.sm.hash);
    }
    if (hashes.size > 1)
      throw new SimViolation(`convergence: replicas at the same index have different state hashes`);
  }
}

export function runSimulation(options: SimOptions): SimResult {
  return new Simulation(options).run();
}
