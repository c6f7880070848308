// ListGroups v0-3 (v3 flexible; v4's states and v5's types filters are not served yet): the
// groups of the __consumer_offsets partitions this broker leads (clients ask every broker):
// classic groups with their protocol type, KIP-848 groups as "consumer",
// simple groups (committed offsets only) with "". A node without a group coordinator (a
// coordinator process, which Metadata lists too, so kafkajs asks it) answers an empty list.
import { errorCodeOf, groupCoordinatorOf } from "./group-api-common.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { type KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { fieldReader, fieldWriter } from "./versioned-fields.js";

/** The first flexible version. */
export const LIST_GROUPS_FLEXIBLE_SINCE = 3;

export function listGroupsResponse(deps: KafkaDeps, version: number, r: KafkaReader): Buffer {
  const flexible = version >= LIST_GROUPS_FLEXIBLE_SINCE;
  fieldReader(r, flexible).tags(); // v0-v3 carry nothing else
  let error = 0;
  let groups: Array<{ groupId: string; protocolType: string }> = [];
  try {
    // ACLs: only the groups the principal may DESCRIBE are listed.
    const access = deps.access;
    groups = (deps.groups === undefined ? [] : groupCoordinatorOf(deps).listGroups()).filter(
      (g) => access === undefined || access.allowed("describe", "group", g.groupId),
    );
  } catch (e) {
    error = errorCodeOf(deps, e, "ListGroups");
  }
  const w = new KafkaWriter(256);
  const o = fieldWriter(w, flexible);
  if (version >= 1) w.int32(0);
  w.int16(error);
  o.array(groups, (_, g) => {
    o.string(g.groupId);
    o.string(g.protocolType);
    o.tags();
  });
  o.tags();
  return w.finish();
}
