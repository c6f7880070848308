// Heartbeat v0-4 of a classic-group member: keeps its session; REBALANCE_IN_PROGRESS tells it
// to rejoin. v3 adds group.instance.id, v4 is the first flexible version.
import { errorCodeOf, groupCoordinatorOf } from "./group-api-common.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { fieldReader } from "./versioned-fields.js";

/** The first flexible version. */
export const HEARTBEAT_FLEXIBLE_SINCE = 4;
import { kafkaErrorCode } from "./kafka-errors.js";

export async function heartbeatResponse(
  deps: KafkaDeps,
  version: number,
  r: KafkaReader,
): Promise<Buffer> {
  const f = fieldReader(r, version >= HEARTBEAT_FLEXIBLE_SINCE);
  const groupId = f.string();
  const generationId = r.int32();
  const memberId = f.string();
  const instanceId = version >= 3 ? f.nullableString() : null;
  f.tags();
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
  w.int16(error);
  if (version >= HEARTBEAT_FLEXIBLE_SINCE) w.noTaggedFields();
  return w.finish();
}
