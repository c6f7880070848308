// Dispatch of the consumer-group APIs of the Kafka listener (JoinGroup, SyncGroup, Heartbeat,
// LeaveGroup, OffsetCommit, OffsetFetch, ListGroups, DescribeGroups, DeleteGroups,
// OffsetDelete, and KIP-848's ConsumerGroupHeartbeat and ConsumerGroupDescribe), one file each.
import { GROUP_API as API } from "./group-api-versions.js";
import { describeGroupsResponse } from "./describe-groups-api.js";
import { consumerGroupDescribeResponse } from "./consumer-group-describe-api.js";
import { consumerGroupHeartbeatResponse } from "./consumer-group-heartbeat-api.js";
import { deleteGroupsResponse } from "./delete-groups-api.js";
import { offsetDeleteResponse } from "./offset-delete-api.js";
import type { KafkaClientInfo } from "./group-api-common.js";
import { heartbeatResponse } from "./heartbeat-api.js";
import { joinGroupResponse } from "./join-group-api.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { type KafkaReader } from "../../libs/records/kafka-codec.js";
import { leaveGroupResponse } from "./leave-group-api.js";
import { listGroupsResponse } from "./list-groups-api.js";
import { offsetCommitResponse } from "./offset-commit-api.js";
import { offsetFetchResponse } from "./offset-fetch-api.js";
import { syncGroupResponse } from "./sync-group-api.js";
import { DecodeError } from "../../libs/common/decode-error.js";

const GROUP_APIS: ReadonlySet<number> = new Set([
  API.OffsetCommit,
  API.OffsetFetch,
  API.JoinGroup,
  API.Heartbeat,
  API.LeaveGroup,
  API.SyncGroup,
  API.DescribeGroups,
  API.ListGroups,
  API.DeleteGroups,
  API.OffsetDelete,
  API.ConsumerGroupHeartbeat,
  API.ConsumerGroupDescribe,
]);

export function isGroupApi(apiKey: number): boolean {
  return GROUP_APIS.has(apiKey);
}

export async function groupApiResponse(
  deps: KafkaDeps,
  apiKey: number,
  version: number,
  r: KafkaReader,
  client: KafkaClientInfo,
): Promise<Buffer> {
  switch (apiKey) {
    case API.JoinGroup:
      return joinGroupResponse(deps, version, r, client);
    case API.SyncGroup:
      return syncGroupResponse(deps, version, r);
    case API.Heartbeat:
      return heartbeatResponse(deps, version, r);
    case API.LeaveGroup:
      return leaveGroupResponse(deps, version, r);
    case API.OffsetCommit:
      return offsetCommitResponse(deps, version, r);
    case API.OffsetFetch:
      return offsetFetchResponse(deps, version, r);
    case API.ListGroups:
      return listGroupsResponse(deps, version, r);
    case API.DescribeGroups:
      return describeGroupsResponse(deps, version, r);
    case API.DeleteGroups:
      return deleteGroupsResponse(deps, version, r);
    case API.OffsetDelete:
      return offsetDeleteResponse(deps, version, r);
    case API.ConsumerGroupHeartbeat:
      return consumerGroupHeartbeatResponse(deps, version, r, client);
    case API.ConsumerGroupDescribe:
      return consumerGroupDescribeResponse(deps, version, r);
    default:
      throw new DecodeError("kafka", `api key ${apiKey} is not a group api`);
  }
}
