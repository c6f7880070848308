// DescribeGroups v0-6 of classic groups, from the group's leader-side state: state (Kafka's
// names), protocol type and name, and per member client id, host, subscription and assignment
// bytes. A group with committed offsets only is Empty with protocol type ""; an unknown group
// is Dead (Kafka's answer), and from v6 also GROUP_ID_NOT_FOUND (KIP-1043); a KIP-848 consumer
// group is GROUP_ID_NOT_FOUND (not a classic group). v5 is the first flexible version; v6 adds
// an error message per group.
import type { ClassicGroupView } from "../group/index.js";
import { errorCodeOf, groupCoordinatorOf } from "./group-api-common.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { fieldReader, fieldWriter } from "./versioned-fields.js";
import { kafkaErrorCode } from "./kafka-errors.js";

/** Kafka's "authorized operations not requested" marker. */
const AUTHORIZED_OPERATIONS_OMITTED = -2147483648;

/** The first flexible version. */
export const DESCRIBE_GROUPS_FLEXIBLE_SINCE = 5;

interface Described {
  error: number;
  message: string | null;
  view: ClassicGroupView;
}

export async function describeGroupsResponse(
  deps: KafkaDeps,
  version: number,
  r: KafkaReader,
): Promise<Buffer> {
  const flexible = version >= DESCRIBE_GROUPS_FLEXIBLE_SINCE;
  const f = fieldReader(r, flexible);
  const ids = f.array(() => f.string());
  if (version >= 3) r.bool(); // include_authorized_operations: no ACLs here
  f.tags();
  const described = await Promise.all(ids.map((id) => describeOne(deps, id, version)));
  const w = new KafkaWriter(512);
  const o = fieldWriter(w, flexible);
  if (version >= 1) w.int32(0);
  o.array(described, (x, { error, message, view }) => {
    x.int16(error);
    if (version >= 6) o.string(error === 0 ? null : message);
    o.string(view.groupId);
    o.string(view.state);
    o.string(view.protocolType);
    o.string(view.protocolName);
    o.array(view.members, (y, m) => {
      o.string(m.memberId);
      if (version >= 4) o.string(m.instanceId === "" ? null : m.instanceId);
      o.string(m.clientId);
      o.string(m.clientHost);
      o.bytes(m.metadata);
      o.bytes(m.assignment);
      o.tags();
    });
    if (version >= 3) x.int32(AUTHORIZED_OPERATIONS_OMITTED);
    o.tags();
  });
  o.tags();
  return w.finish();
}

async function describeOne(deps: KafkaDeps, groupId: string, version: number): Promise<Described> {
  const empty = (state: ClassicGroupView["state"], error = 0, message = ""): Described => ({
    error,
    message,
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
    if (view) return { error: 0, message: null, view };
    const listed = groups.listGroups().find((g) => g.groupId === groupId);
    const notFound = kafkaErrorCode("GROUP_ID_NOT_FOUND");
    if (listed?.type === "consumer")
      return empty("Dead", notFound, `group ${groupId} is not a classic group`);
    if (listed) return empty("Empty");
    return version >= 6 ? empty("Dead", notFound, `group ${groupId} not found`) : empty("Dead");
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    return empty("Dead", errorCodeOf(deps, e, "DescribeGroups"), message);
  }
}
