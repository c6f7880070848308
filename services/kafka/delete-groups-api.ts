// DeleteGroups v0-v2 (v2 flexible): the group service's delete-group, one group at a time, each
// answered on its own: NON_EMPTY_GROUP while it has members, GROUP_ID_NOT_FOUND when unknown,
// NOT_COORDINATOR on a node that does not coordinate it (Kafka's admin client asks each group's
// coordinator). DELETE on the group, else GROUP_AUTHORIZATION_FAILED for that group.
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { errorCodeOf, groupCoordinatorOf } from "./group-api-common.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { fieldReader, fieldWriter } from "./versioned-fields.js";

/** The first flexible version. */
export const DELETE_GROUPS_FLEXIBLE_SINCE = 2;

export async function deleteGroupsResponse(
  deps: KafkaDeps,
  version: number,
  r: KafkaReader,
): Promise<Buffer> {
  const flexible = version >= DELETE_GROUPS_FLEXIBLE_SINCE;
  const f = fieldReader(r, flexible);
  const ids = f.array(() => f.string());
  f.tags();
  const results: Array<{ groupId: string; error: number }> = [];
  for (const groupId of ids) {
    try {
      await groupCoordinatorOf(deps, groupId, "delete").deleteGroup(groupId);
      results.push({ groupId, error: 0 });
    } catch (e) {
      results.push({ groupId, error: errorCodeOf(deps, e, "DeleteGroups") });
    }
  }
  const w = new KafkaWriter(64 + ids.length * 32);
  const o = fieldWriter(w, flexible);
  w.int32(0); // throttle_time_ms
  o.array(results, (x, { groupId, error }) => {
    o.string(groupId);
    x.int16(error);
    o.tags();
  });
  o.tags();
  return w.finish();
}
