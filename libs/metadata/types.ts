// The cluster view every broker, coordinator and client works from (the contract of
// libs/metadata). Mirrors tern.v1.ClusterMetadata with plain numbers and role names.
import type { PeerAddress } from "../common/config.js";
import type { ScramCredential } from "../common/scram.js";
import type { AclBinding } from "../common/acl.js";
import type { ClientQuotaEntry } from "../common/client-quota.js";

/** Roles the controller tracks; controllers themselves are the quorum, not registered nodes. */
export type Role = "broker" | "coordinator";

export interface NodeInfo {
  nodeId: number;
  role: Role;
  /** HOST:PORT of the node's gRPC server. */
  address: string;
  rack?: string;
  /** HOST:PORT of the node's Kafka protocol listener, when it has one. */
  kafkaAddress?: string;
  alive: boolean;
  incarnation: string;
}

export interface PartitionInfo {
  topic: string;
  partition: number;
  /** Target replica set; replicas[0] is the preferred leader. */
  replicas: number[];
  /** -1 unknown. */
  leader: number;
  leaderTerm: number;
}

export interface TopicInfo {
  name: string;
  /** Kafka's topic id in its text form (topic-id.ts); absent until the controller assigned one. */
  id?: string;
  internal: boolean;
  role: "broker" | "coordinator";
  partitions: PartitionInfo[];
  config: Record<string, string>;
}

export interface ClusterMetadata {
  /** Decimal string of a 64-bit counter; compare with BigInt(). */
  version: string;
  controllerLeader: number;
  nodes: NodeInfo[];
  topics: TopicInfo[];
  /** The controller quorum's addresses (present when the answer came from a controller). */
  controllers?: PeerAddress[];
  /**
   * SCRAM credentials (salt, iterations, StoredKey, ServerKey) for the Kafka listeners' SASL.
   * Present only in WatchMetadata views sent to tern processes (never in Metadata answers).
   */
  scramCredentials?: ScramCredential[];
  /** ACL bindings the Kafka listeners enforce; in WatchMetadata views to tern processes only, as the credentials. */
  acls?: AclBinding[];
  /** Client quotas the Kafka listeners enforce (docs/security.md, "Quotas"); delivered as the ACLs are. */
  clientQuotas?: ClientQuotaEntry[];
}

export const TRANSACTION_STATE_TOPIC = "__transaction_state";
export const CONSUMER_OFFSETS_TOPIC = "__consumer_offsets";
export const CONTROLLER_GROUP_ID = "__controller";
/** Producer ids come in blocks of this many. */
export const PRODUCER_ID_BLOCK_SIZE = 1000;
