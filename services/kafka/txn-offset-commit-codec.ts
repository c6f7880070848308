// TxnOffsetCommit's wire layouts, v0-v5 (Kafka's TxnOffsetCommitRequest/Response.json; v4 and
// v5 are v3's, v6 names topics by id and is not served): v2 adds
// each partition's committed leader epoch; v3 is the first flexible version (compact strings
// and arrays, tagged fields) and adds KIP-447's group generation, member id and group instance
// id, which a Kafka 2.5+ client's sendOffsetsToTransaction(offsets, groupMetadata) sends so the
// group coordinator can fence a zombie. Before v3 the commit carries no member: generation -1
// and empty ids, checked as a simple group's commit.
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";

export interface TxnOffsetCommitPartition {
  readonly partition: number;
  readonly offset: bigint;
  readonly leaderEpoch: number;
  readonly metadata: string;
}

export interface TxnOffsetCommitTopic {
  readonly name: string;
  readonly partitions: readonly TxnOffsetCommitPartition[];
}

export interface TxnOffsetCommitRequest {
  readonly transactionalId: string;
  readonly groupId: string;
  readonly producerId: bigint;
  readonly producerEpoch: number;
  /** -1 before v3 (no generation: a simple group's commit). */
  readonly generationId: number;
  /** "" before v3. */
  readonly memberId: string;
  /** null before v3 and when the member is not static. */
  readonly groupInstanceId: string | null;
  readonly topics: readonly TxnOffsetCommitTopic[];
}

/** The first flexible version (request header v2, response header v1). */
export const TXN_OFFSET_COMMIT_FLEXIBLE_SINCE = 3;

export function decodeTxnOffsetCommitRequest(
  version: number,
  r: KafkaReader,
): TxnOffsetCommitRequest {
  const flexible = version >= TXN_OFFSET_COMMIT_FLEXIBLE_SINCE;
  const str = (x: KafkaReader): string => (flexible ? x.compactString() : x.string());
  const nullableStr = (x: KafkaReader): string | null =>
    flexible ? x.compactNullableString() : x.nullableString();
  const arr = <T>(x: KafkaReader, item: (y: KafkaReader) => T): T[] =>
    flexible ? x.compactArray(item) : x.array(item);
  const transactionalId = str(r);
  const groupId = str(r);
  const producerId = r.int64();
  const producerEpoch = r.int16();
  const generationId = flexible ? r.int32() : -1;
  const memberId = flexible ? r.compactString() : "";
  const groupInstanceId = flexible ? r.compactNullableString() : null;
  const topics = arr(r, (x) => {
    const name = str(x);
    const partitions = arr(x, (y) => {
      const partition = y.int32();
      const offset = y.int64();
      const leaderEpoch = version >= 2 ? y.int32() : -1;
      const metadata = nullableStr(y) ?? "";
      if (flexible) y.taggedFields();
      return { partition, offset, leaderEpoch, metadata };
    });
    if (flexible) x.taggedFields();
    return { name, partitions };
  });
  if (flexible) r.taggedFields();
  return {
    transactionalId,
    groupId,
    producerId,
    producerEpoch,
    generationId,
    memberId,
    groupInstanceId,
    topics,
  };
}

/** The answer: every partition of the request, in request order, with its error code. */
export function encodeTxnOffsetCommitResponse(
  version: number,
  topics: readonly TxnOffsetCommitTopic[],
  errorCodeOf: (topic: string, partition: number) => number,
): Buffer {
  const flexible = version >= TXN_OFFSET_COMMIT_FLEXIBLE_SINCE;
  const count = topics.reduce((n, t) => n + t.partitions.length, 0);
  const w = new KafkaWriter(64 + count * 8);
  w.int32(0); // throttle_time_ms
  const partition = (y: KafkaWriter, name: string, p: TxnOffsetCommitPartition): void => {
    y.int32(p.partition).int16(errorCodeOf(name, p.partition));
    if (flexible) y.noTaggedFields();
  };
  if (flexible) {
    w.compactArray(topics, (x, t) => {
      x.compactNullableString(t.name);
      x.compactArray(t.partitions, (y, p) => partition(y, t.name, p));
      x.noTaggedFields();
    });
    w.noTaggedFields();
  } else {
    w.array(topics, (x, t) => {
      x.string(t.name);
      x.array(t.partitions, (y, p) => partition(y, t.name, p));
    });
  }
  return w.finish();
}
