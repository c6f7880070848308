// Fetch: reads many partitions from given offsets on their leaders, answering each batch as
// its stored bytes (kafka_batch) or, with decode_records, as proto records. A real long-poll: when
// fewer than min_bytes are available the request parks on the partitions' append listeners
// (woken by apply) until enough arrives or max_wait_ms passes. No timers spin, no polling.
import type * as grpc from "@grpc/grpc-js";
import type { SchedulingClock } from "../../libs/runtime/scheduler.js";
import { TernError, isTernError, type ErrorName } from "../../libs/common/errors.js";
import type { Logger } from "../../libs/common/logger.js";
import { BROKER_LIMITS } from "./broker-limits.js";
import type { LocalPartition, PartitionDirectory } from "./local-partition.js";
import type { Isolation, ReadOptions, ReadResult } from "./partition-state-machine.js";
import type { BrokerMetrics } from "./broker-metrics.js";
import type { WireBatch } from "./fetch-codec.js";
import {
  batchToWire,
  enumName,
  errorFields,
  int32,
  int64,
  ISOLATION_NAMES,
  type WireEndpoint,
} from "./wire.js";
import type {
  FetchPartitionResult__Output,
  FetchRequest__Output,
  FetchResponse,
} from "../../libs/common/proto-types/index.js";

/** Bound on the read barrier a fetch past the high watermark waits for (a new leader catching up). */
const READ_BARRIER_TIMEOUT_MS = 2_000;

export interface FetchDeps {
  readonly metrics?: BrokerMetrics;
  readonly directory: PartitionDirectory;
  readonly logger: Logger;
  /** The long poll's deadline and timer (the process runtime's; a ManualClock in tests). */
  readonly clock: SchedulingClock;
}

interface FetchItem {
  topic: string;
  partition: number;
  fetchOffset: bigint;
  partitionMaxBytes: number;
}

interface ItemAnswer {
  error: ErrorName;
  message: string;
  read?: ReadResult;
  leader?: WireEndpoint;
  local?: LocalPartition;
}

export function parseIsolation(value: unknown): Isolation {
  const name = enumName(value, ISOLATION_NAMES) ?? "READ_UNCOMMITTED";
  if (name !== "READ_UNCOMMITTED" && name !== "READ_COMMITTED")
    throw new TernError("INVALID_REQUEST", `unknown isolation level ${String(value)}`);
  return name;
}

/**
 * The request as the handler reads it: storedBatches is set in process only (the Kafka
 * listener; proto-loader drops fields the proto lacks).
 */
export type FetchHandlerRequest = Omit<FetchRequest__Output, "decodeRecords"> & {
  readonly decodeRecords?: boolean;
  readonly storedBatches?: boolean;
};
type FetchCall = grpc.ServerUnaryCall<FetchRequest__Output, FetchResponse>;
/** The answer: every partition field set; its batches are WireBatch (written by fetch-codec.ts). */
export type FetchHandlerResponse = {
  partitions: Array<Omit<FetchPartitionResult__Output, "batches"> & { batches: WireBatch[] }>;
};

