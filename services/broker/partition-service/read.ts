// Reads, in the partition service: many partitions from given offsets on their leaders, with
// isolation (READ_COMMITTED stops at the LSO and drops aborted batches; the state machine's
// read). A real long-poll: when fewer than minBytes are available the read parks on the
// partitions' append listeners (woken by apply) until enough arrives, maxWaitMs passes or the
// caller gives up. No timers spin, no polling. Batches come back as the state machine reads
// them (ReadOptions: as stored, or decoded; markers as control batches or not); the adapters
// (gRPC Fetch, the Kafka listener's Fetch) encode them.
import type { SchedulingClock } from "../../../libs/runtime/scheduler.js";
import { TernError, isTernError, type ErrorName } from "../../../libs/common/errors.js";
import type { Logger } from "../../../libs/common/logger.js";
import { BROKER_LIMITS } from "../broker-limits.js";
import type { LocalPartition, PartitionDirectory } from "../local-partition.js";
import type { Isolation, ReadOptions, ReadResult } from "../partition-state-machine.js";
import type { BrokerMetrics } from "../broker-metrics.js";
import type { Endpoint } from "./outcome.js";

/** Bound on the read barrier a fetch past the high watermark waits for (a new leader catching up). */
const READ_BARRIER_TIMEOUT_MS = 2_000;

export interface ReadDeps {
  readonly metrics?: BrokerMetrics | undefined;
  readonly directory: PartitionDirectory;
  readonly logger: Logger;
  /** The long poll's deadline and timer (the process runtime's; a ManualClock in tests). */
  readonly clock: SchedulingClock;
}

/** One partition to read from. */
export interface ReadItem {
  readonly topic: string;
  readonly partition: number;
  readonly fetchOffset: bigint;
  /** 0 or less: BROKER_LIMITS.fetchPartitionBytesMaxDefault. */
  readonly partitionMaxBytes: number;
}

export interface ReadQuery {
  readonly partitions: readonly ReadItem[];
  readonly isolation: Isolation;
  /** How batches come back (the state machine's read options). */
  readonly options: ReadOptions;
  /** Clamped to 0..BROKER_LIMITS.fetchWaitMsMax. */
  readonly maxWaitMs: number;
  /** At least 1. */
  readonly minBytes: number;
  /** 0 or less: the default; clamped to BROKER_LIMITS.fetchBytesMax. */
  readonly maxBytes: number;
  /** Ends the long poll early (the caller went away). */
  readonly signal?: AbortSignal | undefined;
}

/** One partition's read: its offsets and batches, or why not (and where to go instead). */
export interface PartitionRead {
  readonly topic: string;
  readonly partition: number;
  readonly fetchOffset: bigint;
  readonly error: ErrorName;
  readonly message: string;
  /** Set with NONE and OFFSET_OUT_OF_RANGE. */
  readonly read?: ReadResult;
  readonly leader?: Endpoint;
}

interface ItemAnswer {
  error: ErrorName;
  message: string;
  read?: ReadResult;
  leader?: Endpoint;
  local?: LocalPartition;
}

