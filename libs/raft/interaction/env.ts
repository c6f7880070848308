// The interaction environment behind libs/raft/testdata/*.txt (etcd-raft's rafttest
// InteractionEnv, rebuilt for tern's core): a set of RawNodes over MemoryStorage, driven only
// through the public RaftNode/RawNode interface, with an explicit in-flight message list that
// scenarios deliver, drop and inspect one command at a time. `handle` runs one command and
// returns its output (etcd prints "ok" for a command without output).
//
// Host model per Ready (sync): persist snapshot, entries and hard state, queue the messages, apply
// the committed entries (an appending state machine whose snapshots are kept in `history`, so a
// leader always offers its latest applied state, as etcd's harness does), then advance().
// async-storage-writes=true nodes use advanceAsync(): the write is readable at once but durable
// only when a `persist` (or stabilize) reports it with persisted(); messages other than a
// leader's Append/Heartbeat/Snapshot/TimeoutNow wait for that, as the RaftNode contract requires.
import type { Random } from "../../common/prng.js";
import { MemoryStorage } from "../memory-storage.js";
import { RawNode } from "../raw-node.js";
import {
  ConfChangeType,
  EntryType,
  MessageType,
  ProposalDroppedError,
  type ConfChange,
  type Entry,
  type HardState,
  type ConfState,
  type Message,
  type NodeId,
  type RaftConfig,
  type RaftStorage,
  type Ready,
  type Snapshot,
} from "../types.js";
import type { CommandArg, TestCase } from "./datadriven.js";
import {
  describeEntries,
  describeMessage,
  describeProgress,
  describeReady,
  messageTypeByName,
  roleName,
} from "./describe.js";

/** etcd's rafttest config stub: ElectionTick 3, HeartbeatTick 1, no pre-vote, no check-quorum, unbounded sizes. */
const BASE_CONFIG: Omit<RaftConfig, "id"> = {
  electionTick: 3,
  heartbeatTick: 1,
  maxSizePerMsg: 1 << 30,
  maxInflightMsgs: 65536,
  maxUncommittedEntriesSize: 1 << 30,
  maxCommittedSizePerReady: 1 << 30,
  preVote: false,
  checkQuorum: false,
  applied: 0,
};

/** Bound on stabilize rounds, so a livelocked scenario fails instead of hanging. */
const STABILIZE_ROUNDS_MAX = 10_000;

/**
 * The core draws randomness only for the election timeout (electionTick + int(0, electionTick)).
 * Scenarios need it fixed: the offset is 0 (timeout = electionTick) unless a scenario sets it.
 */
class FixedRandom implements Random {
  offset = 0;
  next(): number {
    return 0;
  }
  int(lo: number, hi: number): number {
    return Math.min(Math.max(lo + this.offset, lo), hi - 1);
  }
  bool(): boolean {
    return false;
  }
  pick<T>(items: readonly T[]): T {
    return items[0]!;
  }
  fork(): Random {
    return this;
  }
}

/** MemoryStorage whose snapshot() is the node's latest applied state (etcd's snapOverrideStorage). */
class HarnessStorage implements RaftStorage {
  constructor(
    readonly mem: MemoryStorage,
    private readonly latest: () => Snapshot,
  ) {}
  initialState(): { hardState: HardState; confState: ConfState } {
    return this.mem.initialState();
  }
  entries(lo: number, hi: number, maxBytes: number): Entry[] {
    return this.mem.entries(lo, hi, maxBytes);
  }
  term(index: number): number {
    return this.mem.term(index);
  }
  firstIndex(): number {
    return this.mem.firstIndex();
  }
  lastIndex(): number {
    return this.mem.lastIndex();
  }
  snapshot(): Snapshot {
    return this.latest();
  }
}

interface PendingWrite {
  readonly index: number;
  readonly term: number;
  /** Messages that may leave only once this write is durable. */
  readonly held: Message[];
}

interface HarnessNode {
  readonly id: NodeId;
  readonly raw: RawNode;
  readonly mem: MemoryStorage;
  readonly config: RaftConfig;
  readonly random: FixedRandom;
  readonly history: Snapshot[];
  readonly async: boolean;
  readonly pendingWrites: PendingWrite[];
  /** A Ready handed out by `ready` and not yet advanced. */
  held?: Ready;
}

const LEADER_SENDS_EARLY = new Set([
  MessageType.Append,
  MessageType.Heartbeat,
  MessageType.Snapshot,
  MessageType.TimeoutNow,
]);

