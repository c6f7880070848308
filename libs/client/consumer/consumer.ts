// The consumer: manual assignment (Kafka's KafkaConsumer.assign) or group membership
// (subscribe, Kafka 4's consumer rebalance protocol: group-member.ts), whose partition changes
// and listener callbacks happen inside poll(). poll() long-polls the leaders of the assigned,
// unpaused partitions (up to FETCHES_PER_LEADER_MAX fetches in flight per leader, each
// partition in one at most) and returns at most maxPollRecords records as soon as any fetch
// has answered; before it returns it sends the next fetches (Kafka's fetch pipelining), so
// brokers read the next records while the application handles these. Positions are per
// partition: the offset of the next record poll() will return. Follows leader changes by
// refreshing metadata on NOT_LEADER_OR_FOLLOWER.
// read_committed filtering happens on the broker.
import type { ClientLogger as Logger } from "../../common/client-logger.js";
import { silentClientLogger as silentLogger } from "../../common/client-logger.js";
import { isTernError, REFUSED_CODES, TernError, type ErrorName } from "../../common/errors.js";
import { ClientError, ClosedError, toClientError } from "../errors.js";
import {
  clientCredentialsOf,
  GrpcTransport,
  type ClientSecurityOptions,
} from "../network/grpc-transport.js";
import type { DecodedFetchResponse, Transport } from "../network/transport.js";
import { fetchedRecords, type FetchedPartition } from "./fetch-decoder.js";
import { CoordinatorFinder } from "../network/coordinator-finder.js";
import { LOCAL_BOOTSTRAP } from "../network/bootstrap.js";
import { firstPartitionError, leaderCall } from "../network/leader-call.js";
import { MetadataCache } from "../network/metadata-cache.js";
import { retry } from "../retry/retry.js";
import type { GroupMetadata, TopicPartitionOffset } from "../producer/transaction-manager.js";
import { GroupMember, type RebalanceListener } from "./group-member.js";

export type { RebalanceListener } from "./group-member.js";

export type IsolationLevel = "read_committed" | "read_uncommitted";

export interface TopicPartition {
  readonly topic: string;
  readonly partition: number;
}

/** Refusals poll() throws (the ACLs say no; retrying will not help until they change). */

/** `tls` and `credentials` (ClientSecurityOptions): how this client's channels are secured. */
export interface ConsumerOptions extends ClientSecurityOptions {
  readonly bootstrap?: string | readonly string[];
  /**
   * How calls reach the nodes (default: gRPC, see network/grpc-transport.ts). Tests pass a
   * scripted one; a transport given here is the caller's to close.
   */
  readonly transport?: Transport;
  /** Needed for commitSync/commitAsync/committed and to start from committed offsets. */
  readonly groupId?: string;
  /** Default read_uncommitted (Kafka's default). */
  readonly isolationLevel?: IsolationLevel;
  /** Where to start without a committed offset, or after OFFSET_OUT_OF_RANGE (default earliest). */
  readonly autoOffsetReset?: "earliest" | "latest";
  /** Longest broker-side wait of one fetch (default 500). */
  readonly fetchMaxWaitMs?: number;
  /** Bytes per partition per fetch (default 1 MiB). */
  readonly partitionMaxBytes?: number;
  /**
   * Check each fetched batch's CRC-32C (Kafka's check.crcs; default true): a damaged batch makes
   * poll() throw CORRUPT_MESSAGE instead of handing out its records.
   */
  readonly checkCrcs?: boolean;
  readonly requestTimeoutMs?: number;
  readonly logger?: Logger;
  /** Sent to the group coordinator (shown by `tern group describe`). */
  readonly clientId?: string;
  /** Static membership (Kafka's group.instance.id): a restart within the session timeout keeps the partitions. */
  readonly groupInstanceId?: string;
  /** Server-side assignor, "uniform" (default) or "range" (Kafka's group.remote.assignor). */
  readonly groupRemoteAssignor?: string;
  /**
   * Commit positions every autoCommitIntervalMs from poll(), before partitions are revoked, and
   * on close. Default false (Kafka's default is true): exactly-once copiers must not auto-commit.
   */
  readonly enableAutoCommit?: boolean;
  /** Default 5000 (Kafka's). */
  readonly autoCommitIntervalMs?: number;
  /** A subscribed consumer that does not poll for this long leaves its group (default 300000, Kafka's). */
  readonly maxPollIntervalMs?: number;
}

