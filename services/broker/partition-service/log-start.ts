// Log start moves, in the partition service (Kafka's DeleteRecords): each partition's log
// start offset moves up to the requested offset through one Raft entry of that partition, so
// every replica, a restarted one and one catching up from a snapshot agree on it. The leader
// proposes; apply() checks the offset against the high watermark and answers the new low
// watermark (docs/storage.md, "Deleting records").
import type { Clock } from "../../../libs/runtime/clock.js";
import { TernError, type ErrorName } from "../../../libs/common/errors.js";
import type { Logger } from "../../../libs/common/logger.js";
import { BROKER_LIMITS } from "../broker-limits.js";
import type { PartitionDirectory } from "../local-partition.js";
import { encodeEntry } from "../partition-entry.js";
import type { AppendResult } from "../partition-state-machine.js";
import { proposeFailure, type Endpoint } from "./outcome.js";

export interface LogStartDeps {
  readonly directory: PartitionDirectory;
  readonly clock: Clock;
  readonly logger: Logger;
}

export interface LogStartCommand {
  /** 0 or less: the default; clamped to BROKER_LIMITS.produceTimeoutMsMax. */
  readonly timeoutMs: number;
  readonly partitions: ReadonlyArray<{
    readonly topic: string;
    readonly partition: number;
    /** The new log start; -1: the high watermark. */
    readonly offset: bigint;
  }>;
}

/** One partition's new log start (low watermark), or why not. */
export interface LogStartOutcome {
  readonly topic: string;
  readonly partition: number;
  readonly error: ErrorName;
  readonly message: string;
  readonly lowWatermark: bigint;
  readonly leader?: Endpoint;
}

type Outcome = Omit<LogStartOutcome, "topic" | "partition">;

function failed(error: ErrorName, message: string, leader?: Endpoint): Outcome {
  return { error, message, lowWatermark: -1n, ...(leader ? { leader } : {}) };
}

/** Throws INVALID_REQUEST for too many partitions. */
export async function moveLogStarts(
  deps: LogStartDeps,
  command: LogStartCommand,
): Promise<LogStartOutcome[]> {
  const items = command.partitions;
  if (items.length > BROKER_LIMITS.partitionsPerRequestMax)
    throw new TernError(
      "INVALID_REQUEST",
      `${items.length} partitions in one request (max ${BROKER_LIMITS.partitionsPerRequestMax})`,
    );
  const timeoutMs = Math.min(
    command.timeoutMs > 0 ? command.timeoutMs : BROKER_LIMITS.produceTimeoutMsDefault,
    BROKER_LIMITS.produceTimeoutMsMax,
  );
  const seen = new Set<string>();
  return Promise.all(
    items.map(async ({ topic, partition, offset }): Promise<LogStartOutcome> => {
      const key = `${topic}/${partition}`;
      let outcome: Outcome;
      if (seen.has(key))
        outcome = failed("INVALID_REQUEST", `partition ${key} appears twice in the request`);
      else {
        seen.add(key);
        outcome = await moveLogStart(deps, topic, partition, offset, timeoutMs);
      }
      return { topic, partition, ...outcome };
    }),
  );
}

async function moveLogStart(
  deps: LogStartDeps,
  topic: string,
  partition: number,
  offset: bigint,
  timeoutMs: number,
): Promise<Outcome> {
  const known = deps.directory.lookup(topic, partition);
  if (known === "unknown")
    return failed("UNKNOWN_TOPIC_OR_PARTITION", `unknown topic-partition ${topic}/${partition}`);
  // Kafka refuses it too: the coordinators' state would lose what they replay.
  if (known === "internal")
    return failed(
      "INVALID_TOPIC_EXCEPTION",
      `${topic} is an internal topic; its records cannot be deleted`,
    );
  const local = deps.directory.local(topic, partition);
  if (local === undefined)
    return failed(
      "NOT_LEADER_OR_FOLLOWER",
      `this broker has no replica of ${topic}/${partition}`,
      deps.directory.endpoint(deps.directory.metadataLeader(topic, partition)),
    );
  if (!local.group.isLeader())
    return failed(
      "NOT_LEADER_OR_FOLLOWER",
      `not the leader of ${topic}/${partition}`,
      deps.directory.endpoint(local.group.leader()),
    );
  if (offset < -1n)
    return failed(
      "OFFSET_OUT_OF_RANGE",
      `offset ${offset} is negative (-1 means the high watermark)`,
    );
  // Always proposed, also when the offset looks at or below the log start here: a new leader
  // may not have applied the latest move yet, and the entry's answer is linearizable.
  const data = encodeEntry({
    kind: "delete-records",
    header: local.entryHeader(deps.clock.nowMs()),
    offset,
  });
  try {
    const { result } = await local.group.propose<AppendResult>(data, { timeoutMs });
    if (result.error !== "NONE") return failed(result.error, result.message);
    return { error: "NONE", message: "", lowWatermark: result.logStartOffset };
  } catch (e) {
    const f = proposeFailure(deps, local, e);
    return failed(f.error, f.message, f.leader);
  }
}
