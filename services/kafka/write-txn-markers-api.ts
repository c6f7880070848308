// WriteTxnMarkers v1 (API key 27, flexible): in Kafka an inter-broker API, which the admin
// client also sends for Admin.abortTransaction (kafka-transactions.sh abort, KIP-664) to the
// partition's leader. tern's coordinators write their markers over gRPC, so here it serves only
// that operator's abort: each partition's ABORT marker through the Broker service's
// AbortPartitionTransaction (as `tern txn abort`), which fences by the producer's epoch and the
// coordinator epoch as Kafka's does. A COMMIT marker is refused (INVALID_REQUEST): no client
// commits a transaction that way. CLUSTER_ACTION on the cluster is needed (Kafka's rule). v2
// (transactions V2's transaction_version) is not served. A coordinator, which leads no data
// partition, answers NOT_LEADER_OR_FOLLOWER.
import { clusterAllowed, type RequestAccess } from "./kafka-access.js";
import type { Logger } from "pino";
import { KafkaWriter, type KafkaReader } from "../../libs/records/kafka-codec.js";
import { API } from "./api-versions.js";
import { kafkaErrorCode } from "./kafka-errors.js";
import { thrownTxnErrorCode } from "./txn-errors.js";
import type {
  AbortPartitionTransactionRequest__Output,
  AbortPartitionTransactionResponse__Output,
} from "../../libs/common/proto-types/index.js";

/** tern.v1.Broker/AbortPartitionTransaction; undefined on a coordinator. */
export type AbortPartitionTransactionCall = (
  request: AbortPartitionTransactionRequest__Output,
) => Promise<AbortPartitionTransactionResponse__Output>;

interface Marker {
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly commit: boolean;
  readonly topics: ReadonlyArray<{ name: string; partitions: number[] }>;
  readonly coordinatorEpoch: number;
}

export async function writeTxnMarkersResponse(
  abort: AbortPartitionTransactionCall | undefined,
  logger: Logger,
  version: number,
  r: KafkaReader,
  access?: RequestAccess,
): Promise<Buffer> {
  const markers: Marker[] = r.compactArray((x) => {
    const producerId = x.int64();
    const producerEpoch = x.int16();
    const commit = x.bool();
    const topics = x.compactArray((y) => {
      const t = { name: y.compactString(), partitions: y.compactArray((z) => z.int32()) };
      y.taggedFields();
      return t;
    });
    const coordinatorEpoch = x.int32();
    x.taggedFields();
    return { producerId, producerEpoch, commit, topics, coordinatorEpoch };
  });
  r.taggedFields();
  const refused = access !== undefined && !clusterAllowed(access, "cluster-action");

  const partitionError = async (m: Marker, topic: string, partition: number): Promise<number> => {
    if (refused) return kafkaErrorCode("CLUSTER_AUTHORIZATION_FAILED");
    if (m.commit) return kafkaErrorCode("INVALID_REQUEST");
    if (abort === undefined) return kafkaErrorCode("NOT_LEADER_OR_FOLLOWER");
    try {
      const answer = await abort({
        topicPartition: { topic, partition },
        producerId: String(m.producerId),
        producerEpoch: m.producerEpoch,
        coordinatorEpoch: m.coordinatorEpoch,
      });
      return kafkaErrorCode(answer.errorCode);
    } catch (e) {
      return thrownTxnErrorCode(e, API.WriteTxnMarkers, version, logger);
    }
  };
  // One partition at a time: an operator's abort names one; a bound on work per request.
  const results: Array<{
    producerId: bigint;
    topics: Array<{ name: string; errors: number[][] }>;
  }> = [];
  for (const m of markers) {
    const topics: Array<{ name: string; errors: number[][] }> = [];
    for (const t of m.topics) {
      const errors: number[][] = [];
      for (const p of t.partitions) errors.push([p, await partitionError(m, t.name, p)]);
      topics.push({ name: t.name, errors });
    }
    results.push({ producerId: m.producerId, topics });
  }

  const w = new KafkaWriter(128);
  w.compactArray(results, (x, m) => {
    x.int64(m.producerId);
    x.compactArray(m.topics, (y, t) => {
      y.compactNullableString(t.name);
      y.compactArray(t.errors, (z, [partition, error]) =>
        z.int32(partition!).int16(error!).noTaggedFields(),
      );
      y.noTaggedFields();
    });
    x.noTaggedFields();
  });
  return w.noTaggedFields().finish();
}