export interface ConsumerRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: bigint;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers: Record<string, Buffer>;
  readonly timestampMs: number;
}

interface PartitionState {
  readonly topic: string;
  readonly partition: number;
  /** Next offset to fetch; undefined until resolved (committed offset or reset policy). */
  fetchOffset: bigint | undefined;
  /** Fetched, not yet returned; the position is buffer[0].offset while non-empty. */
  buffer: ConsumerRecord[];
  paused: boolean;
  /** Bumped by seek/assign so that an in-flight fetch's answer for an older position is dropped. */
  generation: number;
  /** In a Fetch in flight (never in two: their answers would both be absorbed). */
  fetching: boolean;
}

const MAX_POLL_RECORDS_DEFAULT = 500;
const POLL_TIMEOUT_MS_DEFAULT = 1_000;
const BUFFERED_RECORDS_MAX = 100_000;
const FETCH_ERROR_BACKOFF_MS = 100;
const FETCH_MAX_WAIT_MS_DEFAULT = 500;
/**
 * Fetches in flight to one leader. More than one lets a leader of several partitions read the
 * next answer while this process decodes the last; each partition is in one fetch at most.
 */
const FETCHES_PER_LEADER_MAX = 3;
const FETCH_RPC_SLACK_MS = 5_000;
const AUTO_COMMIT_INTERVAL_MS_DEFAULT = 5_000;
const MAX_POLL_INTERVAL_MS_DEFAULT = 300_000;
const GROUP_REQUEST_TIMEOUT_MS = 5_000;
/** Commits answered STALE_MEMBER_EPOCH are retried after the next heartbeat, this many times. */
const STALE_EPOCH_RETRIES_MAX = 5;

function key(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}

export class Consumer {
  private readonly transport: Transport;
  private readonly ownsTransport: boolean;
  /** An ACL refusal or a corrupt batch from the last fetch round, thrown by the next poll(). */
  private refusal: ClientError | undefined;
  private readonly metadata: MetadataCache;
  private readonly finder: CoordinatorFinder;
  private readonly logger: Logger;
  private readonly partitions = new Map<string, PartitionState>();
  private readonly isolation: IsolationLevel;
  private closed = false;
  private rotate = 0;
  private member: GroupMember | undefined;
  private listener: RebalanceListener = {};
  private subscribed: string[] | RegExp | undefined;
  private lastAutoCommitMs = Date.now();
  /** Fetches in flight, by leader address (at most FETCHES_PER_LEADER_MAX each). */
  private readonly inFlight = new Map<string, Set<Promise<boolean>>>();

  constructor(private readonly options: ConsumerOptions = {}) {
    this.logger = options.logger ?? silentLogger();
    const channels = clientCredentialsOf(options);
    this.transport = options.transport ?? new GrpcTransport(channels, options.credentials);
    this.ownsTransport = options.transport === undefined;
    this.metadata = new MetadataCache({
      bootstrap: options.bootstrap ?? LOCAL_BOOTSTRAP,
      logger: this.logger,
      credentials: options.credentials,
      transport: this.transport,
    });
    this.finder = new CoordinatorFinder(this.transport, this.metadata);
    this.isolation = options.isolationLevel ?? "read_uncommitted";
  }

  get isolationLevel(): IsolationLevel {
    return this.isolation;
  }

