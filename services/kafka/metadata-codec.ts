// Metadata's wire layouts, v1-v13 (Kafka's MetadataRequest/Response.json): v4 adds
// allow_auto_topic_creation, v5 offline replicas, v7 leader epochs, v8 authorized operations,
// v9 is the first flexible version (compact strings and arrays, tagged fields), v10 adds topic
// ids (request and answer; a request may name a topic by id only from v12, v10-v11 must send
// names), v11 drops the cluster's authorized operations, v12 lets an answer's topic name be
// null (a topic asked for by an unknown id), v13 adds a top-level error code (KIP-1102's
// REBOOTSTRAP_REQUIRED, which tern never answers: 0). The answer's model is what
// metadata-api.ts computes; this file only lays it out.
import { DecodeError } from "../../libs/common/decode-error.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";

/** The first flexible version (request header v2, response header v1). */
export const METADATA_FLEXIBLE_SINCE = 9;

/** Kafka's Uuid.ZERO_UUID: "no topic id" (docs/decisions.md, "Kafka topic ids"). */
export const ZERO_UUID: Buffer = Buffer.alloc(16);

export interface MetadataRequestTopic {
  /** null only from v12, for a topic asked for by id. */
  readonly name: string | null;
  /** 16 bytes; zero when asked for by name (and always before v10). */
  readonly topicId: Buffer;
}

export interface MetadataRequest {
  /** null asks for every topic (v0's empty array means the same). */
  readonly topics: readonly MetadataRequestTopic[] | null;
  readonly allowAutoTopicCreation: boolean;
}

export function decodeMetadataRequest(version: number, r: KafkaReader): MetadataRequest {
  const flexible = version >= METADATA_FLEXIBLE_SINCE;
  const topic = (x: KafkaReader): MetadataRequestTopic => {
    const topicId = version >= 10 ? Buffer.from(x.bytesOf(16)) : ZERO_UUID;
    const name = flexible ? x.compactNullableString() : x.string();
    if (name === null && version < 12)
      throw new DecodeError("kafka", `Metadata v${version} names a topic without a name`);
    if (flexible) x.taggedFields();
    return { name, topicId };
  };
  const listed = flexible ? r.compactNullableArray(topic) : r.nullableArray(topic);
  const topics = listed !== null && version === 0 && listed.length === 0 ? null : listed;
  const allowAutoTopicCreation = version >= 4 ? r.bool() : true;
  if (version >= 8 && version <= 10) r.bool(); // include_cluster_authorized_operations
  if (version >= 8) r.bool(); // include_topic_authorized_operations: answered as not asked
  if (flexible) r.taggedFields();
  return { topics, allowAutoTopicCreation };
}

export interface MetadataBroker {
  readonly nodeId: number;
  readonly host: string;
  readonly port: number;
  readonly rack: string | null;
}

export interface MetadataPartition {
  readonly errorCode: number;
  readonly partition: number;
  readonly leader: number;
  readonly leaderEpoch: number;
  readonly replicas: readonly number[];
  readonly isr: readonly number[];
  readonly offline: readonly number[];
}

export interface MetadataTopic {
  readonly errorCode: number;
  /** null only for a topic asked for by an unknown id (v12+). */
  readonly name: string | null;
  readonly topicId: Buffer;
  readonly internal: boolean;
  readonly partitions: readonly MetadataPartition[];
}

export interface MetadataResponse {
  readonly brokers: readonly MetadataBroker[];
  readonly clusterId: string | null;
  readonly controllerId: number;
  readonly topics: readonly MetadataTopic[];
}

/** Authorized operations when the client did not ask for them (Kafka's INT32_MIN). */
const OPERATIONS_NOT_ASKED = -2147483648;

export function encodeMetadataResponse(version: number, m: MetadataResponse): Buffer {
  const flexible = version >= METADATA_FLEXIBLE_SINCE;
  const w = new KafkaWriter(256 + m.topics.length * 64);
  const str = (x: KafkaWriter, s: string | null): void => {
    if (flexible) x.compactNullableString(s);
    else x.nullableString(s);
  };
  const arr = <T>(x: KafkaWriter, items: readonly T[], item: (y: KafkaWriter, t: T) => void) => {
    if (flexible) x.compactArray(items, item);
    else x.array(items, item);
  };
  const tags = (x: KafkaWriter): void => {
    if (flexible) x.noTaggedFields();
  };
  const int32s = (x: KafkaWriter, ids: readonly number[]): void =>
    arr(x, ids, (y, id) => y.int32(id));
  if (version >= 3) w.int32(0); // throttle_time_ms
  arr(w, m.brokers, (x, b) => {
    x.int32(b.nodeId);
    str(x, b.host);
    x.int32(b.port);
    if (version >= 1) str(x, b.rack);
    tags(x);
  });
  if (version >= 2) str(w, m.clusterId);
  if (version >= 1) w.int32(m.controllerId);
  arr(w, m.topics, (x, t) => {
    x.int16(t.errorCode);
    // Names are null only in answers to a request by id, which exists from v12.
    str(x, t.name ?? (version >= 12 ? null : ""));
    if (version >= 10) x.raw(t.topicId);
    if (version >= 1) x.bool(t.internal);
    arr(x, t.partitions, (y, p) => {
      y.int16(p.errorCode).int32(p.partition).int32(p.leader);
      if (version >= 7) y.int32(p.leaderEpoch);
      int32s(y, p.replicas);
      int32s(y, p.isr);
      if (version >= 5) int32s(y, p.offline);
      tags(y);
    });
    if (version >= 8) x.int32(OPERATIONS_NOT_ASKED); // topic_authorized_operations
    tags(x);
  });
  if (version >= 8 && version <= 10) w.int32(OPERATIONS_NOT_ASKED); // cluster's
  if (version >= 13) w.int16(0); // error_code: no REBOOTSTRAP_REQUIRED in tern
  tags(w);
  return w.finish();
}