export class InteractionEnv {
  readonly nodes: HarnessNode[] = [];
  messages: Message[] = [];
  private out: string[] = [];
  private indent = "";
  /** etcd's log level "none": the command's output is suppressed (errors still show). tern's core has no logger, so other levels change nothing. */
  private quiet = false;

  /** Runs one command and returns its output. */
  handle(c: TestCase): string {
    this.out = [];
    this.indent = "";
    try {
      this.dispatch(c);
    } catch (e) {
      if (!(e instanceof Error)) throw e;
      this.quiet = false;
      this.write(`error: ${e.message}`);
    }
    const text = this.out.join("").replace(/\n$/, "");
    return text === "" ? "ok" : text;
  }

  private write(s: string): void {
    if (this.quiet) return;
    for (const line of s.replace(/\n$/, "").split("\n")) this.out.push(this.indent + line + "\n");
  }

  private withIndent(f: () => void): void {
    const old = this.indent;
    this.indent += "  ";
    try {
      f();
    } finally {
      this.indent = old;
    }
  }

  private dispatch(c: TestCase): void {
    switch (c.cmd) {
      case "add-nodes":
        return this.addNodes(c);
      case "campaign":
        return this.node(c).raw.campaign();
      case "propose":
        return this.propose(c);
      case "propose-conf-change":
        return this.proposeConfChange(c);
      case "tick-election":
        return this.tick(c, this.node(c).config.electionTick);
      case "tick-heartbeat":
        return this.tick(c, this.node(c).config.heartbeatTick);
      case "tick":
        return this.tick(c, intArg(c, "count") ?? 1);
      case "deliver-msgs":
        return this.deliverMsgs(c);
      case "process-ready":
        return this.processReadyCmd(c);
      case "ready":
        return this.readyOnly(this.node(c));
      case "advance":
        return this.advanceHeld(this.node(c));
      case "persist":
        return this.persistCmd(c);
      case "stabilize":
        return this.withLogLevel(c, () => this.stabilize(nodeIds(c)));
      case "log-level":
        return this.setLogLevel(c.args[0]?.key ?? "");
      case "compact":
        return this.compact(c);
      case "raft-log":
        return this.raftLog(this.node(c));
      case "raft-state":
        return this.raftState();
      case "status":
        return this.status(this.node(c));
      case "report-unreachable":
        return this.node(c).raw.reportUnreachable(secondId(c));
      case "report-node-down":
        return this.node(c).raw.reportNodeDown(secondId(c));
      case "report-snapshot":
        return this.node(c).raw.reportSnapshot(secondId(c), boolArg(c, "ok") ?? true);
      case "transfer-leadership":
        return this.transfer(c);
      case "read-index":
        return this.node(c).raw.readIndex(new TextEncoder().encode(c.args[1]?.key ?? ""));
      case "set-randomized-election-timeout":
        return this.setElectionOffset(c);
      case "send-snapshot":
        return this.sendSnapshot(this.node(c), secondId(c));
      default:
        throw new Error(`unknown command ${c.cmd}`);
    }
  }

  private setLogLevel(level: string): void {
    if (!["debug", "info", "warn", "error", "fatal", "none"].includes(level.toLowerCase()))
      throw new Error(`unknown log level ${level}`);
    this.quiet = level.toLowerCase() === "none";
  }

  private withLogLevel(c: TestCase, f: () => void): void {
    const level = c.args.find((a) => a.key === "log-level")?.vals[0];
    if (level === undefined) return f();
    const old = this.quiet;
    this.setLogLevel(level);
    try {
      f();
    } finally {
      this.quiet = old;
    }
  }

  private node(c: TestCase, which = 0): HarnessNode {
    const n = Number(c.args[which]?.key);
    return this.byId(n);
  }

  private byId(n: NodeId): HarnessNode {
    const node = this.nodes[n - 1];
    if (node === undefined) throw new Error(`no node ${n}`);
    return node;
  }

  // ------------------------------------------------------------ add-nodes