  /**
   * Joins the consumer's group subscribed to these topics, or to every topic whose whole name
   * matches the regular expression (new topics and partitions are picked up; the source is
   * sent, flags are ignored). Partitions arrive and leave inside poll(), with the listener's
   * callbacks. Calling it again changes the subscription.
   */
  subscribe(topics: readonly string[] | RegExp, listener: RebalanceListener = {}): void {
    this.ensureOpen();
    const groupId = this.requireGroup();
    if (!(topics instanceof RegExp) && topics.length === 0)
      throw new ClientError(
        "subscribe needs at least one topic (or call unsubscribe)",
        "fatal",
        "INVALID_REQUEST",
      );
    if (!this.member && this.partitions.size > 0)
      throw new ClientError(
        "subscribe after assign: call assign([]) first",
        "fatal",
        "INVALID_REQUEST",
      );
    this.subscribed = topics instanceof RegExp ? topics : [...topics];
    this.listener = listener;
    const subscription =
      topics instanceof RegExp
        ? { topics: [], regex: topics.source }
        : { topics: [...topics], regex: "" };
    if (this.member) {
      this.member.setSubscription(subscription);
      return;
    }
    this.member = new GroupMember(
      {
        groupId,
        finder: this.finder,
        logger: this.logger,
        clientId: this.options.clientId ?? "tern-consumer",
        ...(this.options.groupInstanceId ? { groupInstanceId: this.options.groupInstanceId } : {}),
        ...(this.options.groupRemoteAssignor
          ? { serverAssignor: this.options.groupRemoteAssignor }
          : {}),
        maxPollIntervalMs: this.options.maxPollIntervalMs ?? MAX_POLL_INTERVAL_MS_DEFAULT,
        requestTimeoutMs: this.options.requestTimeoutMs ?? GROUP_REQUEST_TIMEOUT_MS,
      },
      subscription,
    );
  }

  /** The current subscription (undefined with manual assignment). */
  subscription(): string[] | RegExp | undefined {
    return this.subscribed instanceof RegExp
      ? this.subscribed
      : this.subscribed
        ? [...this.subscribed]
        : undefined;
  }

  /** Gives up every partition (auto-commit and onPartitionsRevoked first) and leaves the group. */
  async unsubscribe(): Promise<void> {
    const member = this.member;
    if (!member) return;
    await this.revoke(
      [...this.partitions.values()].map((p) => ({ topic: p.topic, partition: p.partition })),
    );
    await member.leave();
    this.member = undefined;
    this.subscribed = undefined;
    this.partitions.clear();
  }

  /** Replaces the assignment. Partitions kept keep their positions. */
  assign(tps: readonly TopicPartition[]): void {
    this.ensureOpen();
    if (this.member)
      throw new ClientError(
        "assign while subscribed: call unsubscribe first",
        "fatal",
        "INVALID_REQUEST",
      );
    const next = new Map<string, PartitionState>();
    for (const tp of tps) {
      const k = key(tp.topic, tp.partition);
      next.set(
        k,
        this.partitions.get(k) ?? {
          topic: tp.topic,
          partition: tp.partition,
          fetchOffset: undefined,
          buffer: [],
          paused: false,
          generation: 0,
          fetching: false,
        },
      );
    }
    this.partitions.clear();
    for (const [k, v] of next) this.partitions.set(k, v);
  }

  assignment(): TopicPartition[] {
    return [...this.partitions.values()].map((p) => ({ topic: p.topic, partition: p.partition }));
  }

  /**
   * For sendOffsetsToTransaction: the member id and current member epoch when subscribed (so a
   * fenced zombie's transactional commit is refused), generation -1 for a simple group.
   */
  groupMetadata(): GroupMetadata {
    const groupId = this.requireGroup();
    if (!this.member) return { groupId, generationId: -1, memberId: "" };
    const { memberId, memberEpoch } = this.member.generation();
    return {
      groupId,
      generationId: memberEpoch,
      memberId,
      ...(this.options.groupInstanceId ? { groupInstanceId: this.options.groupInstanceId } : {}),
    };
  }

