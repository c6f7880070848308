// LeaveGroup v0-3: one member (v0-2) or a batch of members by member id or instance id (v3,
// KIP-345) leave a classic group, which rebalances at once. v0-2 carry the member's error at
// the top; v3 per member.
import { errorCodeOf, groupCoordinatorOf } from "./group-api-common.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { kafkaErrorCode } from "./kafka-errors.js";

export async function leaveGroupResponse(
  deps: KafkaDeps,
  version: number,
  r: KafkaReader,
): Promise<Buffer> {
  const groupId = r.string();
  const refs =
    version >= 3
      ? r.array((x) => ({ memberId: x.string(), instanceId: x.nullableString() ?? "" }))
      : [{ memberId: r.string(), instanceId: "" }];
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
  if (version >= 1) w.int32(0);
  w.int16(top);
  if (version >= 3) {
    w.array(members, (x, m) => {
      x.string(m.memberId)
        .nullableString(m.instanceId === "" ? null : m.instanceId)
        .int16(m.error);
    });
  }
  return w.finish();
}
