// DescribeCluster v0 (flexible; KIP-700, what Kafka's admin client uses for describeCluster):
// the cluster id, the "controller" (as in Metadata: tern's controllers are not Kafka nodes) and
// the same Kafka nodes Metadata lists, the transaction coordinators under their Kafka node ids.
import { kafkaErrorCode } from "./kafka-errors.js";
import { clusterAllowed } from "./kafka-access.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { kafkaControllerId, kafkaNodes } from "./metadata-api.js";

/** ClusterAuthorizedOperations when the client did not ask (and tern has no ACLs yet). */
const OPERATIONS_NOT_ASKED = -2147483648;

export function describeClusterResponse(deps: KafkaDeps, r: KafkaReader): Buffer {
  r.bool(); // include_cluster_authorized_operations: no ACLs yet, answered as not asked
  r.taggedFields();
  // ACLs: DESCRIBE on the cluster.
  if (!clusterAllowed(deps.access, "describe")) {
    return new KafkaWriter(64)
      .int32(0)
      .int16(kafkaErrorCode("CLUSTER_AUTHORIZATION_FAILED"))
      .compactNullableString(`${deps.access?.principal} may not describe the cluster`)
      .compactNullableString(deps.clusterId)
      .int32(-1)
      .compactArray([], () => undefined)
      .int32(OPERATIONS_NOT_ASKED)
      .noTaggedFields()
      .finish();
  }
  const { brokers, coordinators } = kafkaNodes(deps);
  const w = new KafkaWriter(256).int32(0).int16(0).compactNullableString(null);
  w.compactNullableString(deps.clusterId).int32(kafkaControllerId(deps, brokers));
  w.compactArray([...brokers, ...coordinators], (x, n) => {
    x.int32(n.nodeId)
      .compactNullableString(n.host)
      .int32(n.port)
      .compactNullableString(n.rack)
      .noTaggedFields();
  });
  return w.int32(OPERATIONS_NOT_ASKED).noTaggedFields().finish();
}
