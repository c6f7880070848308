// The classic consumer-group APIs' keys and the versions served. JoinGroup v6-v8, Heartbeat v4,
// LeaveGroup v4-v5, SyncGroup v4-v5, DescribeGroups v5-v6, ListGroups v3-v5, OffsetFetch v6-v7
// and OffsetCommit v8-v9 are flexible (a Kafka 4.x Java client's classic consumer). librdkafka
// 2.0 asks for at most JoinGroup 5, SyncGroup 3, Heartbeat 3, LeaveGroup 1, OffsetCommit 7,
// OffsetFetch 7 (flexible, with require_stable), DescribeGroups 4, ListGroups 4 (flexible, with
// states); kafkajs 2.2 for at most JoinGroup 5, SyncGroup 3, Heartbeat 3, LeaveGroup 3,
// OffsetCommit 5, OffsetFetch 4, DescribeGroups 2, ListGroups 2. Kept apart from
// api-versions.ts's own table, which spreads these in. DeleteGroups, OffsetDelete and KIP-848's
// ConsumerGroupHeartbeat and ConsumerGroupDescribe are adapters over the group service too.
export const GROUP_API = {
  OffsetCommit: 8,
  OffsetFetch: 9,
  JoinGroup: 11,
  Heartbeat: 12,
  LeaveGroup: 13,
  SyncGroup: 14,
  DescribeGroups: 15,
  ListGroups: 16,
  DeleteGroups: 42,
  OffsetDelete: 47,
  ConsumerGroupHeartbeat: 68,
  ConsumerGroupDescribe: 69,
} as const;

export const GROUP_API_VERSIONS: ReadonlyArray<[number, { min: number; max: number }]> = [
  [GROUP_API.OffsetCommit, { min: 0, max: 9 }],
  [GROUP_API.OffsetFetch, { min: 1, max: 7 }],
  [GROUP_API.JoinGroup, { min: 0, max: 8 }],
  [GROUP_API.Heartbeat, { min: 0, max: 4 }],
  [GROUP_API.LeaveGroup, { min: 0, max: 5 }],
  [GROUP_API.SyncGroup, { min: 0, max: 5 }],
  [GROUP_API.DescribeGroups, { min: 0, max: 6 }],
  [GROUP_API.ListGroups, { min: 0, max: 5 }],
  // v2 flexible. OffsetDelete has only v0 (not flexible).
  [GROUP_API.DeleteGroups, { min: 0, max: 2 }],
  [GROUP_API.OffsetDelete, { min: 0, max: 0 }],
  // KIP-848's consumer protocol, flexible only: v1 adds the subscribed regex and client-made
  // member ids (heartbeat), the member type (describe).
  [GROUP_API.ConsumerGroupHeartbeat, { min: 0, max: 1 }],
  [GROUP_API.ConsumerGroupDescribe, { min: 0, max: 1 }],
];
