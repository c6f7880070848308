// DescribeGroups v0-4 of classic groups, from the group's leader-side state: state (Kafka's
// names), protocol type and name, and per member client id, host, subscription and assignment
// bytes. A group with committed offsets only is Empty with protocol type ""; an unknown group
// is Dead (Kafka's answer); a KIP-848 consumer group is GROUP_ID_NOT_FOUND (not a classic group).
import type { ClassicGroupView } from "../group/index.js";
import { errorCodeOf, groupCoordinatorOf } from "./group-api-common.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { kafkaErrorCode } from "./kafka-errors.js";

/** Kafka's "authorized operations not requested" marker. */
const AUTHORIZED_OPERATIONS_OMITTED = -2147483648;

interface Described {
  error: number;
  view: ClassicGroupView;
}

export async function describeGroupsResponse(
  deps: KafkaDeps,
  version: number,
  r: KafkaReader,
): Promise<Buffer> {
  const ids = r.array((x) => x.string());
  if (version >= 3) r.bool(); // include_authorized_operations: no ACLs here
  const described = await Promise.all(ids.map((id) => describeOne(deps, id)));
  const w = new KafkaWriter(512);
  if (version >= 1) w.int32(0);
  w.array(described, (x, { error, view }) => {
    x.int16(error)
      .string(view.groupId)
      .string(view.state)
      .string(view.protocolType)
      .string(view.protocolName);
    x.array(view.members, (y, m) => {
      y.string(m.memberId);
      if (version >= 4) y.nullableString(m.instanceId === "" ? null : m.instanceId);
      y.string(m.clientId)
        .string(m.clientHost)
        .nullableBytes(m.metadata)
        .nullableBytes(m.assignment);
    });
    if (version >= 3) x.int32(AUTHORIZED_OPERATIONS_OMITTED);
  });
  return w.finish();
}

async function describeOne(deps: KafkaDeps, groupId: string): Promise<Described> {
  const empty = (state: ClassicGroupView["state"], error = 0): Described => ({
    error,
    view: {
      groupId,
      state,
      generationId: -1,
      protocolType: "",
      protocolName: "",
      leader: "",
      members: [],
    },
  });
  try {
    const groups = groupCoordinatorOf(deps, groupId, "describe");
    const view = await groups.classic.describe(groupId);
    if (view) return { error: 0, view };
    const listed = groups.listGroups().find((g) => g.groupId === groupId);
    if (listed?.type === "consumer") return empty("Dead", kafkaErrorCode("GROUP_ID_NOT_FOUND"));
    return empty(listed ? "Empty" : "Dead");
  } catch (e) {
    return empty("Dead", errorCodeOf(deps, e, "DescribeGroups"));
  }
}
