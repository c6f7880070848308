// The Kafka APIs this listener serves and their version ranges (ApiVersions answers this table;
// any other key or version gets UNSUPPORTED_VERSION). Brokers' and coordinators' listeners
// answer the same table: kafkajs asks ApiVersions of its seed broker only and uses that answer
// for every node, the coordinators FindCoordinator names included. An API a node does not serve
// gets that API's own error answer instead (kafka-server.ts). A version is listed only when it
// is served whole, layout and meaning (Kafka 4.x clients pick the highest listed). Flexible
// versions so far: Produce v9-v12, Fetch v12, ListOffsets v6-v9, ApiVersions v3-v4, Metadata v9-v13, FindCoordinator v3-v5, InitProducerId
// v2-v5, AddPartitionsToTxn v3-v5, AddOffsetsToTxn v3-v4, EndTxn v3-v5, TxnOffsetCommit v3-v5
// (KIP-447; v5 transactions V2), JoinGroup v6-v8, SyncGroup and LeaveGroup v4-v5, Heartbeat v4, DescribeGroups
// v5-v6, ListGroups v3-v5, OffsetCommit v8-v9, OffsetFetch v6-v7, SaslAuthenticate v2, the client quota APIs' v1 and the admin APIs that exist only flexible (DescribeCluster,
// the transaction tools').
// The other ranges cover what librdkafka 2.0 and kafkajs 2.2 ask for (docs/kafka-protocol.md,
// whose table of served versions a test renders from this one).
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { GROUP_API, GROUP_API_VERSIONS } from "./group-api-versions.js";
import { writeTaggedFields } from "./versioned-fields.js";
import { KAFKA_FEATURES, type KafkaFeatureLevels } from "../../libs/common/kafka-features.js";

export const API = {
  Produce: 0,
  Fetch: 1,
  ListOffsets: 2,
  Metadata: 3,
  FindCoordinator: 10,
  SaslHandshake: 17,
  ApiVersions: 18,
  CreateTopics: 19,
  DeleteTopics: 20,
  DeleteRecords: 21,
  InitProducerId: 22,
  AddPartitionsToTxn: 24,
  AddOffsetsToTxn: 25,
  EndTxn: 26,
  WriteTxnMarkers: 27,
  TxnOffsetCommit: 28,
  SaslAuthenticate: 36,
  DescribeConfigs: 32,
  CreatePartitions: 37,
  DescribeAcls: 29,
  CreateAcls: 30,
  DeleteAcls: 31,
  DescribeClientQuotas: 48,
  AlterClientQuotas: 49,
  DescribeCluster: 60,
  DescribeProducers: 61,
  DescribeTransactions: 65,
  ListTransactions: 66,
} as const;

export interface VersionRange {
  readonly min: number;
  readonly max: number;
}

