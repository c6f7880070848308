// The shape the admin RPCs about partitions share (DescribeProducers, DescribeLogCleaning): a
// bounded list of asked partitions, each answered from this broker's replica when it leads it,
// else with the error and who leads.
import { TernError, type ErrorName } from "../../libs/common/errors.js";
import { BROKER_LIMITS } from "./broker-limits.js";
import type { LocalPartition, PartitionDirectory } from "./local-partition.js";
import { int32, type WireEndpoint } from "./wire.js";

export interface LeaderReplica {
  readonly local?: LocalPartition;
  readonly error: ErrorName;
  readonly leader: WireEndpoint | null;
}

/** The partition's local replica when this broker leads it; else the error and who leads. */
export function leaderOf(
  directory: PartitionDirectory,
  topic: string,
  partition: number,
): LeaderReplica {
  if (directory.lookup(topic, partition) === "unknown")
    return { error: "UNKNOWN_TOPIC_OR_PARTITION", leader: null };
  const local = directory.local(topic, partition);
  if (local === undefined)
    return {
      error: "NOT_LEADER_OR_FOLLOWER",
      leader: directory.endpoint(directory.metadataLeader(topic, partition)),
    };
  if (!local.group.isLeader())
    return { error: "NOT_LEADER_OR_FOLLOWER", leader: directory.endpoint(local.group.leader()) };
  return { local, error: "NONE", leader: null };
}

/**
 * Each asked partition's answer, from its leader lookup; a request asking for more partitions
 * than BROKER_LIMITS.partitionsPerRequestMax is refused whole (INVALID_REQUEST).
 */
export function eachLeaderPartition<T>(
  directory: PartitionDirectory,
  asked: unknown,
  answer: (found: LeaderReplica, topic: string, partition: number) => T,
): T[] {
  const items = Array.isArray(asked)
    ? (asked as Array<{ topic?: unknown; partition?: unknown }>)
    : [];
  if (items.length > BROKER_LIMITS.partitionsPerRequestMax)
    throw new TernError("INVALID_REQUEST", `${items.length} partitions in one request`);
  return items.map((tp) => {
    const topic = String(tp?.topic ?? "");
    const partition = int32(tp?.partition, -1);
    return answer(leaderOf(directory, topic, partition), topic, partition);
  });
}
