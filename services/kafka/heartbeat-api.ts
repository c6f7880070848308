// Heartbeat v0-3 of a classic-group member: keeps its session; REBALANCE_IN_PROGRESS tells it
// to rejoin. v3 adds group.instance.id.
import { errorCodeOf, groupCoordinatorOf } from "./group-api-common.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { kafkaErrorCode } from "./kafka-errors.js";

export async function heartbeatResponse(
  deps: KafkaDeps,
  version: number,
  r: KafkaReader,
): Promise<Buffer> {
  const groupId = r.string();
  const generationId = r.int32();
  const memberId = r.string();
  const instanceId = version >= 3 ? r.nullableString() : null;
  let error: number;
  try {
    error = kafkaErrorCode(
      (
        await groupCoordinatorOf(deps, groupId).classic.heartbeat(
          groupId,
          memberId,
          instanceId ?? "",
          generationId,
        )
      ).error,
    );
  } catch (e) {
    error = errorCodeOf(deps, e, "Heartbeat");
  }
  const w = new KafkaWriter(8);
  if (version >= 1) w.int32(0);
  return w.int16(error).finish();
}
