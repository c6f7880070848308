// Offsets by time, in the partition service: earliest (-2) = log start offset, latest (-1) =
// high watermark (LSO under read_committed), max timestamp (-3, KIP-734) = the record with the
// largest timestamp when it is below that end, earliest local (-4, KIP-405) = the log start
// (every offset is local), latest tiered (-5, KIP-1005) = none (-1: nothing is tiered);
// otherwise the first offset whose record timestamp is at or after the time.
import { TernError, type ErrorName } from "../../../libs/common/errors.js";
import { BROKER_LIMITS } from "../broker-limits.js";
import type { PartitionDirectory } from "../local-partition.js";
import type { Isolation } from "../partition-state-machine.js";
import type { Endpoint } from "./outcome.js";

export const EARLIEST_TIMESTAMP = -2n;
export const LATEST_TIMESTAMP = -1n;
export const MAX_TIMESTAMP = -3n;
export const EARLIEST_LOCAL_TIMESTAMP = -4n;
export const LATEST_TIERED_TIMESTAMP = -5n;

export interface OffsetQuery {
  readonly isolation: Isolation;
  readonly partitions: ReadonlyArray<{
    readonly topic: string;
    readonly partition: number;
    /** One of the negative sentinels above or a time in ms. */
    readonly timestampMs: bigint;
  }>;
}

/** One partition's offset (-1 when no record is that late), or why not. */
export interface OffsetAnswer {
  readonly topic: string;
  readonly partition: number;
  readonly error: ErrorName;
  readonly message: string;
  readonly offset: bigint;
  /** The found record's timestamp; -1 for earliest, latest and none found. */
  readonly timestampMs: number;
  readonly leader?: Endpoint;
}

/** Throws INVALID_REQUEST for too many partitions. */
export async function listOffsets(
  deps: { readonly directory: PartitionDirectory },
  query: OffsetQuery,
): Promise<OffsetAnswer[]> {
  const items = query.partitions;
  if (items.length > BROKER_LIMITS.partitionsPerRequestMax)
    throw new TernError("INVALID_REQUEST", `${items.length} partitions in one request`);
  const { isolation } = query;
  return Promise.all(
    items.map(async ({ topic, partition, timestampMs: timestamp }): Promise<OffsetAnswer> => {
      let error: ErrorName = "NONE";
      let message = "";
      let offset = -1n;
      let timestampMs = -1;
      let leader: Endpoint | undefined;
      const local = deps.directory.local(topic, partition);
      if (deps.directory.lookup(topic, partition) === "unknown") {
        error = "UNKNOWN_TOPIC_OR_PARTITION";
      } else if (local === undefined || !local.group.isLeader()) {
        error = "NOT_LEADER_OR_FOLLOWER";
        leader = deps.directory.endpoint(
          local ? local.group.leader() : deps.directory.metadataLeader(topic, partition),
        );
      } else if (timestamp < LATEST_TIERED_TIMESTAMP) {
        error = "INVALID_REQUEST";
        message = `timestamp_ms ${timestamp} is neither -1 to -5 nor a time`;
      } else {
        const sm = local.stateMachine;
        const end = isolation === "READ_COMMITTED" ? sm.lastStableOffset() : sm.highWatermark();
        if (timestamp === EARLIEST_TIMESTAMP || timestamp === EARLIEST_LOCAL_TIMESTAMP)
          offset = sm.logStartOffset();
        else if (timestamp === LATEST_TIMESTAMP) offset = end;
        else if (timestamp === MAX_TIMESTAMP) {
          // As Kafka: a record at or past the fetchable end is not answered.
          const found = await sm.maxTimestampOffset();
          if (found !== null && found.offset < end) {
            offset = found.offset;
            timestampMs = found.timestampMs;
          }
        } else if (timestamp === LATEST_TIERED_TIMESTAMP) offset = -1n;
        else {
          const found = await sm.offsetForTimestamp(Number(timestamp));
          if (found !== null) {
            offset = found.offset;
            timestampMs = found.timestampMs;
          }
        }
      }
      return {
        topic,
        partition,
        error,
        message,
        offset,
        timestampMs,
        ...(leader ? { leader } : {}),
      };
    }),
  );
}
