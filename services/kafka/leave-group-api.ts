// LeaveGroup v0-5: one member (v0-2) or a batch of members by member id or instance id (v3,
// KIP-345) leave a classic group, which rebalances at once. v0-2 carry the member's error at
// the top; v3+ per member. v4 is the first flexible version; v5 adds each member's reason
// (KIP-800), logged.
import { errorCodeOf, groupCoordinatorOf } from "./group-api-common.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { fieldReader, fieldWriter } from "./versioned-fields.js";

/** The first flexible version. */
export const LEAVE_GROUP_FLEXIBLE_SINCE = 4;
import { kafkaErrorCode } from "./kafka-errors.js";

export async function leaveGroupResponse(
  deps: KafkaDeps,
  version: number,
  r: KafkaReader,
): Promise<Buffer> {
  const flexible = version >= LEAVE_GROUP_FLEXIBLE_SINCE;
  const f = fieldReader(r, flexible);
  const groupId = f.string();
  const refs =
    version >= 3
      ? f.array(() => {
          const ref = { memberId: f.string(), instanceId: f.nullableString() ?? "" };
          const reason = version >= 5 ? f.nullableString() : null;
          if (reason !== null) deps.logger.debug({ groupId, ...ref, reason }, "kafka LeaveGroup");
          f.tags();
          return ref;
        })
      : [{ memberId: f.string(), instanceId: "" }];
  f.tags();
  let top = 0;
  let members: Array<{ memberId: string; instanceId: string; error: number }> = [];
  try {
    const outcomes = await groupCoordinatorOf(deps, groupId).classic.leave(groupId, refs);
    members = outcomes.map((o) => ({
      memberId: o.memberId,
      instanceId: o.instanceId,
      error: kafkaErrorCode(o.error),
    }));
    if (version < 3) top = members[0]?.error ?? 0;
  } catch (e) {
    top = errorCodeOf(deps, e, "LeaveGroup");
  }
  const w = new KafkaWriter(64);
  const o = fieldWriter(w, flexible);
  if (version >= 1) w.int32(0);
  w.int16(top);
  if (version >= 3) {
    o.array(members, (x, m) => {
      o.string(m.memberId);
      o.string(m.instanceId === "" ? null : m.instanceId);
      x.int16(m.error);
      o.tags();
    });
  }
  o.tags();
  return w.finish();
}
