// The gRPC WriteTxnMarkers handler: an adapter over the partition service's markers
// (partition-service/markers.ts).
import { TernError } from "../../libs/common/errors.js";
import type { PartitionService } from "./partition-service/partition-service.js";
import type { MarkerRequest } from "./partition-service/markers.js";
import { CONTROL_TYPE_NAMES, enumName, errorFields, int32, int64 } from "./wire.js";
import type {
  TxnMarker__Output,
  WriteTxnMarkersRequest__Output,
  WriteTxnMarkersResponse__Output,
} from "../../libs/common/proto-types/index.js";

export function parseMarker(m: TxnMarker__Output): MarkerRequest {
  const control = enumName(m?.controlType, CONTROL_TYPE_NAMES);
  if (control !== "COMMIT" && control !== "ABORT")
    throw new TernError(
      "INVALID_REQUEST",
      `control_type must be COMMIT or ABORT, got ${String(m?.controlType)}`,
    );
  const producerId = int64(m?.producerId, "producer_id");
  if (producerId < 0n)
    throw new TernError("INVALID_REQUEST", `producer_id ${producerId} is negative`);
  return {
    producerId,
    producerEpoch: int32(m?.producerEpoch),
    coordinatorEpoch: int32(m?.coordinatorEpoch),
    controlType: control,
    transactionalId: String(m?.transactionalId ?? ""),
    epochBumped: m?.epochBumped === true,
  };
}

export function createWriteTxnMarkersHandler(
  service: Pick<PartitionService, "writeMarkers">,
): (request: WriteTxnMarkersRequest__Output) => Promise<WriteTxnMarkersResponse__Output> {
  return async (request) => {
    const markers = Array.isArray(request?.markers) ? request.markers : [];
    const writes = markers.map((m) => ({
      marker: parseMarker(m),
      partitions: (Array.isArray(m?.partitions) ? m.partitions : []).map((tp) => ({
        topic: String(tp?.topic ?? ""),
        partition: int32(tp?.partition, -1),
      })),
    }));
    const results = await service.writeMarkers(writes);
    return {
      results: results.map((partitions, i) => ({
        producerId: writes[i]!.marker.producerId.toString(),
        partitions: partitions.map((o) => ({
          topicPartition: { topic: o.topic, partition: o.partition },
          ...errorFields(o.error, o.message),
        })),
      })),
    };
  };
}