  /** Up to maxPollRecords records, waiting up to timeoutMs for some to arrive. */
  async poll(
    options: { maxPollRecords?: number; timeoutMs?: number } = {},
  ): Promise<ConsumerRecord[]> {
    this.ensureOpen();
    const maxRecords = options.maxPollRecords ?? MAX_POLL_RECORDS_DEFAULT;
    const deadline = Date.now() + (options.timeoutMs ?? POLL_TIMEOUT_MS_DEFAULT);
    this.member?.polled();
    await this.maybeAutoCommit();
    for (;;) {
      await this.reconcileGroup();
      await this.resolvePositions();
      const ready = this.drainBuffers(maxRecords);
      if (ready.length > 0) {
        // Pipelining: the next fetches are read and sent while the caller handles these.
        this.startFetches(this.options.fetchMaxWaitMs ?? FETCH_MAX_WAIT_MS_DEFAULT);
        return ready;
      }
      const remaining = deadline - Date.now();
      if (remaining <= 0 || this.closed) return [];
      await this.metadata.current().catch(() => undefined);
      this.startFetches(
        Math.min(remaining, this.options.fetchMaxWaitMs ?? FETCH_MAX_WAIT_MS_DEFAULT),
      );
      const fetched = await this.firstAnswer(remaining);
      this.throwRefusal();
      if (!fetched && Date.now() < deadline)
        await new Promise((r) =>
          setTimeout(r, Math.min(FETCH_ERROR_BACKOFF_MS, Math.max(0, deadline - Date.now()))),
        );
    }
  }

  seek(tp: TopicPartition, offset: bigint): void {
    const p = this.state(tp);
    if (offset < 0n) throw new RangeError(`seek offset must be >= 0, got ${offset}`);
    p.fetchOffset = offset;
    p.buffer = [];
    p.generation += 1;
  }

  async seekToBeginning(tps?: readonly TopicPartition[]): Promise<void> {
    for (const tp of tps ?? this.assignment()) this.seek(tp, await this.listOffset(tp, -2n));
  }

  async seekToEnd(tps?: readonly TopicPartition[]): Promise<void> {
    for (const tp of tps ?? this.assignment()) this.seek(tp, await this.listOffset(tp, -1n));
  }

  /** The end offsets (high watermark, or the last stable offset under read_committed); positions are unchanged. */
  async endOffsets(
    tps: readonly TopicPartition[],
  ): Promise<Array<TopicPartition & { offset: bigint }>> {
    return Promise.all(
      tps.map(async (tp) => ({
        topic: tp.topic,
        partition: tp.partition,
        offset: await this.listOffset(tp, -1n),
      })),
    );
  }

  /** The offset of the next record poll() returns for tp (resolving it if unknown). */
  async position(tp: TopicPartition): Promise<bigint> {
    const p = this.state(tp);
    if (p.fetchOffset === undefined) await this.resolvePositions();
    return p.buffer.length > 0 ? p.buffer[0]!.offset : p.fetchOffset!;
  }

  pause(tps: readonly TopicPartition[]): void {
    for (const tp of tps) this.state(tp).paused = true;
  }

  resume(tps: readonly TopicPartition[]): void {
    for (const tp of tps) this.state(tp).paused = false;
  }

  paused(): TopicPartition[] {
    return [...this.partitions.values()]
      .filter((p) => p.paused)
      .map((p) => ({ topic: p.topic, partition: p.partition }));
  }

