// A classic group's leader-side view in the shapes of tern's own group admin (the gRPC
// ConsumerGroupDescribe and ListGroups answers, group.proto), so `tern group describe | list`
// show classic groups too: the generation stands in for the group epoch, the selected protocol
// for the assignor, and subscriptions and assignments are read from the ConsumerProtocol bytes.
import type { ClassicGroupState, ClassicGroupView } from "./classic-group.js";
import { parseAssignment, parseSubscription } from "./consumer-protocol.js";

const STATE_NAMES: Record<ClassicGroupState, string> = {
  Empty: "EMPTY",
  PreparingRebalance: "PREPARING_REBALANCE",
  CompletingRebalance: "COMPLETING_REBALANCE",
  Stable: "STABLE",
  Dead: "DEAD",
};

export function classicStateName(state: ClassicGroupState): string {
  return STATE_NAMES[state];
}

export function classicDescribe(v: ClassicGroupView): Record<string, unknown> {
  const consumer = v.protocolType === "consumer";
  return {
    groupId: v.groupId,
    type: "classic",
    state: classicStateName(v.state),
    groupEpoch: v.generationId,
    assignmentEpoch: v.generationId,
    assignor: v.protocolName,
    rebalances: "0",
    members: v.members.map((m) => {
      const assignment = consumer
        ? parseAssignment(m.assignment).partitions.map(([topic, partitions]) => ({
            topic,
            partitions,
          }))
        : [];
      return {
        memberId: m.memberId,
        instanceId: m.instanceId,
        clientId: m.clientId,
        clientHost: m.clientHost,
        memberEpoch: v.generationId,
        state: classicStateName(v.state),
        subscribedTopicNames: consumer ? [...parseSubscription(m.metadata).topics] : [],
        subscribedTopicRegex: "",
        assignment,
        pendingRevocation: [],
        targetAssignment: assignment,
      };
    }),
  };
}

export function classicListing(v: ClassicGroupView): {
  groupId: string;
  type: string;
  state: string;
  members: number;
  protocolType: string;
} {
  return {
    groupId: v.groupId,
    type: "classic",
    state: classicStateName(v.state),
    members: v.members.length,
    protocolType: v.protocolType,
  };
}
