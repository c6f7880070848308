// The public surface of libs/metadata: cluster view types, lookups, the controller client and
// node membership. Import from here unless you need an internal.
export * from "./types.js";
export * from "./lookup.js";
export {
  ControllerClient,
  type ControllerClientOptions,
  type ControllerQuorumStatus,
  type TopicOutcome,
  type TopicSpec,
} from "./controller-client.js";
export {
  startNodeMembership,
  type NodeMembership,
  type NodeMembershipOptions,
} from "./node-membership.js";
