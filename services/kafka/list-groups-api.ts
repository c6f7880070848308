// ListGroups v0-2: the groups of the __consumer_offsets partitions this broker leads (clients
// ask every broker): classic groups with their protocol type, KIP-848 groups as "consumer",
// simple groups (committed offsets only) with "". A node without a group coordinator (a
// coordinator process, which Metadata lists too, so kafkajs asks it) answers an empty list.
import { errorCodeOf, groupCoordinatorOf } from "./group-api-common.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { KafkaWriter } from "../../libs/records/kafka-codec.js";

export function listGroupsResponse(deps: KafkaDeps, version: number): Buffer {
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
  if (version >= 1) w.int32(0);
  w.int16(error);
  w.array(groups, (x, g) => {
    x.string(g.groupId).string(g.protocolType);
  });
  return w.finish();
}