  private addNodes(c: TestCase): void {
    const count = Number(c.args[0]?.key);
    const voters = listArg(c, "voters");
    const learners = listArg(c, "learners");
    const index = intArg(c, "index") ?? 0;
    const content = c.args.find((a) => a.key === "content")?.vals[0] ?? "";
    const overrides: { -readonly [K in keyof RaftConfig]?: RaftConfig[K] } = {};
    const prevote = boolArg(c, "prevote");
    if (prevote !== undefined) overrides.preVote = prevote;
    const checkquorum = boolArg(c, "checkquorum");
    if (checkquorum !== undefined) overrides.checkQuorum = checkquorum;
    const inflight = intArg(c, "inflight");
    if (inflight !== undefined) overrides.maxInflightMsgs = inflight;
    const committed = intArg(c, "max-committed-size-per-ready");
    if (committed !== undefined) overrides.maxCommittedSizePerReady = committed;
    const perMsg = intArg(c, "max-size-per-msg");
    if (perMsg !== undefined) overrides.maxSizePerMsg = perMsg;
    const election = intArg(c, "election-tick");
    if (election !== undefined) overrides.electionTick = election;
    const heartbeat = intArg(c, "heartbeat-tick");
    if (heartbeat !== undefined) overrides.heartbeatTick = heartbeat;
    const idle = intArg(c, "idle-heartbeat-tick");
    if (idle !== undefined) overrides.idleHeartbeatTick = idle;
    const quiesce = boolArg(c, "quiesce");
    if (quiesce !== undefined) overrides.quiesce = quiesce;
    const async = boolArg(c, "async-storage-writes") ?? false;
    const bootstrap = voters.length > 0 || learners.length > 0 || index > 0;
    if (bootstrap && index <= 1) throw new Error("index must be specified as > 1 due to bootstrap");
    for (let k = 0; k < count; k++) {
      const nodeId = this.nodes.length + 1;
      const mem = new MemoryStorage({ voters: [] });
      const history: Snapshot[] = [];
      if (bootstrap) {
        const snap: Snapshot = {
          metadata: {
            index,
            term: 1,
            confState: { voters: [...voters], learners: [...learners], outgoingVoters: [] },
          },
          data: new TextEncoder().encode(content),
        };
        mem.applySnapshot(snap);
        history.push(snap);
      } else history.push(mem.snapshot());
      const config: RaftConfig = {
        ...BASE_CONFIG,
        ...overrides,
        id: nodeId,
        applied: bootstrap ? index : 0,
      };
      const random = new FixedRandom();
      const storage = new HarnessStorage(mem, () => history[history.length - 1]!);
      const raw = new RawNode(config, storage, random);
      this.nodes.push({ id: nodeId, raw, mem, config, random, history, async, pendingWrites: [] });
    }
  }

  // ------------------------------------------------------------ proposals

  private propose(c: TestCase): void {
    const n = this.node(c);
    this.dropped(() => n.raw.propose(new TextEncoder().encode(c.args[1]?.key ?? "")));
  }

  private proposeConfChange(c: TestCase): void {
    const n = this.node(c);
    const words = c.input
      .join(" ")
      .split(/\s+/)
      .filter((w) => w !== "");
    if (words.length !== 1)
      throw new Error("tern supports single-server conf changes only (no joint consensus)");
    const w = words[0]!;
    const type =
      w[0] === "v"
        ? ConfChangeType.AddVoter
        : w[0] === "l"
          ? ConfChangeType.AddLearner
          : w[0] === "r"
            ? ConfChangeType.RemoveNode
            : undefined;
    if (type === undefined) throw new Error(`unknown conf change ${w}`);
    const cc: ConfChange = { type, nodeId: Number(w.slice(1)) };
    this.dropped(() => n.raw.proposeConfChange(cc));
  }

  private dropped(f: () => void): void {
    try {
      f();
    } catch (e) {
      if (e instanceof ProposalDroppedError) this.write(`raft ${e.message}`);
      else throw e;
    }
  }

  private transfer(c: TestCase): void {
    const from = intArg(c, "from");
    const to = intArg(c, "to");
    if (from === undefined || to === undefined)
      throw new Error("transfer-leadership needs from= and to=");
    this.byId(from).raw.transferLeadership(to);
  }

  /** A Snapshot message built by the harness from `from`'s latest applied state (etcd's send-snapshot). */
  private sendSnapshot(from: HarnessNode, to: NodeId): void {
    const m: Message = {
      type: MessageType.Snapshot,
      from: from.id,
      to,
      term: from.raw.basicStatus().term,
      logTerm: 0,
      index: 0,
      entries: [],
      commit: 0,
      reject: false,
      rejectHint: 0,
      snapshot: from.history[from.history.length - 1]!,
    };
    this.messages.push(m);
    this.write(describeMessage(m));
  }

  private tick(c: TestCase, times: number): void {
    const n = this.node(c);
    for (let i = 0; i < times; i++) n.raw.tick();
  }

  /** Applies to every later election-timeout reset of the node (the core's timer is private). */
  private setElectionOffset(c: TestCase): void {
    const n = this.node(c);
    const timeout = intArg(c, "timeout");
    if (timeout === undefined) throw new Error("set-randomized-election-timeout needs timeout=");
    n.random.offset = timeout - n.config.electionTick;
  }

