// JoinGroup v0-5 (non-flexible: what librdkafka 2.0 and kafkajs 2.2 send): a classic-group
// member joins, or rejoins, and waits (at most the rebalance timeout) for the join phase to
// end; the leader's answer lists every member's subscription. v4+ clients get
// MEMBER_ID_REQUIRED with a member id first (KIP-394); v5 adds group.instance.id (KIP-345).
import type { ClassicProtocol, JoinRequest } from "../group/index.js";
import { errorCodeOf, groupCoordinatorOf, type KafkaClientInfo } from "./group-api-common.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { kafkaErrorCode } from "./kafka-errors.js";

export async function joinGroupResponse(
  deps: KafkaDeps,
  version: number,
  r: KafkaReader,
  client: KafkaClientInfo,
): Promise<Buffer> {
  const groupId = r.string();
  const sessionTimeoutMs = r.int32();
  const rebalanceTimeoutMs = version >= 1 ? r.int32() : sessionTimeoutMs;
  const memberId = r.string();
  const instanceId = version >= 5 ? r.nullableString() : null;
  const protocolType = r.string();
  // Copied: the frame's buffer is not kept.
  const protocols = r.array((x): ClassicProtocol => ({
    name: x.string(),
    metadata: Buffer.from(x.nullableBytes() ?? Buffer.alloc(0)),
  }));
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
    return encode(version, errorCodeOf(deps, e, "JoinGroup"), -1, "", "", memberId, []);
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
  protocolName: string,
  leader: string,
  memberId: string,
  members: ReadonlyArray<{ memberId: string; instanceId: string; metadata: Buffer }>,
): Buffer {
  const w = new KafkaWriter(256);
  if (version >= 2) w.int32(0); // throttle_time_ms
  w.int16(error).int32(generationId).string(protocolName).string(leader).string(memberId);
  w.array(members, (x, m) => {
    x.string(m.memberId);
    if (version >= 5) x.nullableString(m.instanceId === "" ? null : m.instanceId);
    x.nullableBytes(m.metadata);
  });
  return w.finish();
}
