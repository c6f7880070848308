// Fetch sessions (KIP-227), as Kafka's FetchSessionCache keeps them: a full fetch with epoch 0
// asks for a session; the answer's session id names it, and the client's next fetches
// (session epoch 1, 2, ...) send only the partitions whose fetch state changed and the ones to
// forget. The listener reads every partition of the session and answers only those with
// something to say: records, an error, or a changed high watermark, last stable offset or log
// start offset (Kafka's rule, plus the last stable offset, which a read_committed consumer
// waits on). Partitions that returned records move to the back of the session, so a
// response's byte limit does not always favour the same ones. A session belongs to the
// connection that made it (another connection naming its id gets FETCH_SESSION_ID_NOT_FOUND),
// which holds at most SESSIONS_PER_CONNECTION_MAX, and goes when that connection closes.
//
// The cache is bounded (`--kafka-fetch-session-cache-slots`, Kafka's
// max.incremental.fetch.session.cache.slots, 1000 by default; 0 turns sessions off). When it is
// full a new session takes a slot, as in Kafka, only from the least recently used session if
// it has been idle longer than EVICTION_MS, or else from the smallest session (fewest
// partitions) created longer than EVICTION_MS ago when the new one has more partitions;
// otherwise no session is made and the fetch is answered with session id 0 (the client goes on
// with full fetches). Kafka's privileged (follower) sessions do not arise: only consumers fetch
// over the Kafka protocol.
import { randomInt } from "node:crypto";

export const FETCH_SESSION_ID_NOT_FOUND = 70;
export const INVALID_FETCH_SESSION_EPOCH = 71;

/** Kafka's min.incremental.fetch.session.eviction.ms: how long a session is safe from eviction. */
export const EVICTION_MS = 120_000;
/** Sessions one connection may hold (a Kafka client keeps one per broker connection). */
export const SESSIONS_PER_CONNECTION_MAX = 4;
/** Kafka's max.incremental.fetch.session.cache.slots default. */
export const FETCH_SESSION_CACHE_SLOTS_DEFAULT = 1_000;

/** Session epochs of a full fetch: 0 asks for a session, -1 for none (or closes the named one). */
const INITIAL_EPOCH = 0;
const FINAL_EPOCH = -1;

/** What a fetch asks of one partition. */
export interface FetchPartition {
  readonly topic: string;
  readonly partition: number;
  readonly fetchOffset: bigint;
  readonly maxBytes: number;
  readonly currentLeaderEpoch: number;
}

/** What a partition's answer showed, compared with the last one answered in its session. */
export interface PartitionOutcome {
  readonly error: number;
  readonly highWatermark: bigint;
  readonly lastStableOffset: bigint;
  readonly logStartOffset: bigint;
  readonly hasRecords: boolean;
}

/** A session's partition: what its fetches last asked, and what was last answered. */
interface CachedPartition {
  asked: FetchPartition;
  highWatermark: bigint;
  lastStableOffset: bigint;
  logStartOffset: bigint;
}

/** The connection a session belongs to. */
export interface SessionOwner {
  readonly sessions: Set<number>;
}

export function newSessionOwner(): SessionOwner {
  return { sessions: new Set() };
}

export class FetchSession {
  /** The epoch the next incremental fetch must carry. */
  epoch = 1;
  lastUsedMs: number;
  /** In session order (Map keeps insertion order; moved to the back by re-inserting). */
  readonly partitions = new Map<string, CachedPartition>();

  constructor(
    readonly id: number,
    readonly owner: SessionOwner,
    readonly createdMs: number,
    partitions: readonly FetchPartition[],
  ) {
    this.lastUsedMs = createdMs;
    for (const p of partitions) this.put(p);
  }

  put(p: FetchPartition): void {
    const k = key(p.topic, p.partition);
    const cached = this.partitions.get(k);
    this.partitions.set(k, {
      asked: p,
      highWatermark: cached?.highWatermark ?? -1n,
      lastStableOffset: cached?.lastStableOffset ?? -1n,
      logStartOffset: cached?.logStartOffset ?? -1n,
    });
  }

  /**
   * Records a partition's answer; true when an incremental answer must include it. Partitions
   * with records go to the back.
   */
  answered(p: FetchPartition, outcome: PartitionOutcome): boolean {
    const k = key(p.topic, p.partition);
    const cached = this.partitions.get(k);
    if (cached === undefined) return true;
    let changed = outcome.hasRecords || outcome.error !== 0;
    if (cached.highWatermark !== outcome.highWatermark) changed = true;
    if (cached.lastStableOffset !== outcome.lastStableOffset) changed = true;
    if (cached.logStartOffset !== outcome.logStartOffset) changed = true;
    // An error leaves an unknown high watermark: the partition is answered again once it clears.
    cached.highWatermark = outcome.error !== 0 ? -1n : outcome.highWatermark;
    cached.lastStableOffset = outcome.lastStableOffset;
    cached.logStartOffset = outcome.logStartOffset;
    if (outcome.hasRecords) {
      this.partitions.delete(k);
      this.partitions.set(k, cached);
    }
    return changed;
  }
}