  /**
   * Commits the given offsets (default: the current positions of every assigned partition).
   * A subscribed consumer commits as its member at its current epoch: UNKNOWN_MEMBER_ID or
   * FENCED_MEMBER_EPOCH means it is no longer a member (its partitions are lost); an answer
   * STALE_MEMBER_EPOCH is retried after the next heartbeat.
   */
  async commitSync(offsets?: readonly TopicPartitionOffset[]): Promise<void> {
    const groupId = this.requireGroup();
    const list = offsets ?? (await this.currentPositions());
    if (list.length === 0) return;
    const partitions = list.map((o) => ({
      topic: o.topic,
      partition: o.partition,
      offset: String(o.offset),
      leaderEpoch: -1,
      metadata: "",
    }));
    try {
      for (let stale = 0; ; stale++) {
        const { generationId, memberId } = this.groupMetadata();
        const request = {
          groupId,
          generationId: generationId ?? -1,
          memberId: memberId ?? "",
          groupInstanceId: this.options.groupInstanceId ?? "",
          partitions,
        };
        try {
          await retry(
            async () => {
              const res = await this.finder.call(
                "GROUP",
                groupId,
                "GroupCoordinator",
                "OffsetCommit",
                request,
              );
              const failed = (res.partitions ?? []).find((p) => p.errorCode !== "NONE");
              if (failed)
                throw new TernError(
                  failed.errorCode as ErrorName,
                  `${failed.topic}/${failed.partition}: ${failed.errorMessage}`,
                );
            },
            { attemptsMax: 10 },
          );
          return;
        } catch (e) {
          if (!(
            e instanceof TernError &&
            e.errorName === "STALE_MEMBER_EPOCH" &&
            this.member &&
            stale < STALE_EPOCH_RETRIES_MAX
          ))
            throw e;
          await this.member.nextAnswer(GROUP_REQUEST_TIMEOUT_MS);
        }
      }
    } catch (e) {
      throw toClientError(e, "commitSync");
    }
  }

  /** Like commitSync but does not wait; the result goes to the callback (and the returned promise never rejects). */
  commitAsync(
    offsets?: readonly TopicPartitionOffset[],
    callback?: (error: ClientError | undefined) => void,
  ): Promise<void> {
    return this.commitSync(offsets).then(
      () => callback?.(undefined),
      (e) => {
        this.logger.warn({ err: String(e) }, "commitAsync failed");
        callback?.(toClientError(e));
      },
    );
  }

  /** Committed offsets (null when none); waits out pending transactional commits (require_stable). */
  async committed(
    tps: readonly TopicPartition[],
  ): Promise<Array<TopicPartition & { offset: bigint | null }>> {
    const groupId = this.requireGroup();
    try {
      return await retry(
        async () => {
          const res = await this.finder.call("GROUP", groupId, "GroupCoordinator", "OffsetFetch", {
            groupId,
            partitions: tps.map((t) => ({ topic: t.topic, partition: t.partition })),
            requireStable: true,
          });
          return (res.partitions ?? []).map((p) => {
            if (p.errorCode !== "NONE")
              throw new TernError(
                p.errorCode as ErrorName,
                `${p.topic}/${p.partition}: ${p.errorMessage}`,
              );
            const offset = BigInt(p.offset);
            return {
              topic: String(p.topic),
              partition: Number(p.partition),
              offset: offset < 0n ? null : offset,
            };
          });
        },
        { attemptsMax: 30, timeoutMs: 30_000 },
      );
    } catch (e) {
      throw toClientError(e, "committed");
    }
  }

  /** Closes; a subscribed consumer first commits (with auto-commit), revokes and leaves its group. */
  async close(): Promise<void> {
    if (this.closed) return;
    if (this.member) {
      try {
        await this.unsubscribe();
      } catch (e) {
        this.logger.warn({ err: String(e) }, "leaving the group on close failed");
      }
    }
    this.closed = true;
    this.metadata.close();
    if (this.ownsTransport) this.transport.close();
  }

  // --- internals -------------------------------------------------------------------------

  /** Kafka's poll() throws TopicAuthorizationException: an ACL refusal is the caller's to see, not retried quietly. */
  private throwRefusal(): void {
    const refusal = this.refusal;
    if (refusal === undefined) return;
    this.refusal = undefined;
    throw refusal;
  }

  private ensureOpen(): void {
    if (this.closed) throw new ClosedError("the consumer is closed");
  }

  private requireGroup(): string {
    if (!this.options.groupId)
      throw new ClientError(
        "this call needs a consumer with a groupId",
        "fatal",
        "INVALID_GROUP_ID",
      );
    return this.options.groupId;
  }

