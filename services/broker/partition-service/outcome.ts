// What a partition answers when it refuses, and the one mapping of a failed Raft proposal to
// that answer (shared by produce, log start moves and markers).
import { isTernError, type ErrorName } from "../../../libs/common/errors.js";
import type { Logger } from "../../../libs/common/logger.js";
import type { LocalPartition, PartitionDirectory } from "../local-partition.js";

/** A broker's address, given to a client sent elsewhere (node id -1 and "" when unknown). */
export interface Endpoint {
  readonly nodeId: number;
  readonly address: string;
}

/** A partition's refusal: the error, why, and the leader to go to when it is not this broker. */
export interface Refusal {
  readonly error: ErrorName;
  readonly message: string;
  readonly leader?: Endpoint;
}

export function refusal(error: ErrorName, message: string, leader?: Endpoint): Refusal {
  return { error, message, ...(leader ? { leader } : {}) };
}

/** A proposal that failed (not leader any more, timeout, closing) as the partition's answer. */
export function proposeFailure(
  deps: { directory: PartitionDirectory; logger: Logger },
  local: LocalPartition,
  e: unknown,
): Refusal {
  if (isTernError(e)) {
    if (e.errorName === "NOT_LEADER_OR_FOLLOWER") {
      const leader = typeof e.details.leader === "number" ? e.details.leader : local.group.leader();
      return refusal("NOT_LEADER_OR_FOLLOWER", e.message, deps.directory.endpoint(leader));
    }
    return refusal(e.errorName, e.message);
  }
  deps.logger.error(
    { err: e, topic: local.topic, partition: local.partition },
    "propose failed unexpectedly",
  );
  return refusal("UNKNOWN_SERVER_ERROR", e instanceof Error ? e.message : String(e));
}
