// ListOffsets: earliest (-2) = log start offset, latest (-1) = high watermark (LSO under
// read_committed), otherwise the first offset whose record timestamp is at or after the time.
import { TernError, type ErrorName } from "../../libs/common/errors.js";
import { BROKER_LIMITS } from "./broker-limits.js";
import { parseIsolation } from "./fetch-handler.js";
import type { PartitionDirectory } from "./local-partition.js";
import { errorFields, int32, int64, type WireEndpoint } from "./wire.js";
import type {
  ListOffsetsRequest__Output,
  ListOffsetsResponse__Output,
} from "../../libs/common/proto-types/index.js";

export const EARLIEST_TIMESTAMP = -2n;
export const LATEST_TIMESTAMP = -1n;

export function createListOffsetsHandler(deps: {
  directory: PartitionDirectory;
}): (request: ListOffsetsRequest__Output) => Promise<ListOffsetsResponse__Output> {
  return async (request) => {
    const items = Array.isArray(request?.partitions) ? request.partitions : [];
    if (items.length > BROKER_LIMITS.partitionsPerRequestMax)
      throw new TernError("INVALID_REQUEST", `${items.length} partitions in one request`);
    const isolation = parseIsolation(request?.isolationLevel);
    const partitions = await Promise.all(
      items.map(async (p) => {
        const topic = String(p?.topic ?? "");
        const partition = int32(p?.partition, -1);
        let error: ErrorName = "NONE";
        let message = "";
        let offset = -1n;
        let timestampMs = -1;
        let leader: WireEndpoint | null = null;
        const timestamp = int64(p?.timestampMs, "timestamp_ms");
        const local = deps.directory.local(topic, partition);
        if (deps.directory.lookup(topic, partition) === "unknown") {
          error = "UNKNOWN_TOPIC_OR_PARTITION";
        } else if (local === undefined || !local.group.isLeader()) {
          error = "NOT_LEADER_OR_FOLLOWER";
          leader = deps.directory.endpoint(
            local ? local.group.leader() : deps.directory.metadataLeader(topic, partition),
          );
        } else if (timestamp < EARLIEST_TIMESTAMP) {
          error = "INVALID_REQUEST";
          message = `timestamp_ms ${timestamp} is neither -2, -1 nor a time`;
        } else {
          const sm = local.stateMachine;
          if (timestamp === EARLIEST_TIMESTAMP) offset = sm.logStartOffset();
          else if (timestamp === LATEST_TIMESTAMP)
            offset = isolation === "READ_COMMITTED" ? sm.lastStableOffset() : sm.highWatermark();
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
          ...errorFields(error, message),
          offset: offset.toString(),
          timestampMs: String(timestampMs),
          leader,
        };
      }),
    );
    return { partitions };
  };
}