/** How one fetch is read and answered. */
export type FetchContext =
  /** Answered with this error, no partitions and session id 0. */
  | { readonly kind: "error"; readonly error: number }
  /**
   * Every partition read and answered (a full fetch); `session` when it made one (its id
   * answered), else session id 0. `incremental`: only the partitions the session must answer.
   */
  | {
      readonly kind: "full" | "incremental";
      readonly partitions: readonly FetchPartition[];
      readonly session: FetchSession | undefined;
    };

export interface FetchSessionRequest {
  readonly sessionId: number;
  readonly epoch: number;
  readonly partitions: readonly FetchPartition[];
  readonly forgotten: ReadonlyArray<{ readonly topic: string; readonly partition: number }>;
}

export class FetchSessionCache {
  private readonly sessions = new Map<number, FetchSession>();
  private evictions = 0;

  constructor(
    private readonly slots: number,
    private readonly now: () => number,
    private readonly evictionMs = EVICTION_MS,
  ) {}

  get size(): number {
    return this.sessions.size;
  }

  /** Sessions evicted to make room for others so far. */
  get evicted(): number {
    return this.evictions;
  }

  /**
   * Resolves a fetch against the sessions: which partitions to read and how to answer (Kafka's
   * FetchManager.newContext). Synchronous, so fetches of one connection see each other's epochs
   * in arrival order.
   */
  begin(owner: SessionOwner, q: FetchSessionRequest): FetchContext {
    const now = this.now();
    if (q.epoch === INITIAL_EPOCH || q.epoch === FINAL_EPOCH) {
      if (q.sessionId !== 0) this.remove(this.ownedBy(owner, q.sessionId));
      const session =
        q.epoch === INITIAL_EPOCH ? this.maybeCreate(owner, q.partitions, now) : undefined;
      return { kind: "full", partitions: q.partitions, session };
    }
    const session = this.ownedBy(owner, q.sessionId);
    if (session === undefined) return { kind: "error", error: FETCH_SESSION_ID_NOT_FOUND };
    if (session.epoch !== q.epoch) return { kind: "error", error: INVALID_FETCH_SESSION_EPOCH };
    for (const p of q.partitions) session.put(p);
    for (const f of q.forgotten) session.partitions.delete(key(f.topic, f.partition));
    session.epoch = session.epoch === 0x7fffffff ? 1 : session.epoch + 1;
    session.lastUsedMs = now;
    const partitions = [...session.partitions.values()].map((c) => c.asked);
    return { kind: "incremental", partitions, session };
  }

  /** The connection closed: its sessions go. */
  closeOwner(owner: SessionOwner): void {
    for (const id of [...owner.sessions]) this.remove(this.sessions.get(id));
  }

  private ownedBy(owner: SessionOwner, id: number): FetchSession | undefined {
    const s = this.sessions.get(id);
    return s?.owner === owner ? s : undefined;
  }

  private remove(s: FetchSession | undefined): void {
    if (s === undefined) return;
    this.sessions.delete(s.id);
    s.owner.sessions.delete(s.id);
  }

  private maybeCreate(
    owner: SessionOwner,
    partitions: readonly FetchPartition[],
    now: number,
  ): FetchSession | undefined {
    if (this.slots === 0) return undefined;
    if (owner.sessions.size >= SESSIONS_PER_CONNECTION_MAX) {
      // The connection's least recently used session makes room (its client moved on from it).
      const own = [...owner.sessions].map((id) => this.sessions.get(id)!);
      this.remove(own.reduce((a, b) => (b.lastUsedMs < a.lastUsedMs ? b : a)));
    }
    if (this.sessions.size >= this.slots && !this.tryEvict(partitions.length, now))
      return undefined;
    let id: number;
    do id = randomInt(1, 0x7fffffff);
    while (this.sessions.has(id));
    const session = new FetchSession(id, owner, now, partitions);
    this.sessions.set(id, session);
    owner.sessions.add(id);
    return session;
  }

  /** Kafka's FetchSessionCache.tryEvict for a session of `size` partitions (not privileged). */
  private tryEvict(size: number, now: number): boolean {
    let lru: FetchSession | undefined;
    let smallest: FetchSession | undefined;
    for (const s of this.sessions.values()) {
      if (lru === undefined || s.lastUsedMs < lru.lastUsedMs) lru = s;
      if (now - s.createdMs <= this.evictionMs || s.partitions.size === 0) continue;
      if (
        smallest === undefined ||
        s.partitions.size < smallest.partitions.size ||
        (s.partitions.size === smallest.partitions.size && s.id < smallest.id)
      )
        smallest = s;
    }
    const victim =
      lru !== undefined && now - lru.lastUsedMs > this.evictionMs
        ? lru
        : smallest !== undefined && size > smallest.partitions.size
          ? smallest
          : undefined;
    if (victim === undefined) return false;
    this.remove(victim);
    this.evictions++;
    return true;
  }
}

function key(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}
