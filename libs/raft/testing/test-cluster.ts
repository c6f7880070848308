// A tiny synchronous network of RawNodes over MemoryStorage for unit tests: it persists each
// Ready, delivers messages in order (through an optional drop filter) and records what each
// node applied. No faults beyond dropping; libs/sim does the adversarial version.
import { SeededRandom } from "../../common/prng.js";
import { MemoryStorage } from "../memory-storage.js";
import { RawNode } from "../raw-node.js";
import {
  EntryType,
  type Entry,
  type Message,
  type NodeId,
  type RaftConfig,
  type ReadState,
} from "../types.js";

export const TEST_CONFIG: Omit<RaftConfig, "id"> = {
  electionTick: 10,
  heartbeatTick: 1,
  maxSizePerMsg: 1 << 20,
  maxInflightMsgs: 256,
  maxUncommittedEntriesSize: 1 << 30,
  maxCommittedSizePerReady: 1 << 30,
  preVote: true,
  checkQuorum: true,
  applied: 0,
};

export interface TestMember {
  node: RawNode;
  storage: MemoryStorage;
  applied: Entry[];
  readStates: ReadState[];
  /** Every message this node sent, for assertions. */
  sent: Message[];
}

/** Bound on delivery rounds in one deliver() call, so a livelock fails instead of hanging. */
const DELIVER_ROUNDS_MAX = 10_000;

export class TestCluster {
  readonly members = new Map<NodeId, TestMember>();
  drop: (m: Message) => boolean = () => false;
  private queue: Message[] = [];
  private readonly random: SeededRandom;

  constructor(
    voters: readonly NodeId[],
    overrides: Partial<RaftConfig> = {},
    seed = 1,
    learners: readonly NodeId[] = [],
  ) {
    this.random = new SeededRandom(seed);
    for (const id of [...voters, ...learners]) this.add(id, { voters, learners }, overrides);
  }

  add(
    id: NodeId,
    membership: { voters: readonly NodeId[]; learners?: readonly NodeId[] },
    overrides: Partial<RaftConfig> = {},
  ): TestMember {
    const storage = new MemoryStorage(membership);
    const node = new RawNode({ ...TEST_CONFIG, ...overrides, id }, storage, this.random.fork());
    const member = { node, storage, applied: [], readStates: [], sent: [] };
    this.members.set(id, member);
    return member;
  }

  /**
   * A process restart: a fresh RawNode over the same storage (its log and hard state), which
   * knows no leader until it hears one. Messages in flight to or from it are not touched.
   */
  restart(id: NodeId, overrides: Partial<RaftConfig> = {}): TestMember {
    const m = this.get(id);
    const applied = m.storage.initialState().hardState.commit;
    m.node = new RawNode(
      { ...TEST_CONFIG, ...overrides, id, applied },
      m.storage,
      this.random.fork(),
    );
    return m;
  }

  get(id: NodeId): TestMember {
    const m = this.members.get(id);
    if (!m) throw new Error(`no node ${id}`);
    return m;
  }

  /** Drains every node's Ready once; returns true when anything happened. */
  processReadies(): boolean {
    let any = false;
    for (const [, m] of this.members) {
      if (!m.node.hasReady()) continue;
      any = true;
      const rd = m.node.ready();
      if (rd.snapshot) {
        m.storage.applySnapshot(rd.snapshot);
        m.applied = m.applied.filter((e) => e.index <= rd.snapshot!.metadata.index);
      }
      m.storage.append(rd.entries);
      if (rd.hardState) m.storage.setHardState(rd.hardState);
      if (rd.confState) m.storage.setConfState(rd.confState);
      for (const msg of rd.messages) {
        m.sent.push(msg);
        this.queue.push(msg);
      }
      for (const e of rd.committedEntries) m.applied.push(e);
      m.readStates.push(...rd.readStates);
      m.node.advance();
    }
    return any;
  }

  /** Delivers until quiet. */
  deliver(): void {
    for (let round = 0; round < DELIVER_ROUNDS_MAX; round++) {
      const progressed = this.processReadies();
      if (this.queue.length === 0 && !progressed) return;
      const batch = this.queue;
      this.queue = [];
      for (const msg of batch) {
        const to = this.members.get(msg.to);
        if (to && !this.drop(msg)) to.node.step(msg);
      }
    }
    throw new Error("deliver: no quiescence within bound");
  }

  tick(id: NodeId, times = 1): void {
    for (let i = 0; i < times; i++) this.get(id).node.tick();
  }

  tickAll(times = 1): void {
    for (let i = 0; i < times; i++) {
      for (const [, m] of this.members) m.node.tick();
      this.deliver();
    }
  }

  /** Ticks `ids` (the others are dead or left out) and delivers, until one of them leads: the ticks taken, or Infinity past the bound. */
  ticksUntilLeader(ids: readonly NodeId[], boundTicks: number): number {
    for (let t = 1; t <= boundTicks; t++) {
      for (const id of ids) this.tick(id);
      this.deliver();
      if (ids.some((id) => this.get(id).node.status().role === "leader")) return t;
    }
    return Infinity;
  }

  isolate(id: NodeId): void {
    this.drop = (m) => m.from === id || m.to === id;
  }

  heal(): void {
    this.drop = () => false;
  }

  elect(id: NodeId): void {
    this.get(id).node.campaign();
    this.deliver();
  }

  leader(): NodeId | undefined {
    let best: { id: NodeId; term: number } | undefined;
    for (const [id, m] of this.members) {
      const s = m.node.status();
      if (s.role === "leader" && (!best || s.term > best.term)) best = { id, term: s.term };
    }
    return best?.id;
  }

  propose(id: NodeId, text: string): number {
    const index = this.get(id).node.propose(new TextEncoder().encode(text));
    this.deliver();
    return index;
  }
}

export function appliedData(m: TestMember): string[] {
  return m.applied
    .filter((e) => e.type === EntryType.Normal && e.data.byteLength > 0)
    .map((e) => new TextDecoder().decode(e.data));
}
