// JoinGroup v0-8: a classic-group member joins, or rejoins, and waits (at most the rebalance
// timeout) for the join phase to end; the leader's answer lists every member's subscription.
// v4+ clients get MEMBER_ID_REQUIRED with a member id first (KIP-394); v5 adds
// group.instance.id (KIP-345); v6 is the first flexible version; v7 answers the group's
// protocol type, and an empty protocol name as null (as Kafka); v8 carries the client's reason
// (KIP-800), logged. v9 (KIP-814's skip_assignment for a static leader rejoining a stable
// group) is not served: this group still hands that leader the member list to assign anew.
import type { ClassicProtocol, JoinRequest } from "../group/index.js";
import { errorCodeOf, groupCoordinatorOf, type KafkaClientInfo } from "./group-api-common.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { fieldReader, fieldWriter } from "./versioned-fields.js";

/** The first flexible version. */
export const JOIN_GROUP_FLEXIBLE_SINCE = 6;
import { kafkaErrorCode } from "./kafka-errors.js";

export async function joinGroupResponse(
  deps: KafkaDeps,
  version: number,
  r: KafkaReader,
  client: KafkaClientInfo,
): Promise<Buffer> {
  const f = fieldReader(r, version >= JOIN_GROUP_FLEXIBLE_SINCE);
  const groupId = f.string();
  const sessionTimeoutMs = r.int32();
  const rebalanceTimeoutMs = version >= 1 ? r.int32() : sessionTimeoutMs;
  const memberId = f.string();
  const instanceId = version >= 5 ? f.nullableString() : null;
  const protocolType = f.string();
  // Copied (f.bytes): the frame's buffer is not kept.
  const protocols = f.array((): ClassicProtocol => {
    const p = { name: f.string(), metadata: f.bytes() };
    f.tags();
    return p;
  });
  const reason = version >= 8 ? f.nullableString() : null;
  f.tags();
  if (reason !== null) deps.logger.debug({ groupId, memberId, reason }, "kafka JoinGroup");
  const request: JoinRequest = {
    memberId,
    instanceId: instanceId ?? "",
    clientId: client.clientId,
    clientHost: client.clientHost,
    sessionTimeoutMs,
    rebalanceTimeoutMs,
    protocolType,
    protocols,
    requireKnownMemberId: version >= 4,
  };
  let outcome;
  try {
    outcome = await groupCoordinatorOf(deps, groupId).classic.join(groupId, request);
  } catch (e) {
    return encode(version, errorCodeOf(deps, e, "JoinGroup"), -1, "", "", "", memberId, []);
  }
  if (outcome.error !== "NONE")
    deps.logger.debug(
      { groupId, memberId: outcome.memberId, error: outcome.error, message: outcome.message },
      "kafka JoinGroup refused",
    );
  return encode(
    version,
    kafkaErrorCode(outcome.error),
    outcome.generationId,
    outcome.error === "NONE" ? outcome.protocolType : "",
    outcome.protocolName,
    outcome.leader,
    outcome.memberId,
    outcome.members,
  );
}

function encode(
  version: number,
  error: number,
  generationId: number,
  protocolType: string,
  protocolName: string,
  leader: string,
  memberId: string,
  members: ReadonlyArray<{ memberId: string; instanceId: string; metadata: Buffer }>,
): Buffer {
  const w = new KafkaWriter(256);
  const o = fieldWriter(w, version >= JOIN_GROUP_FLEXIBLE_SINCE);
  if (version >= 2) w.int32(0); // throttle_time_ms
  w.int16(error).int32(generationId);
  // v7+: null where there is none (Kafka's JoinGroupResponse does the same for the name).
  if (version >= 7) o.string(protocolType === "" ? null : protocolType);
  o.string(version >= 7 && protocolName === "" ? null : protocolName);
  o.string(leader);
  o.string(memberId);
  o.array(members, (x, m) => {
    o.string(m.memberId);
    if (version >= 5) o.string(m.instanceId === "" ? null : m.instanceId);
    o.bytes(m.metadata);
    o.tags();
  });
  o.tags();
  return w.finish();
}