export const SUPPORTED: ReadonlyMap<number, VersionRange> = new Map([
  ...GROUP_API_VERSIONS,
  // From v0, as Kafka 3.x brokers: librdkafka (2.0.2 here, up to at least 2.11.0) drops gzip, snappy and lz4 to
  // uncompressed when a broker's Produce range starts above v0 (its compr_req check asks for
  // Produce v0). v0-v2 carry the old message formats: their batches are refused
  // (UNSUPPORTED_FOR_MESSAGE_FORMAT, record-batch.ts); clients that speak v3+ use it. v9+ is
  // flexible, v10 names a moved partition's leader (KIP-951), v11 = v10 (TRANSACTION_ABORTABLE
  // allowed, never answered), v12 transactions V2's implicit partition add (KIP-890 part 2); v13
  // names topics by id (not served yet).
  [API.Produce, { min: 0, max: 12 }],
  // v12 is flexible; v13+ names topics by id (not served: a Kafka client negotiates v12).
  [API.Fetch, { min: 4, max: 12 }],
  // v6+ flexible, v7 max timestamp, v8 earliest local, v9 latest tiered; v10 (a timeout for
  // tiered reads) and v11 (earliest pending upload) are not served.
  [API.ListOffsets, { min: 1, max: 9 }],
  // v9+ flexible, v10+ topic ids (docs/decisions.md, "Kafka topic ids"), v13 a
  // top-level error code (metadata-codec.ts).
  [API.Metadata, { min: 1, max: 13 }],
  // v3+ flexible, v4+ batched keys (KIP-699); v5 = v4 (TRANSACTION_ABORTABLE allowed, never sent).
  [API.FindCoordinator, { min: 0, max: 5 }],
  // v3+ flexible, with the supported and finalized features (KIP-584) as tagged fields; v4 lets
  // a supported feature's min version be 0 (v3 omits those, KAFKA-17011); v5 (KIP-1242's cluster
  // and node id check) is not served.
  [API.ApiVersions, { min: 0, max: 4 }],
  // v2+ flexible; v3 adds the producer's id and epoch (KIP-360), v4 the PRODUCER_FENCED code,
  // v5 TRANSACTION_ABORTABLE (KIP-890 part 1; never answered by tern). v6 (2PC) is not served.
  [API.InitProducerId, { min: 0, max: 5 }],
  // v3 of these four is the first flexible version; librdkafka 2.0 and kafkajs 2.2 use v0-v2.
  // AddOffsetsToTxn and EndTxn v4 = v3 (TRANSACTION_ABORTABLE allowed, never answered); EndTxn
  // v5 bumps the epoch at every end and answers it (transactions V2, KIP-890 part 2).
  // AddPartitionsToTxn v3 is the newest a client sends; v4+ is brokers' (batched, verify-only or
  // add, CLUSTER_ACTION), v5 = v4. TxnOffsetCommit v3 (KIP-447's generation, member and instance
  // id) is what a Kafka 2.5+ Java client's sendOffsetsToTransaction(offsets, groupMetadata)
  // needs (it refuses v2); v4 = v3, v5 adds the group's partition itself (transactions V2); v6
  // names topics by id (not served).
  [API.AddPartitionsToTxn, { min: 0, max: 5 }],
  [API.AddOffsetsToTxn, { min: 0, max: 4 }],
  [API.EndTxn, { min: 0, max: 5 }],
  [API.TxnOffsetCommit, { min: 0, max: 5 }],
  [API.CreateTopics, { min: 0, max: 4 }],
  [API.DeleteTopics, { min: 0, max: 3 }],
  // v2+ flexible, v3 = v2 (create-partitions-api.ts): kafka-topics.sh --alter --partitions.
  [API.CreatePartitions, { min: 0, max: 3 }],
  [API.DescribeConfigs, { min: 0, max: 2 }],
  // Flexible from v0 (KIP-664 transaction tools, KIP-700 DescribeCluster).
  [API.DescribeCluster, { min: 0, max: 0 }],
  [API.DescribeProducers, { min: 0, max: 0 }],
  [API.DescribeTransactions, { min: 0, max: 0 }],
  [API.ListTransactions, { min: 0, max: 1 }],
  // Only the admin client's abort of a hanging transaction (write-txn-markers-api.ts); v1 is
  // the first version Kafka 4 serves, flexible; v2 (transactions V2) is not served.
  [API.WriteTxnMarkers, { min: 1, max: 1 }],
  // v2 is flexible; kafkajs 2.2 sends v0-v1.
  [API.DeleteRecords, { min: 0, max: 1 }],
  // ACLs (acl-apis.ts); v2 is flexible.
  [API.DescribeAcls, { min: 0, max: 1 }],
  [API.CreateAcls, { min: 0, max: 1 }],
  [API.DeleteAcls, { min: 0, max: 1 }],
  // Client quotas (quota-apis.ts); v1 is flexible (what Kafka 2.8+ and 4.x admin clients send).
  [API.DescribeClientQuotas, { min: 0, max: 1 }],
  [API.AlterClientQuotas, { min: 0, max: 1 }],
  // SASL/SCRAM (sasl-authenticator.ts); SaslAuthenticate v2 is flexible (what a Kafka 4.x
  // client sends), SaslHandshake has no flexible version.
  [API.SaslHandshake, { min: 0, max: 1 }],
  [API.SaslAuthenticate, { min: 0, max: 2 }],
]);

/**
 * Whether a request of this key and version uses the flexible (v2) request header. An
 * ApiVersions version we do not know is read no further than its correlation id (Kafka's rule),
 * whatever header it has.
 */
export function flexibleRequest(apiKey: number, version: number): boolean {
  const since = FLEXIBLE_SINCE.get(apiKey);
  return since !== undefined && version >= since && supports(apiKey, version);
}

/** The first flexible version of an API in the table; undefined when none it serves is flexible. */
export function flexibleSince(apiKey: number): number | undefined {
  return FLEXIBLE_SINCE.get(apiKey);
}

