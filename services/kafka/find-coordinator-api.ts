// FindCoordinator v0-v5 (layouts: find-coordinator-codec.ts; v3+ flexible, v4+ batched keys,
// each answered on its own, in request order). key_type 0 (group, the only one in v0): the broker leading
// the group's __consumer_offsets partition. key_type 1 (transaction): the coordinator process
// leading the transactional id's __transaction_state partition, under its Kafka node id
// (kafka-node-ids.ts). The partition comes from the count of the topic the controller created
// (libs/metadata/lookup.ts), the leader from cluster metadata. No leader yet, or a
// leader without a Kafka listener: COORDINATOR_NOT_AVAILABLE, which clients retry.
import type { RequestAccess } from "./kafka-access.js";
import { partitionFor } from "../../libs/common/hash.js";
import { findPartition, internalPartitionCount } from "../../libs/metadata/lookup.js";
import {
  CONSUMER_OFFSETS_TOPIC,
  TRANSACTION_STATE_TOPIC,
  type ClusterMetadata,
  type Role,
} from "../../libs/metadata/types.js";
import type { KafkaEndpoint, TransactionCoordinatorCalls } from "./kafka-deps.js";
import type { KafkaReader } from "../../libs/records/kafka-codec.js";
import {
  decodeFindCoordinatorRequest,
  encodeFindCoordinatorResponse,
  KEY_TYPE_GROUP,
  KEY_TYPE_TRANSACTION,
  type CoordinatorEntry,
} from "./find-coordinator-codec.js";
import { kafkaErrorCode } from "./kafka-errors.js";
import { kafkaNodeId, nodeKafkaEndpoint } from "./kafka-node-ids.js";
import type { FindCoordinatorResponse__Output } from "../../libs/common/proto-types/index.js";

export { KEY_TYPE_GROUP, KEY_TYPE_TRANSACTION };

export type CoordinatorAnswer =
  | { readonly error: "NONE"; readonly kafkaNodeId: number; readonly endpoint: KafkaEndpoint }
  | {
      readonly error:
        | "COORDINATOR_NOT_AVAILABLE"
        | "INVALID_REQUEST"
        | "GROUP_AUTHORIZATION_FAILED"
        | "TRANSACTIONAL_ID_AUTHORIZATION_FAILED";
      readonly message: string;
    };

/** ACLs: finding a coordinator needs DESCRIBE on the group or transactional id (Kafka's rule). */
export function coordinatorRefusal(
  access: RequestAccess | undefined,
  keyType: number,
  key: string,
): CoordinatorAnswer | undefined {
  if (access === undefined) return undefined;
  const type = keyType === KEY_TYPE_TRANSACTION ? "transactional-id" : "group";
  if (access.allowed("describe", type, key)) return undefined;
  return {
    error:
      type === "group" ? "GROUP_AUTHORIZATION_FAILED" : "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
    message: `${access.principal} may not describe ${type} "${key}"`,
  };
}

/** The coordinator of a key from a cluster metadata view. */
export function coordinatorFromMetadata(
  m: ClusterMetadata | undefined,
  keyType: number,
  key: string,
): CoordinatorAnswer {
  if (keyType !== KEY_TYPE_GROUP && keyType !== KEY_TYPE_TRANSACTION)
    return { error: "INVALID_REQUEST", message: `unknown coordinator key type ${keyType}` };
  const group = keyType === KEY_TYPE_GROUP;
  const topic = group ? CONSUMER_OFFSETS_TOPIC : TRANSACTION_STATE_TOPIC;
  const role: Role = group ? "broker" : "coordinator";
  const count = internalPartitionCount(m, topic);
  if (m === undefined || count === undefined)
    return {
      error: "COORDINATOR_NOT_AVAILABLE",
      message: `${topic} is not in this node's cluster metadata yet`,
    };
  const partition = partitionFor(key, count);
  const leader = findPartition(m, topic, partition)?.leader ?? -1;
  if (leader < 0)
    return { error: "COORDINATOR_NOT_AVAILABLE", message: `${topic}/${partition} has no leader` };
  const endpoint = nodeKafkaEndpoint(m, role, leader);
  if (endpoint === undefined)
    return {
      error: "COORDINATOR_NOT_AVAILABLE",
      message: `${role} ${leader} (leader of ${topic}/${partition}) is not alive or has no Kafka listener`,
    };
  return { error: "NONE", kafkaNodeId: kafkaNodeId(role, leader), endpoint };
}

/**
 * On a coordinator: a transactional id's coordinator from the coordinator's own FindCoordinator
 * handler, which knows its own and its Raft peers' leaderships before the controller does.
 */
export async function coordinatorFromHandler(
  calls: TransactionCoordinatorCalls,
  m: ClusterMetadata | undefined,
  keyType: number,
  key: string,
): Promise<CoordinatorAnswer> {
  if (keyType !== KEY_TYPE_TRANSACTION) return coordinatorFromMetadata(m, keyType, key);
  let res: FindCoordinatorResponse__Output;
  try {
    res = await calls.findCoordinator({ key, keyType: "TRANSACTION" });
  } catch (e) {
    return {
      error: "COORDINATOR_NOT_AVAILABLE",
      message: e instanceof Error ? e.message : String(e),
    };
  }
  if (res?.errorCode !== "NONE")
    return {
      error: "COORDINATOR_NOT_AVAILABLE",
      message: String(res?.errorMessage ?? res?.errorCode),
    };
  // The handler names the coordinator with every NONE answer.
  const leader = Number(res.coordinator!.nodeId);
  const endpoint = nodeKafkaEndpoint(m, "coordinator", leader);
  if (endpoint === undefined)
    return {
      error: "COORDINATOR_NOT_AVAILABLE",
      message: `coordinator ${leader} is not alive or has no Kafka listener`,
    };
  return { error: "NONE", kafkaNodeId: kafkaNodeId("coordinator", leader), endpoint };
}

export async function findCoordinatorResponse(
  locate: (keyType: number, key: string) => CoordinatorAnswer | Promise<CoordinatorAnswer>,
  version: number,
  r: KafkaReader,
): Promise<Buffer> {
  const { keyType, keys } = decodeFindCoordinatorRequest(version, r);
  const entries: CoordinatorEntry[] = [];
  // One key at a time: a batch (bounded in the codec) never holds more than one lookup open.
  for (const key of keys) {
    const a: CoordinatorAnswer =
      key === ""
        ? { error: "INVALID_REQUEST", message: "FindCoordinator needs a key" }
        : await locate(keyType, key);
    entries.push(
      a.error === "NONE"
        ? { key, errorCode: 0, errorMessage: null, nodeId: a.kafkaNodeId, ...a.endpoint }
        : // Kafka answers an error with Node.noNode(): id -1, host "", port -1.
          { key, errorCode: kafkaErrorCode(a.error), errorMessage: a.message, ...NO_NODE },
    );
  }
  return encodeFindCoordinatorResponse(version, entries);
}

const NO_NODE = { nodeId: -1, host: "", port: -1 } as const;