export function createFetchHandler(
  deps: FetchDeps,
): (request: FetchHandlerRequest, call?: FetchCall) => Promise<FetchHandlerResponse> {
  return async (request, call) => {
    const rawItems = Array.isArray(request?.partitions) ? request.partitions : [];
    if (rawItems.length > BROKER_LIMITS.partitionsPerRequestMax) {
      throw new TernError(
        "INVALID_REQUEST",
        `${rawItems.length} partitions in one request (max ${BROKER_LIMITS.partitionsPerRequestMax})`,
      );
    }
    const items: FetchItem[] = rawItems.map((p) => {
      const partitionMaxBytes = int32(p?.partitionMaxBytes);
      const topic = String(p?.topic ?? "");
      // The answer echoes every topic: each must stay within fetchPartitionAnswerBytesMax.
      if (Buffer.byteLength(topic) > BROKER_LIMITS.topicBytesMax)
        throw new TernError(
          "INVALID_REQUEST",
          `a topic name of ${Buffer.byteLength(topic)} bytes (max ${BROKER_LIMITS.topicBytesMax})`,
        );
      return {
        topic,
        partition: int32(p?.partition, -1),
        fetchOffset: int64(p?.fetchOffset, "fetch_offset"),
        partitionMaxBytes:
          partitionMaxBytes > 0 ? partitionMaxBytes : BROKER_LIMITS.fetchPartitionBytesMaxDefault,
      };
    });
    const isolation = parseIsolation(request?.isolationLevel);
    // storedBatches is in-process only (the Kafka listener: proto-loader drops fields the proto
    // lacks): batches as stored, whole, old ones as records, which it encodes itself. A gRPC
    // fetch gets every batch as v2 bytes (kafka_batch; markers as control batches under
    // read_uncommitted) unless it asks for decoded records.
    const inProcess = request?.storedBatches === true;
    const asKafkaBatch = !inProcess && request?.decodeRecords !== true;
    const options: ReadOptions = {
      storedBatches: inProcess || asKafkaBatch,
      controlBatches: asKafkaBatch,
    };
    const maxWaitMs = Math.min(
      Math.max(0, int32(request?.maxWaitMs)),
      BROKER_LIMITS.fetchWaitMsMax,
    );
    const minBytes = Math.max(1, int32(request?.minBytes));
    const maxBytesRaw = int32(request?.maxBytes);
    // Clamped: a larger answer would not fit in one gRPC message (broker-limits.ts relations).
    const maxBytes = Math.min(
      maxBytesRaw > 0 ? maxBytesRaw : BROKER_LIMITS.fetchBytesMaxDefault,
      BROKER_LIMITS.fetchBytesMax,
    );
    const clock = deps.clock;
    const deadlineMs = clock.monotonicMs() + maxWaitMs;

    let answers = await readAll(deps, items, isolation, maxBytes, options);
    for (let wakeups = 0; wakeups < BROKER_LIMITS.fetchWakeupsMax; wakeups++) {
      if (!shouldWait(answers, minBytes)) break;
      const remainingMs = deadlineMs - clock.monotonicMs();
      if (remainingMs <= 0 || call?.cancelled === true) break;
      deps.metrics?.fetchWaiters.inc();
      try {
        await waitForAppend(clock, answers, remainingMs, call);
      } finally {
        deps.metrics?.fetchWaiters.dec();
      }
      answers = await readAll(deps, items, isolation, maxBytes, options);
    }
    deps.metrics?.fetchedBytes.inc(
      { isolation },
      answers.reduce((n, a) => n + (a.read?.bytes ?? 0), 0),
    );
    return { partitions: items.map((item, i) => toWire(item, answers[i]!, asKafkaBatch)) };
  };
}

function shouldWait(answers: ItemAnswer[], minBytes: number): boolean {
  let bytes = 0;
  for (const a of answers) {
    if (a.error !== "NONE") return false;
    bytes += a.read?.bytes ?? 0;
  }
  return bytes < minBytes;
}

/** Resolves at the first append to any of the partitions, or after timeoutMs, or on cancel. */
function waitForAppend(
  clock: SchedulingClock,
  answers: ItemAnswer[],
  timeoutMs: number,
  call?: FetchCall,
): Promise<void> {
  return new Promise((resolve) => {
    const unsubscribers: Array<() => void> = [];
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      clock.clearTimeout(timer);
      for (const u of unsubscribers) u();
      call?.removeListener("cancelled", finish);
      resolve();
    };
    const timer = clock.setTimeout(finish, timeoutMs);
    for (const a of answers) if (a.local) unsubscribers.push(a.local.stateMachine.onAppend(finish));
    call?.on("cancelled", finish);
  });
}

async function readAll(
  deps: FetchDeps,
  items: FetchItem[],
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
  deps: FetchDeps,
  item: FetchItem,
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
  directory: FetchDeps["directory"],
  local: LocalPartition,
  item: FetchItem,
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
  directory: FetchDeps["directory"],
  local: LocalPartition,
  item: FetchItem,
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

function toWire(
  item: FetchItem,
  a: ItemAnswer,
  asKafkaBatch: boolean,
): FetchHandlerResponse["partitions"][number] {
  const r = a.read;
  return {
    topic: item.topic,
    partition: item.partition,
    ...errorFields(a.error, a.message),
    highWatermark: (r?.highWatermark ?? -1n).toString(),
    lastStableOffset: (r?.lastStableOffset ?? -1n).toString(),
    logStartOffset: (r?.logStartOffset ?? -1n).toString(),
    batches: a.error === "NONE" && r ? r.batches.map((b) => batchToWire(b, asKafkaBatch)) : [],
    nextFetchOffset: (a.error === "NONE" && r ? r.nextFetchOffset : item.fetchOffset).toString(),
    leader: a.leader ?? null,
  };
}