/** The first flexible version of each API in the table (Kafka's message schemas, "flexibleVersions"). */
const FLEXIBLE_SINCE: ReadonlyMap<number, number> = new Map([
  [API.Produce, 9],
  [API.Fetch, 12],
  [API.ListOffsets, 6],
  [API.Metadata, 9],
  [API.FindCoordinator, 3],
  [API.ApiVersions, 3],
  [API.InitProducerId, 2],
  [API.AddPartitionsToTxn, 3],
  [API.AddOffsetsToTxn, 3],
  [API.EndTxn, 3],
  [API.TxnOffsetCommit, 3],
  [GROUP_API.OffsetCommit, 8],
  [API.DescribeClientQuotas, 1],
  [API.AlterClientQuotas, 1],
  [API.SaslAuthenticate, 2],
  [API.CreatePartitions, 2],
  [GROUP_API.JoinGroup, 6],
  [GROUP_API.Heartbeat, 4],
  [GROUP_API.LeaveGroup, 4],
  [GROUP_API.SyncGroup, 4],
  [GROUP_API.DescribeGroups, 5],
  [GROUP_API.ListGroups, 3],
  [GROUP_API.OffsetFetch, 6],
  [API.DescribeCluster, 0],
  [API.DescribeProducers, 0],
  [API.DescribeTransactions, 0],
  [API.ListTransactions, 0],
  [GROUP_API.DeleteGroups, 2],
  [GROUP_API.ConsumerGroupHeartbeat, 0],
  [GROUP_API.ConsumerGroupDescribe, 0],
  [API.WriteTxnMarkers, 1],
]);

export function supports(
  apiKey: number,
  version: number,
  table: ReadonlyMap<number, VersionRange> = SUPPORTED,
): boolean {
  const r = table.get(apiKey);
  return r !== undefined && version >= r.min && version <= r.max;
}

/**
 * The features v3+ answers: every row of KAFKA_FEATURES as supported, the cluster's levels as
 * finalized (a level 0 is not finalized, as in Kafka), under an epoch that only grows (Kafka:
 * the metadata offset of the last feature change; here the cluster metadata version, which a
 * restart of a process with other settings moves on). A Java client takes the finalized levels
 * of the answer with the highest epoch it has seen, so the epoch must be 0 or more.
 */
export interface FeaturesAnswer {
  readonly levels: KafkaFeatureLevels;
  readonly epoch: bigint;
}

/**
 * The ApiVersions answer body. An unsupported ApiVersions version is answered in v0's layout
 * with UNSUPPORTED_VERSION (35) and the table, so the client can retry with one we speak.
 */
export function apiVersionsResponse(
  version: number,
  r: KafkaReader | undefined,
  table: ReadonlyMap<number, VersionRange> = SUPPORTED,
  features?: FeaturesAnswer,
): Buffer {
  if (r !== undefined && version >= 3) {
    r.compactNullableString(); // client software name
    r.compactNullableString(); // client software version
    r.taggedFields();
  }
  const w = new KafkaWriter(256);
  const unsupported = !supports(API.ApiVersions, version);
  w.int16(unsupported ? 35 : 0);
  const entries = [...table];
  if (!unsupported && version >= 3) {
    w.compactArray(entries, (x, [key, range]) =>
      x.int16(key).int16(range.min).int16(range.max).noTaggedFields(),
    );
    w.int32(0); // throttle_time_ms
    if (features === undefined) w.noTaggedFields();
    else writeFeatures(w, version, features);
    return w.finish();
  }
  w.array(entries, (x, [key, range]) => x.int16(key).int16(range.min).int16(range.max));
  if (!unsupported && version >= 1) w.int32(0);
  return w.finish();
}

/** Tags 0 (SupportedFeatures), 1 (FinalizedFeaturesEpoch) and 2 (FinalizedFeatures). */
function writeFeatures(w: KafkaWriter, version: number, features: FeaturesAnswer): void {
  const supported = KAFKA_FEATURES.filter((f) => version >= 4 || f.minVersion > 0);
  const finalized = KAFKA_FEATURES.map(
    (f) => [f.name, features.levels.get(f.name) ?? 0] as const,
  ).filter(([, level]) => level > 0);
  writeTaggedFields(w, [
    [
      0,
      (x) =>
        x.compactArray(supported, (y, f) =>
          y.compactNullableString(f.name).int16(f.minVersion).int16(f.maxVersion).noTaggedFields(),
        ),
    ],
    [1, (x) => x.int64(features.epoch < 0n ? 0n : features.epoch)],
    [
      2,
      (x) =>
        x.compactArray(finalized, (y, [name, level]) =>
          // MaxVersionLevel, then MinVersionLevel: both the level.
          y.compactNullableString(name).int16(level).int16(level).noTaggedFields(),
        ),
    ],
  ]);
}
