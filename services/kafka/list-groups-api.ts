// ListGroups v0-5 (v3+ flexible; v4 adds each group's state and a states filter, KIP-518; v5
// its type and a types filter, KIP-848; both filters match case-insensitively, as Kafka 4's):
// the groups of the __consumer_offsets partitions this broker leads (clients ask every broker):
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
  const f = fieldReader(r, flexible);
  const lower = (): string => f.string().toLowerCase();
  const states = new Set(version >= 4 ? f.array(lower) : []);
  const types = new Set(version >= 5 ? f.array(lower) : []);
  f.tags();
  let error = 0;
  let groups: ListedGroup[] = [];
  try {
    // ACLs: only the groups the principal may DESCRIBE are listed.
    const access = deps.access;
    groups = (deps.groups === undefined ? [] : groupCoordinatorOf(deps).listGroups())
      .filter((g) => access === undefined || access.allowed("describe", "group", g.groupId))
      .map(kafkaListing)
      .filter(
        (g) =>
          (states.size === 0 || states.has(g.state.toLowerCase())) &&
          (types.size === 0 || types.has(g.type)),
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
    if (version >= 4) o.string(g.state);
    if (version >= 5) o.string(g.type);
    o.tags();
  });
  o.tags();
  return w.finish();
}

interface ListedGroup {
  readonly groupId: string;
  readonly protocolType: string;
  /** Kafka's state name: Empty, PreparingRebalance, CompletingRebalance, Stable, Reconciling, ... */
  readonly state: string;
  /** Kafka's group type: "classic" (simple groups too, as Kafka lists them) or "consumer". */
  readonly type: string;
}

/** A listing of the group coordinator (tern's UPPER_SNAKE state names) in Kafka's names. */
function kafkaListing(g: {
  groupId: string;
  type: string;
  state: string;
  protocolType: string;
}): ListedGroup {
  const state = g.state
    .toLowerCase()
    .split("_")
    .map((word) => word.charAt(0).toUpperCase() + word.slice(1))
    .join("");
  return {
    groupId: g.groupId,
    protocolType: g.protocolType,
    state,
    type: g.type === "consumer" ? "consumer" : "classic",
  };
}