  // ------------------------------------------------------------ messages

  private deliverMsgs(c: TestCase): void {
    const typeName = c.args.find((a) => a.key === "type")?.vals[0];
    const type = typeName === undefined ? undefined : messageTypeByName(typeName);
    if (typeName !== undefined && type === undefined)
      throw new Error(`unknown message type ${typeName}`);
    const recipients: { id: NodeId; drop: boolean }[] = [];
    for (const a of c.args) {
      if (a.vals.length === 0 && a.key !== "") recipients.push({ id: Number(a.key), drop: false });
      if (a.key === "drop") for (const v of a.vals) recipients.push({ id: Number(v), drop: true });
    }
    let n = 0;
    for (const r of recipients) n += this.deliver(r.id, type, r.drop);
    if (n === 0) this.write("no messages");
  }

  private deliver(to: NodeId, type: MessageType | undefined, drop: boolean): number {
    const mine = this.messages.filter(
      (m) => m.to === to && (type === undefined || m.type === type),
    );
    this.messages = this.messages.filter((m) => !mine.includes(m));
    for (const m of mine) {
      this.write((drop ? "dropped: " : "") + describeMessage(m));
      if (drop) continue;
      try {
        this.byId(to).raw.step(m);
      } catch (e) {
        if (!(e instanceof Error)) throw e;
        this.write(`error: ${e.message}`);
      }
    }
    return mine.length;
  }

  // ------------------------------------------------------------ Ready handling

  private processReadyCmd(c: TestCase): void {
    const ids = nodeIds(c);
    for (const id of ids) {
      const n = this.byId(id);
      if (ids.length > 1) {
        this.write(`> ${id} handling Ready`);
        this.withIndent(() => this.processReady(n));
      } else this.processReady(n);
    }
  }

  private processReady(n: HarnessNode): void {
    const wasLeader = n.raw.basicStatus().role === "leader";
    const rd = n.raw.ready();
    this.write(describeReady(rd));
    this.persistAndApply(n, rd);
    if (!n.async) {
      this.messages.push(...rd.messages);
      n.raw.advance();
    } else {
      const early = wasLeader ? rd.messages.filter((m) => LEADER_SENDS_EARLY.has(m.type)) : [];
      this.messages.push(...early);
      const held = rd.messages.filter((m) => !early.includes(m));
      const writes =
        rd.entries.length > 0 || rd.snapshot !== undefined || rd.hardState !== undefined;
      if (writes || n.pendingWrites.length > 0) {
        const last = n.mem.lastIndex();
        n.pendingWrites.push({ index: last, term: n.mem.term(last), held });
      } else this.messages.push(...held); // nothing of ours is waiting for the disk
      n.raw.advanceAsync();
    }
    this.recordApplied(n, rd.committedEntries);
  }

  /** `ready N`: hands out and persists a Ready but holds its advance() until `advance N`. */
  private readyOnly(n: HarnessNode): void {
    if (n.async) throw new Error("ready/advance is for synchronous nodes");
    const rd = n.raw.ready();
    this.write(describeReady(rd));
    this.persistAndApply(n, rd);
    this.messages.push(...rd.messages);
    n.held = rd;
  }

  private advanceHeld(n: HarnessNode): void {
    const rd = n.held;
    if (rd === undefined) throw new Error(`node ${n.id} holds no Ready`);
    n.held = undefined;
    n.raw.advance();
    this.recordApplied(n, rd.committedEntries);
  }

  private persistAndApply(n: HarnessNode, rd: Ready): void {
    if (rd.snapshot) {
      n.mem.applySnapshot(rd.snapshot);
      n.history.push(rd.snapshot);
    }
    n.mem.append(rd.entries);
    if (rd.hardState) n.mem.setHardState(rd.hardState);
    if (rd.confState) n.mem.setConfState(rd.confState);
  }

  /** The appending state machine: a snapshot of the applied state after each Ready (membership as the core applies it). */
  private recordApplied(n: HarnessNode, committed: readonly Entry[]): void {
    const last = committed[committed.length - 1];
    if (last === undefined) return;
    const prev = n.history[n.history.length - 1]!;
    if (last.index <= prev.metadata.index) return;
    const parts = committed.filter((e) => e.type === EntryType.Normal).map((e) => e.data);
    const data = new Uint8Array(prev.data.byteLength + parts.reduce((s, p) => s + p.byteLength, 0));
    data.set(prev.data, 0);
    let at = prev.data.byteLength;
    for (const p of parts) {
      data.set(p, at);
      at += p.byteLength;
    }
    n.history.push({
      metadata: { index: last.index, term: last.term, confState: n.raw.confState() },
      data,
    });
  }

