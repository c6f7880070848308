// The consumer with manual assignment (Kafka's KafkaConsumer.assign). poll() long-polls the
// leaders of the assigned, unpaused partitions (one Fetch per leader, in parallel) and returns
// at most maxPollRecords records. Positions are per partition: the offset of the next record
// poll() will return. Follows leader changes by refreshing metadata on NOT_LEADER_OR_FOLLOWER.
// read_committed filtering happens on the broker.
import type { Logger } from "../../common/logger.js";
import { silentLogger } from "../../common/logger.js";
import { TernError, type ErrorName } from "../../common/errors.js";
import { ClientError, ClosedError, toClientError } from "../errors.js";
import { ConnectionPool } from "../network/connection-pool.js";
import type { FetchedPartition } from "./fetch-decoder.js";
import { CoordinatorFinder } from "../network/coordinator-finder.js";
import { LOCAL_BOOTSTRAP } from "../network/bootstrap.js";
import { leaderCall } from "../network/leader-call.js";
import { MetadataCache } from "../network/metadata-cache.js";
import { retry } from "../retry/retry.js";
import type { GroupMetadata, TopicPartitionOffset } from "../producer/transaction-manager.js";

export type IsolationLevel = "read_committed" | "read_uncommitted";

export interface TopicPartition {
  readonly topic: string;
  readonly partition: number;
}

export interface ConsumerOptions {
  readonly bootstrap?: string | readonly string[];
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
  readonly requestTimeoutMs?: number;
  readonly logger?: Logger;
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
}

const MAX_POLL_RECORDS_DEFAULT = 500;
const POLL_TIMEOUT_MS_DEFAULT = 1_000;
const BUFFERED_RECORDS_MAX = 100_000;
const FETCH_ERROR_BACKOFF_MS = 100;
const FETCH_RPC_SLACK_MS = 5_000;

function key(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}

export class Consumer {
  private readonly pool = new ConnectionPool();
  private readonly metadata: MetadataCache;
  private readonly finder: CoordinatorFinder;
  private readonly logger: Logger;
  private readonly partitions = new Map<string, PartitionState>();
  private readonly isolation: IsolationLevel;
  private closed = false;
  private rotate = 0;

  constructor(private readonly options: ConsumerOptions = {}) {
    this.logger = options.logger ?? silentLogger();
    this.metadata = new MetadataCache({ bootstrap: options.bootstrap ?? LOCAL_BOOTSTRAP, logger: this.logger });
    this.finder = new CoordinatorFinder(this.pool, this.metadata);
    this.isolation = options.isolationLevel ?? "read_uncommitted";
  }

  get isolationLevel(): IsolationLevel {
    return this.isolation;
  }

  /** Replaces the assignment. Partitions kept keep their positions. */
  assign(tps: readonly TopicPartition[]): void {
    this.ensureOpen();
    const next = new Map<string, PartitionState>();
    for (const tp of tps) {
      const k = key(tp.topic, tp.partition);
      next.set(k, this.partitions.get(k) ?? { topic: tp.topic, partition: tp.partition, fetchOffset: undefined, buffer: [], paused: false, generation: 0 });
    }
    this.partitions.clear();
    for (const [k, v] of next) this.partitions.set(k, v);
  }

  assignment(): TopicPartition[] {
    return [...this.partitions.values()].map((p) => ({ topic: p.topic, partition: p.partition }));
  }

  /** For sendOffsetsToTransaction (a simple group: no generation). */
  groupMetadata(): GroupMetadata {
    return { groupId: this.requireGroup(), generationId: -1, memberId: "" };
  }

