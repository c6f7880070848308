// ConsumerGroupDescribe v0-v1 (KIP-848; flexible only): KIP-848 consumer groups from the group
// service (after a read barrier), topics by id and name. A classic group or a group with
// committed offsets only is GROUP_ID_NOT_FOUND ("not a consumer group"), as Kafka answers; so is
// an unknown one. v1 adds each member's type (always consumer here: classic members of a
// consumer group do not exist in tern). DESCRIBE on the group, else GROUP_AUTHORIZATION_FAILED.
import type { GroupView } from "../group/index.js";
import { topicIdBytes } from "../../libs/metadata/topic-id.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { errorCodeOf, groupCoordinatorOf } from "./group-api-common.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { kafkaErrorCode } from "./kafka-errors.js";

/** Kafka's "authorized operations not requested" marker. */
const AUTHORIZED_OPERATIONS_OMITTED = -2147483648;
/** KIP-1099's member type of a member that speaks the consumer protocol. */
const MEMBER_TYPE_CONSUMER = 1;

/** Kafka's ConsumerGroupState names. */
const STATE_NAMES: Readonly<Record<GroupView["state"], string>> = {
  EMPTY: "Empty",
  RECONCILING: "Reconciling",
  STABLE: "Stable",
};

type Described =
  | { readonly groupId: string; readonly view: GroupView }
  | { readonly groupId: string; readonly error: number; readonly message: string };

export async function consumerGroupDescribeResponse(
  deps: KafkaDeps,
  version: number,
  r: KafkaReader,
): Promise<Buffer> {
  const ids = r.compactArray((x) => x.compactString());
  r.bool(); // include_authorized_operations: answered as not asked (as DescribeGroups)
  r.taggedFields();
  const described = await Promise.all(ids.map((id) => describeOne(deps, id)));
  const idOf = new Map((deps.metadata()?.topics ?? []).map((t) => [t.name, t.id]));
  const w = new KafkaWriter(512);
  w.int32(0); // throttle_time_ms
  w.compactArray(described, (x, d) => {
    const view = "view" in d ? d.view : undefined;
    x.int16("view" in d ? 0 : d.error);
    x.compactNullableString("view" in d ? null : d.message);
    x.compactNullableString(d.groupId);
    x.compactNullableString(view ? STATE_NAMES[view.state] : "Dead");
    x.int32(view?.groupEpoch ?? -1);
    x.int32(view?.assignmentEpoch ?? -1);
    x.compactNullableString(view?.assignor ?? "");
    x.compactArray(view?.members ?? [], (y, m) => {
      y.compactNullableString(m.memberId);
      y.compactNullableString(m.instanceId === "" ? null : m.instanceId);
      y.compactNullableString(m.rackId === "" ? null : m.rackId);
      y.int32(m.memberEpoch);
      y.compactNullableString(m.clientId);
      y.compactNullableString(m.clientHost);
      y.compactArray(m.subscribedTopicNames, (z, t) => z.compactNullableString(t));
      y.compactNullableString(m.subscribedTopicRegex === "" ? null : m.subscribedTopicRegex);
      for (const assignment of [m.assigned, m.target]) {
        y.compactArray(assignment, (z, [topic, partitions]) => {
          z.raw(topicIdBytes(idOf.get(topic)));
          z.compactNullableString(topic);
          z.compactArray(partitions, (p, n) => p.int32(n));
          z.noTaggedFields();
        });
        y.noTaggedFields();
      }
      if (version >= 1) y.int8(MEMBER_TYPE_CONSUMER);
      y.noTaggedFields();
    });
    x.int32(AUTHORIZED_OPERATIONS_OMITTED);
    x.noTaggedFields();
  });
  w.noTaggedFields();
  return w.finish();
}

async function describeOne(deps: KafkaDeps, groupId: string): Promise<Described> {
  try {
    const groups = groupCoordinatorOf(deps, groupId, "describe");
    const view = await groups.consumerGroup(groupId);
    if (view) return { groupId, view };
    const listed = groups.listGroups().some((g) => g.groupId === groupId);
    return {
      groupId,
      error: kafkaErrorCode("GROUP_ID_NOT_FOUND"),
      message: listed ? `Group ${groupId} is not a consumer group.` : `Group ${groupId} not found.`,
    };
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    return { groupId, error: errorCodeOf(deps, e, "ConsumerGroupDescribe"), message };
  }
}