  private persistCmd(c: TestCase): void {
    const n = this.node(c);
    const count = intArg(c, "count") ?? n.pendingWrites.length;
    if (n.pendingWrites.length === 0) this.write("no pending writes");
    this.persist(n, count);
  }

  /** The oldest `count` writes become durable: persisted() for the last one, then their held messages leave. */
  private persist(n: HarnessNode, count: number): void {
    const done = n.pendingWrites.splice(0, Math.min(count, n.pendingWrites.length));
    const last = done[done.length - 1];
    if (last === undefined) return;
    this.write(`persisted ${last.term}/${last.index}`);
    n.raw.persisted(last.index, last.term);
    for (const w of done) {
      for (const m of w.held) this.write("send " + describeMessage(m));
      this.messages.push(...w.held);
    }
  }

  private stabilize(only: NodeId[]): void {
    const nodes = only.length > 0 ? only.map((id) => this.byId(id)) : this.nodes;
    for (let round = 0; round < STABILIZE_ROUNDS_MAX; round++) {
      let done = true;
      for (const n of nodes) {
        if (!n.raw.hasReady()) continue;
        done = false;
        this.write(`> ${n.id} handling Ready`);
        this.withIndent(() => this.processReady(n));
      }
      for (const n of nodes) {
        if (!this.messages.some((m) => m.to === n.id)) continue;
        done = false;
        this.write(`> ${n.id} receiving messages`);
        this.withIndent(() => this.deliver(n.id, undefined, false));
      }
      for (const n of nodes) {
        if (n.pendingWrites.length === 0) continue;
        done = false;
        this.write(`> ${n.id} persisting`);
        this.withIndent(() => this.persist(n, n.pendingWrites.length));
      }
      if (done) return;
    }
    throw new Error(`stabilize: not stable after ${STABILIZE_ROUNDS_MAX} rounds`);
  }

  // ------------------------------------------------------------ inspection

  private compact(c: TestCase): void {
    const n = this.node(c);
    const index = Number(c.args[1]?.key);
    n.mem.compact(index);
    this.raftLog(n);
  }

  private raftLog(n: HarnessNode): void {
    const first = n.mem.firstIndex();
    const last = n.mem.lastIndex();
    if (last < first) {
      this.write(`log is empty: first index=${first}, last index=${last}`);
      return;
    }
    this.write(describeEntries(n.mem.entries(first, last + 1, Number.MAX_SAFE_INTEGER)));
  }

  private raftState(): void {
    for (const n of this.nodes) {
      const s = n.raw.status();
      const voter = s.confState.voters.includes(s.id) ? "(Voter)" : "(Non-Voter)";
      const quiesced = n.raw.isQuiesced() ? " Quiesced" : "";
      this.write(
        `${s.id}: ${roleName(s.role)} ${voter} Term:${s.term} Lead:${s.leader < 0 ? 0 : s.leader}${quiesced}`,
      );
    }
  }

  private status(n: HarnessNode): void {
    const s = n.raw.status();
    const ids = [...s.progress.keys()].sort((a, b) => a - b);
    for (const peer of ids) this.write(describeProgress(peer, s.progress.get(peer)!));
  }
}

function listArg(c: TestCase, key: string): number[] {
  return c.args.filter((a) => a.key === key).flatMap((a) => a.vals.map(Number));
}

function intArg(c: TestCase, key: string): number | undefined {
  const a: CommandArg | undefined = c.args.find((x) => x.key === key);
  if (a === undefined || a.vals.length === 0) return undefined;
  const v = Number(a.vals[0]);
  if (!Number.isInteger(v)) throw new Error(`${key}=${a.vals[0]} is not an integer`);
  return v;
}

function boolArg(c: TestCase, key: string): boolean | undefined {
  const a = c.args.find((x) => x.key === key);
  if (a === undefined || a.vals.length === 0) return undefined;
  if (a.vals[0] !== "true" && a.vals[0] !== "false")
    throw new Error(`${key}=${a.vals[0]} is not a boolean`);
  return a.vals[0] === "true";
}

/** Bare numeric arguments: the node ids a command addresses. */
function nodeIds(c: TestCase): NodeId[] {
  return c.args.filter((a) => a.vals.length === 0 && /^\d+$/.test(a.key)).map((a) => Number(a.key));
}

function secondId(c: TestCase): NodeId {
  const v = Number(c.args[1]?.key);
  if (!Number.isInteger(v)) throw new Error(`${c.cmd} needs a second node id`);
  return v;
}
