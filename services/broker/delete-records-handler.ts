// The gRPC DeleteRecords handler: an adapter over the partition service's log start moves
// (partition-service/log-start.ts; docs/storage.md, "Deleting records").
import type { PartitionService } from "./partition-service/partition-service.js";
import { errorFields, int32, int64 } from "./wire.js";
import type {
  DeleteRecordsRequest__Output,
  DeleteRecordsResponse__Output,
} from "../../libs/common/proto-types/index.js";

export function createDeleteRecordsHandler(
  service: Pick<PartitionService, "deleteRecords">,
): (request: DeleteRecordsRequest__Output) => Promise<DeleteRecordsResponse__Output> {
  return async (request) => {
    const items = Array.isArray(request?.partitions) ? request.partitions : [];
    const outcomes = await service.deleteRecords({
      timeoutMs: int32(request?.timeoutMs),
      partitions: items.map((p) => ({
        topic: String(p?.topic ?? ""),
        partition: int32(p?.partition, -1),
        offset: int64(p?.offset, "offset"),
      })),
    });
    return {
      partitions: outcomes.map((o) => ({
        topic: o.topic,
        partition: o.partition,
        ...errorFields(o.error, o.message),
        lowWatermark: o.lowWatermark.toString(),
        leader: o.leader ?? null,
      })),
    };
  };
}
