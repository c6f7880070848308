// The gRPC ListOffsets handler: an adapter over the partition service's offsets by time
// (partition-service/offsets.ts).
import type { PartitionService } from "./partition-service/partition-service.js";
import { errorFields, int32, int64, parseIsolation } from "./wire.js";
import type {
  ListOffsetsRequest__Output,
  ListOffsetsResponse__Output,
} from "../../libs/common/proto-types/index.js";

export function createListOffsetsHandler(
  service: Pick<PartitionService, "listOffsets">,
): (request: ListOffsetsRequest__Output) => Promise<ListOffsetsResponse__Output> {
  return async (request) => {
    const items = Array.isArray(request?.partitions) ? request.partitions : [];
    const answers = await service.listOffsets({
      isolation: parseIsolation(request?.isolationLevel),
      partitions: items.map((p) => ({
        topic: String(p?.topic ?? ""),
        partition: int32(p?.partition, -1),
        timestampMs: int64(p?.timestampMs, "timestamp_ms"),
      })),
    });
    return {
      partitions: answers.map((a) => ({
        topic: a.topic,
        partition: a.partition,
        ...errorFields(a.error, a.message),
        offset: a.offset.toString(),
        timestampMs: String(a.timestampMs),
        leader: a.leader ?? null,
      })),
    };
  };
}
