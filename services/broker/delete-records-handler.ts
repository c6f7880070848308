// DeleteRecords (Kafka's kafka-delete-records): each partition's log start offset moves up to the
// requested offset through one Raft entry of that partition, so every replica, a restarted one
// and one catching up from a snapshot agree on it. The leader proposes; apply() checks the
// offset against the high watermark and answers the new low watermark (docs/storage.md).
import type { Clock } from "../../libs/runtime/clock.js";
import { TernError, type ErrorName } from "../../libs/common/errors.js";
import type { Logger } from "../../libs/common/logger.js";
import { BROKER_LIMITS } from "./broker-limits.js";
import type { PartitionDirectory } from "./local-partition.js";
import { encodeEntry } from "./partition-entry.js";
import type { AppendResult } from "./partition-state-machine.js";
import { proposeFailure } from "./produce-handler.js";
import { errorFields, int32, int64, type WireEndpoint } from "./wire.js";
import type {
  DeleteRecordsRequest__Output,
  DeleteRecordsResponse__Output,
} from "../../libs/common/proto-types/index.js";

export interface DeleteRecordsDeps {
  readonly directory: PartitionDirectory;
  readonly clock: Clock;
  readonly logger: Logger;
}

interface Outcome {
  error: ErrorName;
  message: string;
  lowWatermark: bigint;
  leader?: WireEndpoint;
}

function failed(error: ErrorName, message: string, leader?: WireEndpoint): Outcome {
  return { error, message, lowWatermark: -1n, ...(leader ? { leader } : {}) };
}

export function createDeleteRecordsHandler(
  deps: DeleteRecordsDeps,
): (request: DeleteRecordsRequest__Output) => Promise<DeleteRecordsResponse__Output> {
  return async (request) => {
    const items = Array.isArray(request?.partitions) ? request.partitions : [];
    if (items.length > BROKER_LIMITS.partitionsPerRequestMax)
      throw new TernError(
        "INVALID_REQUEST",
        `${items.length} partitions in one request (max ${BROKER_LIMITS.partitionsPerRequestMax})`,
      );
    const timeoutRaw = int32(request?.timeoutMs);
    const timeoutMs = Math.min(
      timeoutRaw > 0 ? timeoutRaw : BROKER_LIMITS.produceTimeoutMsDefault,
      BROKER_LIMITS.produceTimeoutMsMax,
    );
    const seen = new Set<string>();
    const partitions = await Promise.all(
      items.map(async (p) => {
        const topic = String(p?.topic ?? "");
        const partition = int32(p?.partition, -1);
        const key = `${topic}/${partition}`;
        let outcome: Outcome;
        if (seen.has(key))
          outcome = failed("INVALID_REQUEST", `partition ${key} appears twice in the request`);
        else {
          seen.add(key);
          outcome = await deletePartition(
            deps,
            topic,
            partition,
            int64(p?.offset, "offset"),
            timeoutMs,
          );
        }
        return {
          topic,
          partition,
          ...errorFields(outcome.error, outcome.message),
          lowWatermark: outcome.lowWatermark.toString(),
          leader: outcome.leader ?? null,
        };
      }),
    );
    return { partitions };
  };
}

async function deletePartition(
  deps: DeleteRecordsDeps,
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