/** Reads every asked partition, waiting for minBytes as the query allows; throws INVALID_REQUEST for a bad query. */
export async function readPartitions(deps: ReadDeps, query: ReadQuery): Promise<PartitionRead[]> {
  if (query.partitions.length > BROKER_LIMITS.partitionsPerRequestMax) {
    throw new TernError(
      "INVALID_REQUEST",
      `${query.partitions.length} partitions in one request (max ${BROKER_LIMITS.partitionsPerRequestMax})`,
    );
  }
  const items: ReadItem[] = query.partitions.map((p) => {
    // The answer echoes every topic: each must stay within fetchPartitionAnswerBytesMax.
    if (Buffer.byteLength(p.topic) > BROKER_LIMITS.topicBytesMax)
      throw new TernError(
        "INVALID_REQUEST",
        `a topic name of ${Buffer.byteLength(p.topic)} bytes (max ${BROKER_LIMITS.topicBytesMax})`,
      );
    return {
      ...p,
      partitionMaxBytes:
        p.partitionMaxBytes > 0 ? p.partitionMaxBytes : BROKER_LIMITS.fetchPartitionBytesMaxDefault,
    };
  });
  const { isolation, options, signal } = query;
  const maxWaitMs = Math.min(Math.max(0, query.maxWaitMs), BROKER_LIMITS.fetchWaitMsMax);
  const minBytes = Math.max(1, query.minBytes);
  // Clamped: a larger answer would not fit in one gRPC message (broker-limits.ts relations).
  const maxBytes = Math.min(
    query.maxBytes > 0 ? query.maxBytes : BROKER_LIMITS.fetchBytesMaxDefault,
    BROKER_LIMITS.fetchBytesMax,
  );
  const clock = deps.clock;
  const deadlineMs = clock.monotonicMs() + maxWaitMs;

  let answers = await readAll(deps, items, isolation, maxBytes, options);
  for (let wakeups = 0; wakeups < BROKER_LIMITS.fetchWakeupsMax; wakeups++) {
    if (!shouldWait(answers, minBytes)) break;
    const remainingMs = deadlineMs - clock.monotonicMs();
    if (remainingMs <= 0 || signal?.aborted === true) break;
    deps.metrics?.fetchWaiters.inc();
    try {
      await waitForAppend(clock, answers, remainingMs, signal);
    } finally {
      deps.metrics?.fetchWaiters.dec();
    }
    answers = await readAll(deps, items, isolation, maxBytes, options);
  }
  deps.metrics?.fetchedBytes.inc(
    { isolation },
    answers.reduce((n, a) => n + (a.read?.bytes ?? 0), 0),
  );
  return items.map((item, i) => {
    const a = answers[i]!;
    return {
      topic: item.topic,
      partition: item.partition,
      fetchOffset: item.fetchOffset,
      error: a.error,
      message: a.message,
      ...(a.read ? { read: a.read } : {}),
      ...(a.leader ? { leader: a.leader } : {}),
    };
  });
}

function shouldWait(answers: ItemAnswer[], minBytes: number): boolean {
  let bytes = 0;
  for (const a of answers) {
    if (a.error !== "NONE") return false;
    bytes += a.read?.bytes ?? 0;
  }
  return bytes < minBytes;
}

/** Resolves at the first append to any of the partitions, or after timeoutMs, or on abort. */
function waitForAppend(
  clock: SchedulingClock,
  answers: ItemAnswer[],
  timeoutMs: number,
  signal: AbortSignal | undefined,
): Promise<void> {
  return new Promise((resolve) => {
    const unsubscribers: Array<() => void> = [];
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      clock.clearTimeout(timer);
      for (const u of unsubscribers) u();
      signal?.removeEventListener("abort", finish);
      resolve();
    };
    const timer = clock.setTimeout(finish, timeoutMs);
    for (const a of answers) if (a.local) unsubscribers.push(a.local.stateMachine.onAppend(finish));
    signal?.addEventListener("abort", finish);
  });
}

async function readAll(
  deps: ReadDeps,
  items: ReadItem[],
  isolation: Isolation,
  maxBytes: number,
  options: ReadOptions,
): Promise<ItemAnswer[]> {
  let budget = maxBytes;
  let firstData = true;
  const answers: ItemAnswer[] = [];
  for (const item of items) {
    const answer = await readOne(deps, item, isolation, budget, firstData, options);
    const bytes = answer.read?.bytes ?? 0;
    if (answer.error === "NONE" && bytes > 0) firstData = false;
    budget = Math.max(0, budget - bytes);
    answers.push(answer);
  }
  return answers;
}