  /** Up to maxPollRecords records, waiting up to timeoutMs for some to arrive. */
  async poll(options: { maxPollRecords?: number; timeoutMs?: number } = {}): Promise<ConsumerRecord[]> {
    this.ensureOpen();
    const maxRecords = options.maxPollRecords ?? MAX_POLL_RECORDS_DEFAULT;
    const deadline = Date.now() + (options.timeoutMs ?? POLL_TIMEOUT_MS_DEFAULT);
    for (;;) {
      await this.resolvePositions();
      const ready = this.drainBuffers(maxRecords);
      if (ready.length > 0) return ready;
      const remaining = deadline - Date.now();
      if (remaining <= 0 || this.closed) return [];
      const fetched = await this.fetchOnce(Math.min(remaining, this.options.fetchMaxWaitMs ?? 500));
      if (!fetched && Date.now() < deadline) await new Promise((r) => setTimeout(r, Math.min(FETCH_ERROR_BACKOFF_MS, Math.max(0, deadline - Date.now()))));
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
  async endOffsets(tps: readonly TopicPartition[]): Promise<Array<TopicPartition & { offset: bigint }>> {
    return Promise.all(tps.map(async (tp) => ({ topic: tp.topic, partition: tp.partition, offset: await this.listOffset(tp, -1n) })));
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
    return [...this.partitions.values()].filter((p) => p.paused).map((p) => ({ topic: p.topic, partition: p.partition }));
  }

  /** Commits the given offsets (default: the current positions of every assigned partition). */
  async commitSync(offsets?: readonly TopicPartitionOffset[]): Promise<void> {
    const groupId = this.requireGroup();
    const list = offsets ?? (await this.currentPositions());
    if (list.length === 0) return;
    const request = { groupId, generationId: -1, memberId: "", groupInstanceId: "", partitions: list.map((o) => ({ topic: o.topic, partition: o.partition, offset: String(o.offset), leaderEpoch: -1, metadata: "" })) };
    try {
      await retry(async () => {
        const res = await this.finder.call("GROUP", groupId, "GroupCoordinator", "OffsetCommit", request);
        const failed = (res.partitions ?? []).find((p: any) => p.errorCode !== "NONE");
        if (failed) throw new TernError(failed.errorCode as ErrorName, `${failed.topic}/${failed.partition}: ${failed.errorMessage}`);
      }, { attemptsMax: 10 });
    } catch (e) {
      throw toClientError(e, "commitSync");
    }
  }

  /** Like commitSync but does not wait; the result goes to the callback (and the returned promise never rejects). */
  commitAsync(offsets?: readonly TopicPartitionOffset[], callback?: (error: ClientError | undefined) => void): Promise<void> {
    return this.commitSync(offsets).then(
      () => callback?.(undefined),
      (e) => {
        this.logger.warn({ err: String(e) }, "commitAsync failed");
        callback?.(toClientError(e));
      },
    );
  }

  /** Committed offsets (null when none); waits out pending transactional commits (require_stable). */
  async committed(tps: readonly TopicPartition[]): Promise<Array<TopicPartition & { offset: bigint | null }>> {
    const groupId = this.requireGroup();
    try {
      return await retry(async () => {
        const res = await this.finder.call("GROUP", groupId, "GroupCoordinator", "OffsetFetch", { groupId, partitions: tps.map((t) => ({ topic: t.topic, partition: t.partition })), requireStable: true });
        return (res.partitions ?? []).map((p: any) => {
          if (p.errorCode !== "NONE") throw new TernError(p.errorCode as ErrorName, `${p.topic}/${p.partition}: ${p.errorMessage}`);
          const offset = BigInt(p.offset);
          return { topic: String(p.topic), partition: Number(p.partition), offset: offset < 0n ? null : offset };
        });
      }, { attemptsMax: 30, timeoutMs: 30_000 });
    } catch (e) {
      throw toClientError(e, "committed");
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.metadata.close();
    this.pool.close();
  }

  // --- internals -------------------------------------------------------------------------

  private ensureOpen(): void {
    if (this.closed) throw new ClosedError("the consumer is closed");
  }

  private requireGroup(): string {
    if (!this.options.groupId) throw new ClientError("this call needs a consumer with a groupId", "fatal", "INVALID_GROUP_ID");
    return this.options.groupId;
  }

  private state(tp: TopicPartition): PartitionState {
    const p = this.partitions.get(key(tp.topic, tp.partition));
    if (!p) throw new ClientError(`${tp.topic}/${tp.partition} is not assigned`, "fatal", "INVALID_REQUEST");
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
      p.fetchOffset = c?.offset ?? (await this.listOffset(p, this.options.autoOffsetReset === "latest" ? -1n : -2n));
    }
  }

  private async listOffset(tp: TopicPartition, timestampMs: bigint): Promise<bigint> {
    const request = { isolationLevel: this.wireIsolation(), partitions: [{ topic: tp.topic, partition: tp.partition, timestampMs: String(timestampMs) }] };
    try {
      const res = await leaderCall(this.pool, this.metadata, tp.topic, tp.partition, "ListOffsets", request, (r: any) => ({ code: r.partitions?.[0]?.errorCode ?? "UNKNOWN_SERVER_ERROR", message: r.partitions?.[0]?.errorMessage }));
      return BigInt(res.partitions[0].offset);
    } catch (e) {
      throw toClientError(e, `ListOffsets ${tp.topic}/${tp.partition}`);
    }
  }

  private wireIsolation(): string {
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

  /** One parallel fetch round over every leader; false when nothing could be fetched. */
  private async fetchOnce(maxWaitMs: number): Promise<boolean> {
    await this.metadata.current().catch(() => undefined);
    const byLeader = new Map<string, PartitionState[]>();
    let buffered = 0;
    for (const p of this.partitions.values()) buffered += p.buffer.length;
    if (buffered >= BUFFERED_RECORDS_MAX) return true;
    for (const p of this.partitions.values()) {
      if (p.paused || p.fetchOffset === undefined || p.buffer.length > 0) continue;
      const leader = this.metadata.leaderAddress(p.topic, p.partition);
      if (!leader) {
        this.metadata.invalidate();
        continue;
      }
      let list = byLeader.get(leader);
      if (!list) byLeader.set(leader, (list = []));
      list.push(p);
    }
    if (byLeader.size === 0) {
      if (this.partitions.size > 0) await this.metadata.refresh().catch(() => undefined);
      return false;
    }
    const results = await Promise.all([...byLeader].map(([leader, ps]) => this.fetchFrom(leader, ps, maxWaitMs)));
    return results.some((ok) => ok);
  }

  private async fetchFrom(leader: string, ps: PartitionState[], maxWaitMs: number): Promise<boolean> {
    const generations = ps.map((p) => p.generation);
    const request = {
      maxWaitMs: Math.max(0, Math.floor(maxWaitMs)), minBytes: 1, maxBytes: 0, isolationLevel: this.wireIsolation(),
      partitions: ps.map((p) => ({ topic: p.topic, partition: p.partition, fetchOffset: String(p.fetchOffset), partitionMaxBytes: this.options.partitionMaxBytes ?? 0 })),
    };
    let res: any;
    try {
      res = await this.pool.call("Broker", leader, "Fetch", request, maxWaitMs + (this.options.requestTimeoutMs ?? FETCH_RPC_SLACK_MS));
    } catch (e) {
      this.logger.debug({ leader, err: String(e) }, "fetch failed");
      this.metadata.invalidate();
      return false;
    }
    let ok = false;
    (res.partitions ?? []).forEach((r: any, i: number) => {
      const p = ps[i];
      if (!p || p.generation !== generations[i] || !this.partitions.has(key(p.topic, p.partition))) return;
      if (r.errorCode === "NONE") {
        ok = true;
        this.absorb(p, r);
      } else if (r.errorCode === "OFFSET_OUT_OF_RANGE") {
        p.fetchOffset = undefined; // resolvePositions applies autoOffsetReset
        ok = true;
      } else {
        this.logger.debug({ topic: p.topic, partition: p.partition, error: r.errorCode }, "fetch partition error");
        this.metadata.invalidate();
      }
    });
    return ok;
  }

  private absorb(p: PartitionState, r: FetchedPartition): void {
    const from = p.fetchOffset!;
    for (const b of r.batches) {
      if (b.isControl) continue;
      for (const rec of b.records) if (rec.offset >= from) p.buffer.push(rec);
    }
    const next = BigInt(r.nextFetchOffset ?? from);
    const lastBuffered = p.buffer.length > 0 ? p.buffer[p.buffer.length - 1]!.offset + 1n : from;
    p.fetchOffset = next > lastBuffered ? next : lastBuffered;
  }
}


