// SyncGroup v0-3: the classic group's leader sends every member's assignment, the others wait
// for theirs (at most the rebalance timeout); once the assignment is in the offsets partition's
// Raft log each member gets its own bytes. v3 adds group.instance.id.
import type { SyncRequest } from "../group/index.js";
import { errorCodeOf, groupCoordinatorOf } from "./group-api-common.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { kafkaErrorCode } from "./kafka-errors.js";

export async function syncGroupResponse(
  deps: KafkaDeps,
  version: number,
  r: KafkaReader,
): Promise<Buffer> {
  const groupId = r.string();
  const generationId = r.int32();
  const memberId = r.string();
  const instanceId = version >= 3 ? r.nullableString() : null;
  const assignments = r.array((x) => ({
    memberId: x.string(),
    assignment: Buffer.from(x.nullableBytes() ?? Buffer.alloc(0)),
  }));
  const request: SyncRequest = {
    memberId,
    instanceId: instanceId ?? "",
    generationId,
    protocolType: null,
    protocolName: null,
    assignments,
  };
  let error: number;
  let assignment: Buffer = Buffer.alloc(0);
  try {
    const outcome = await groupCoordinatorOf(deps, groupId).classic.sync(groupId, request);
    error = kafkaErrorCode(outcome.error);
    assignment = outcome.assignment;
    if (outcome.error !== "NONE")
      deps.logger.debug(
        { groupId, memberId, error: outcome.error, message: outcome.message },
        "kafka SyncGroup refused",
      );
  } catch (e) {
    error = errorCodeOf(deps, e, "SyncGroup");
  }
  const w = new KafkaWriter(64 + assignment.byteLength);
  if (version >= 1) w.int32(0);
  w.int16(error).nullableBytes(assignment);
  return w.finish();
}
