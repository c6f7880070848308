// SyncGroup v0-5: the classic group's leader sends every member's assignment, the others wait
// for theirs (at most the rebalance timeout); once the assignment is in the offsets partition's
// Raft log each member gets its own bytes. v3 adds group.instance.id, v4 is the first flexible
// version, v5 carries the protocol type and name both ways (a request naming others than the
// group's is INCONSISTENT_GROUP_PROTOCOL; the answer names the group's, null with an error).
import type { SyncRequest } from "../group/index.js";
import { errorCodeOf, groupCoordinatorOf } from "./group-api-common.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { fieldReader, fieldWriter } from "./versioned-fields.js";

/** The first flexible version. */
export const SYNC_GROUP_FLEXIBLE_SINCE = 4;
import { kafkaErrorCode } from "./kafka-errors.js";

export async function syncGroupResponse(
  deps: KafkaDeps,
  version: number,
  r: KafkaReader,
): Promise<Buffer> {
  const flexible = version >= SYNC_GROUP_FLEXIBLE_SINCE;
  const f = fieldReader(r, flexible);
  const groupId = f.string();
  const generationId = r.int32();
  const memberId = f.string();
  const instanceId = version >= 3 ? f.nullableString() : null;
  const protocolType = version >= 5 ? f.nullableString() : null;
  const protocolName = version >= 5 ? f.nullableString() : null;
  const assignments = f.array(() => {
    const a = { memberId: f.string(), assignment: f.bytes() };
    f.tags();
    return a;
  });
  f.tags();
  const request: SyncRequest = {
    memberId,
    instanceId: instanceId ?? "",
    generationId,
    protocolType,
    protocolName,
    assignments,
  };
  let error: number;
  let assignment: Buffer = Buffer.alloc(0);
  let protocol: { type: string; name: string } | undefined;
  try {
    const outcome = await groupCoordinatorOf(deps, groupId).classic.sync(groupId, request);
    error = kafkaErrorCode(outcome.error);
    assignment = outcome.assignment;
    if (outcome.error === "NONE")
      protocol = { type: outcome.protocolType, name: outcome.protocolName };
    if (outcome.error !== "NONE")
      deps.logger.debug(
        { groupId, memberId, error: outcome.error, message: outcome.message },
        "kafka SyncGroup refused",
      );
  } catch (e) {
    error = errorCodeOf(deps, e, "SyncGroup");
  }
  const w = new KafkaWriter(64 + assignment.byteLength);
  const o = fieldWriter(w, flexible);
  if (version >= 1) w.int32(0);
  w.int16(error);
  if (version >= 5) {
    o.string(protocol?.type || null);
    o.string(protocol?.name || null);
  }
  o.bytes(assignment);
  o.tags();
  return w.finish();
}