  /** Applies what the group member says: partitions lost, revoked (after a commit), or assigned. */
  private async reconcileGroup(): Promise<void> {
    const member = this.member;
    if (!member) return;
    const r = member.reconciliation();
    if (r.rejoin) {
      for (const tp of r.lost) this.partitions.delete(key(tp.topic, tp.partition));
      try {
        if (r.lost.length > 0) await this.listener.onPartitionsLost?.(r.lost);
      } finally {
        member.released(r.lost, true);
      }
      return;
    }
    if (r.revoked.length > 0) await this.revoke(r.revoked);
    if (r.assigned.length > 0) {
      for (const tp of r.assigned) {
        const k = key(tp.topic, tp.partition);
        if (!this.partitions.has(k))
          this.partitions.set(k, {
            topic: tp.topic,
            partition: tp.partition,
            fetchOffset: undefined,
            buffer: [],
            paused: false,
            generation: 0,
            fetching: false,
          });
      }
      member.acquired(r.assigned);
      await this.listener.onPartitionsAssigned?.(r.assigned);
    }
  }

  /** Gives up partitions: commits their positions (auto-commit), tells the listener, then drops them. */
  private async revoke(tps: TopicPartition[]): Promise<void> {
    if (tps.length === 0) return;
    if (this.options.enableAutoCommit && this.member?.inGroup()) {
      const positions: TopicPartitionOffset[] = [];
      for (const tp of tps) {
        const p = this.partitions.get(key(tp.topic, tp.partition));
        if (p?.fetchOffset !== undefined)
          positions.push({
            topic: p.topic,
            partition: p.partition,
            offset: p.buffer.length > 0 ? p.buffer[0]!.offset : p.fetchOffset,
          });
      }
      try {
        await this.commitSync(positions);
      } catch (e) {
        this.logger.warn({ err: String(e) }, "commit before revocation failed");
      }
    }
    try {
      await this.listener.onPartitionsRevoked?.(tps);
    } finally {
      for (const tp of tps) this.partitions.delete(key(tp.topic, tp.partition));
      this.member?.released(tps, false);
    }
  }

  private async maybeAutoCommit(): Promise<void> {
    if (!this.options.enableAutoCommit || !this.options.groupId) return;
    if (this.member && !this.member.inGroup()) return;
    if (
      Date.now() - this.lastAutoCommitMs <
      (this.options.autoCommitIntervalMs ?? AUTO_COMMIT_INTERVAL_MS_DEFAULT)
    )
      return;
    this.lastAutoCommitMs = Date.now();
    // Positions returned by earlier polls count as processed (Kafka's at-least-once auto-commit).
    await this.commitAsync();
  }

  private state(tp: TopicPartition): PartitionState {
    const p = this.partitions.get(key(tp.topic, tp.partition));
    if (!p)
      throw new ClientError(
        `${tp.topic}/${tp.partition} is not assigned`,
        "fatal",
        "INVALID_REQUEST",
      );
    return p;
  }

  private async currentPositions(): Promise<TopicPartitionOffset[]> {
    const out: TopicPartitionOffset[] = [];
    for (const p of this.partitions.values()) {
      if (p.fetchOffset === undefined) continue;
      out.push({ topic: p.topic, partition: p.partition, offset: await this.position(p) });
    }
    return out;
  }

  private async resolvePositions(): Promise<void> {
    const unknown = [...this.partitions.values()].filter((p) => p.fetchOffset === undefined);
    if (unknown.length === 0) return;
    const committed = this.options.groupId ? await this.committed(unknown) : [];
    for (const p of unknown) {
      const c = committed.find((x) => x.topic === p.topic && x.partition === p.partition);
      p.fetchOffset =
        c?.offset ??
        (await this.listOffset(p, this.options.autoOffsetReset === "latest" ? -1n : -2n));
    }
  }