async function readOne(
  deps: ReadDeps,
  item: ReadItem,
  isolation: Isolation,
  budgetBytes: number,
  firstData: boolean,
  options: ReadOptions,
): Promise<ItemAnswer> {
  const { directory } = deps;
  if (directory.lookup(item.topic, item.partition) === "unknown") {
    return {
      error: "UNKNOWN_TOPIC_OR_PARTITION",
      message: `unknown topic-partition ${item.topic}/${item.partition}`,
    };
  }
  const local = directory.local(item.topic, item.partition);
  if (local === undefined) {
    return {
      error: "NOT_LEADER_OR_FOLLOWER",
      message: `this broker has no replica of ${item.topic}/${item.partition}`,
      leader: directory.endpoint(directory.metadataLeader(item.topic, item.partition)),
    };
  }
  if (!local.group.isLeader()) {
    const leader = local.group.leader();
    return {
      error: "NOT_LEADER_OR_FOLLOWER",
      message: `not the leader of ${item.topic}/${item.partition} (leader ${leader})`,
      leader: directory.endpoint(leader),
    };
  }
  const limitBytes = Math.min(item.partitionMaxBytes, budgetBytes);
  try {
    return await readLocal(directory, local, item, isolation, limitBytes, firstData, options);
  } catch (e) {
    if (!isTernError(e, "CORRUPT_MESSAGE")) throw e;
    // A stored record failed its checksum: never served. The replica reported the damage (a
    // leader steps down); the client retries and finds a sound leader (docs/storage.md,
    // "Corruption and repair"). The partition's other answers in this fetch go on.
    return {
      error: "KAFKA_STORAGE_ERROR",
      message: `${item.topic}/${item.partition} at offset ${item.fetchOffset}: stored data is damaged on this replica (${e.message}); retry`,
      leader: directory.endpoint(local.group.leader()),
    };
  }
}

async function readLocal(
  directory: PartitionDirectory,
  local: LocalPartition,
  item: ReadItem,
  isolation: Isolation,
  limitBytes: number,
  firstData: boolean,
  options: ReadOptions,
): Promise<ItemAnswer> {
  let read = await local.stateMachine.read(
    item.fetchOffset,
    limitBytes,
    isolation,
    firstData,
    options,
  );
  if (read.error === "OFFSET_OUT_OF_RANGE" && item.fetchOffset > read.highWatermark) {
    // A new leader may not have applied everything committed yet: catch up before refusing.
    try {
      await local.group.readBarrier({ timeoutMs: READ_BARRIER_TIMEOUT_MS });
    } catch (e) {
      // Unconfirmed: the offset may exist on the real leader. OFFSET_OUT_OF_RANGE would make the
      // consumer reset its position (auto.offset.reset) and re-read or skip records; this
      // retriable code makes it refresh metadata and fetch the same offset again.
      return barrierFailed(directory, local, item, e);
    }
    read = await local.stateMachine.read(
      item.fetchOffset,
      limitBytes,
      isolation,
      firstData,
      options,
    );
  }
  if (read.error !== "NONE") {
    return {
      error: read.error,
      message: `offset ${item.fetchOffset} is outside [${read.logStartOffset}, ${read.highWatermark}]`,
      read,
      local,
    };
  }
  return { error: "NONE", message: "", read, local };
}

function barrierFailed(
  directory: PartitionDirectory,
  local: LocalPartition,
  item: ReadItem,
  e: unknown,
): ItemAnswer {
  const hinted =
    isTernError(e, "NOT_LEADER_OR_FOLLOWER") && typeof e.details.leader === "number"
      ? e.details.leader
      : local.group.leader();
  const why = e instanceof Error ? e.message : String(e);
  return {
    error: "NOT_LEADER_OR_FOLLOWER",
    message: `offset ${item.fetchOffset} is past the high watermark of ${item.topic}/${item.partition} and leadership could not be confirmed (${why}): retry`,
    leader: directory.endpoint(hinted),
  };
}