  private async listOffset(tp: TopicPartition, timestampMs: bigint): Promise<bigint> {
    const request = {
      isolationLevel: this.wireIsolation(),
      partitions: [{ topic: tp.topic, partition: tp.partition, timestampMs: String(timestampMs) }],
    };
    try {
      const res = await leaderCall(
        this.transport,
        this.metadata,
        tp.topic,
        tp.partition,
        "ListOffsets",
        request,
        firstPartitionError,
      );
      return BigInt(res.partitions[0].offset);
    } catch (e) {
      throw toClientError(e, `ListOffsets ${tp.topic}/${tp.partition}`);
    }
  }

  private wireIsolation(): "READ_COMMITTED" | "READ_UNCOMMITTED" {
    return this.isolation === "read_committed" ? "READ_COMMITTED" : "READ_UNCOMMITTED";
  }

  private drainBuffers(maxRecords: number): ConsumerRecord[] {
    const out: ConsumerRecord[] = [];
    const list = [...this.partitions.values()];
    if (list.length === 0) return out;
    this.rotate = (this.rotate + 1) % list.length;
    for (let i = 0; i < list.length && out.length < maxRecords; i++) {
      const p = list[(this.rotate + i) % list.length]!;
      if (p.paused || p.buffer.length === 0) continue;
      out.push(...p.buffer.splice(0, maxRecords - out.length));
    }
    return out;
  }

  /**
   * Sends Fetches for the fetchable partitions (assigned, unpaused, position known, nothing
   * buffered, not in a fetch): to each leader, split over its free slots (at most
   * FETCHES_PER_LEADER_MAX in flight), so a leader of several partitions reads one while the
   * answer of another is decoded here. Each partition is in at most one fetch, so what is in
   * flight stays within one answer per partition; nothing is sent while the buffers hold
   * BUFFERED_RECORDS_MAX records.
   */
  private startFetches(maxWaitMs: number): void {
    if (this.closed) return;
    let buffered = 0;
    for (const p of this.partitions.values()) buffered += p.buffer.length;
    if (buffered >= BUFFERED_RECORDS_MAX) return;
    const byLeader = new Map<string, PartitionState[]>();
    let leaderless = false;
    for (const p of this.partitions.values()) {
      if (p.paused || p.fetching || p.fetchOffset === undefined || p.buffer.length > 0) continue;
      const leader = this.metadata.leaderAddress(p.topic, p.partition);
      if (!leader) {
        leaderless = true;
        continue;
      }
      let list = byLeader.get(leader);
      if (!list) byLeader.set(leader, (list = []));
      list.push(p);
    }
    if (leaderless) this.metadata.invalidate();
    for (const [leader, ps] of byLeader) {
      const slots = FETCHES_PER_LEADER_MAX - (this.inFlight.get(leader)?.size ?? 0);
      if (slots <= 0) continue;
      const groups: PartitionState[][] = Array.from(
        { length: Math.min(slots, ps.length) },
        () => [],
      );
      ps.forEach((p, i) => groups[i % groups.length]!.push(p));
      for (const group of groups) this.startFetch(leader, group, maxWaitMs);
    }
  }

  private startFetch(leader: string, ps: PartitionState[], maxWaitMs: number): void {
    for (const p of ps) p.fetching = true;
    let calls = this.inFlight.get(leader);
    if (!calls) this.inFlight.set(leader, (calls = new Set()));
    const done: Promise<boolean> = this.fetchFrom(leader, ps, maxWaitMs)
      .catch((e: unknown) => {
        this.logger.debug({ leader, err: String(e) }, "fetch answer not absorbed");
        return false;
      })
      .finally(() => {
        for (const p of ps) p.fetching = false;
        calls.delete(done);
        if (calls.size === 0 && this.inFlight.get(leader) === calls) this.inFlight.delete(leader);
      });
    calls.add(done);
  }

  /**
   * Waits for the first fetch in flight to be answered (true when it brought something or
   * moved a position), at most timeoutMs; false at once when none is in flight (then metadata
   * is refreshed: no partition had a leader).
   */
  private async firstAnswer(timeoutMs: number): Promise<boolean> {
    if (this.inFlight.size === 0) {
      if (this.partitions.size > 0) await this.metadata.refresh().catch(() => undefined);
      return false;
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(true), Math.max(0, timeoutMs));
    });
    try {
      const calls = [...this.inFlight.values()].flatMap((set) => [...set]);
      return await Promise.race([...calls, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  private async fetchFrom(
    leader: string,
    ps: PartitionState[],
    maxWaitMs: number,
  ): Promise<boolean> {
    const generations = ps.map((p) => p.generation);
    const request = {
      maxWaitMs: Math.max(0, Math.floor(maxWaitMs)),
      minBytes: 1,
      maxBytes: 0,
      isolationLevel: this.wireIsolation(),
      partitions: ps.map((p) => ({
        topic: p.topic,
        partition: p.partition,
        fetchOffset: String(p.fetchOffset),
        partitionMaxBytes: this.options.partitionMaxBytes ?? 0,
      })),
    };
    let res: DecodedFetchResponse;
    try {
      res = await this.transport.call(
        "Broker",
        leader,
        "Fetch",
        request,
        maxWaitMs + (this.options.requestTimeoutMs ?? FETCH_RPC_SLACK_MS),
      );
    } catch (e) {
      if (isTernError(e) && REFUSED_CODES.has(e.errorName))
        this.refusal ??= toClientError(e, "Fetch");
      this.logger.debug({ leader, err: String(e) }, "fetch failed");
      this.metadata.invalidate();
      return false;
    }
    const results = res.partitions ?? [];
    const checkCrcs = this.options.checkCrcs ?? true;
    const decoded = await Promise.all(
      results.map((r, i) => {
        const from = ps[i]?.fetchOffset;
        if (r.errorCode !== "NONE" || from === undefined) return undefined;
        return fetchedRecords(r, from, { checkCrcs }).catch((e: unknown) => e as Error);
      }),
    );
    let ok = false;
    results.forEach((r, i) => {
      const p = ps[i];
      // Dropped when the position moved meanwhile (a seek bumps the generation; nothing else
      // moves a position in a fetch) or the partition left the assignment.
      if (
        !p ||
        p.generation !== generations[i] ||
        this.partitions.get(key(p.topic, p.partition)) !== p
      )
        return;
      const records = decoded[i];
      if (records instanceof Error) {
        // Kafka's consumer throws on a corrupt batch and stays at its offset: so does poll().
        this.refusal ??= new ClientError(
          `Fetch: CORRUPT_MESSAGE: ${records.message}`,
          "retriable",
          "CORRUPT_MESSAGE",
          { cause: records },
        );
        this.logger.warn({ err: records.message }, "fetched batch does not decode");
      } else if (r.errorCode === "NONE") {
        ok = true;
        this.absorb(p, r, records ?? []);
      } else if (r.errorCode === "OFFSET_OUT_OF_RANGE") {
        p.fetchOffset = undefined; // resolvePositions applies autoOffsetReset
        ok = true;
      } else {
        if (REFUSED_CODES.has(r.errorCode as ErrorName))
          this.refusal ??= toClientError(
            new TernError(r.errorCode as ErrorName, `${p.topic}/${p.partition}: ${r.errorMessage}`),
            "Fetch",
          );
        this.logger.debug(
          { topic: p.topic, partition: p.partition, error: r.errorCode },
          "fetch partition error",
        );
        this.metadata.invalidate();
      }
    });
    return ok;
  }

  /** records: the answer's, from the fetch offset on, control batches left out (fetchedRecords). */
  private absorb(p: PartitionState, r: FetchedPartition, records: readonly ConsumerRecord[]): void {
    const from = p.fetchOffset!;
    for (const rec of records) p.buffer.push(rec);
    const next = BigInt(r.nextFetchOffset ?? from);
    const lastBuffered = p.buffer.length > 0 ? p.buffer[p.buffer.length - 1]!.offset + 1n : from;
    p.fetchOffset = next > lastBuffered ? next : lastBuffered;
  }
}
