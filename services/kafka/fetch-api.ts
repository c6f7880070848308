// Fetch v4-v11, sessionless (KIP-227 fetch sessions are not offered: session id 0 in every
// answer, so clients send full fetches). The request goes to the partition service's reads
// (services/broker/partition-service/read.ts), which filter control records (and, under read_committed, aborted and open
// transactions) itself: the aborted-transactions list is therefore always empty. When that
// filtering leaves offsets after the last record returned, the last batch's lastOffsetDelta
// covers them (as a compacted batch's does), or, when that batch goes as stored or there is no
// record at all, an empty batch does, so Kafka clients move past them instead of asking for
// them again. A Kafka producer's batch stored as sent goes out as stored (baseOffset and
// partition leader epoch patched, outside the CRC) when the topic's compression.type is
// `producer` or names the batch's own codec; other batches are encoded per fetch, compressed
// with the topic's codec when it names one (docs/kafka-protocol.md, "What is mapped how").
import type { ReadBatch } from "../broker/partition-state-machine.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { kafkaErrorCode } from "./kafka-errors.js";
import { encodeBatch, encodeEmptyBatch, recordsSection } from "./record-batch.js";
import { compress, isCodec, type CompressionCodec } from "../../libs/records/compression.js";
import { patchBatchOffsets } from "../../libs/records/batch-header.js";
import { storedBatchRecords } from "../broker/stored-kafka-batch.js";
import type { PartitionRead } from "../broker/partition-service/read.js";

const FETCH_SESSION_ID_NOT_FOUND = 70;

export async function fetchResponse(
  deps: KafkaDeps,
  version: number,
  r: KafkaReader,
): Promise<Buffer> {
  r.int32(); // replica_id: consumers only (-1)
  const maxWaitMs = r.int32();
  const minBytes = r.int32();
  const maxBytes = r.int32();
  const isolation = r.int8();
  let sessionId = 0;
  if (version >= 7) {
    sessionId = r.int32();
    r.int32(); // session epoch
  }
  const topics = r.array((x) => ({
    topic: x.string(),
    partitions: x.array((y) => {
      const partition = y.int32();
      if (version >= 9) y.int32(); // current leader epoch
      const fetchOffset = y.int64();
      if (version >= 5) y.int64(); // log start offset: a follower's, not ours
      return { partition, fetchOffset, maxBytes: y.int32() };
    }),
  }));
  if (version >= 7) r.array((x) => ({ topic: x.string(), partitions: x.array((y) => y.int32()) })); // forgotten topics
  if (version >= 11) r.string(); // rack id
  const w = new KafkaWriter(64 * 1024);
  w.int32(0); // throttle_time_ms
  if (version >= 7 && sessionId !== 0) {
    // An incremental fetch of a session we never created.
    w.int16(FETCH_SESSION_ID_NOT_FOUND)
      .int32(0)
      .array([], () => undefined);
    return w.finish();
  }
  // ACLs: a topic the principal may not READ is answered TOPIC_AUTHORIZATION_FAILED, unread.
  const access = deps.access;
  const refusedTopics = new Set(
    access === undefined
      ? []
      : topics.filter((t) => !access.allowed("read", "topic", t.topic)).map((t) => t.topic),
  );
  const flat = topics.flatMap((t) =>
    refusedTopics.has(t.topic) ? [] : t.partitions.map((p) => ({ topic: t.topic, ...p })),
  );
  const answers: FetchAnswer[] =
    flat.length === 0 && refusedTopics.size > 0
      ? []
      : await deps.fetch({
          maxWaitMs,
          minBytes,
          maxBytes,
          isolation: isolation === 1 ? "READ_COMMITTED" : "READ_UNCOMMITTED",
          // Batches as stored, whole; older ones as records, encoded here. No markers.
          options: { storedBatches: true, controlBatches: false },
          partitions: flat.map((p) => ({
            topic: p.topic,
            partition: p.partition,
            fetchOffset: p.fetchOffset,
            partitionMaxBytes: p.maxBytes,
          })),
        });
  const types = topicCompression(
    deps,
    topics.map((t) => t.topic),
  );
  const outgoing = await Promise.all(
    answers.map((a, k) => outgoingBatches(types.get(flat[k]?.topic ?? "") ?? "producer", a)),
  );
  // Sized for the stored batches at once (copied in whole): no doubling on the way to megabytes.
  let storedBytes = 0;
  for (const out of outgoing)
    for (const o of out ?? []) if (o.kind === "as-sent") storedBytes += o.batch.byteLength;
  w.ensure(storedBytes + flat.length * PARTITION_ANSWER_BYTES);
  if (version >= 7) w.int16(0).int32(0);
  let i = 0;
  w.array(topics, (x, t) => {
    x.string(t.topic);
    x.array(t.partitions, (y, p) => {
      if (refusedTopics.has(t.topic)) {
        y.int32(p.partition)
          .int16(kafkaErrorCode("TOPIC_AUTHORIZATION_FAILED"))
          .int64(-1n)
          .int64(-1n);
        if (version >= 5) y.int64(-1n);
        y.array([], () => undefined);
        if (version >= 11) y.int32(-1);
        writeRecords(y, undefined, p.fetchOffset, undefined);
        return;
      }
      const out = outgoing[i];
      const a = answers[i++];
      const read = a?.read;
      y.int32(p.partition).int16(kafkaErrorCode(a?.error ?? "UNKNOWN_SERVER_ERROR"));
      y.int64(read?.highWatermark ?? -1n).int64(read?.lastStableOffset ?? -1n);
      if (version >= 5) y.int64(read?.logStartOffset ?? -1n);
      y.array([], () => undefined); // aborted_transactions: filtered by the broker already
      if (version >= 11) y.int32(-1); // preferred read replica
      writeRecords(y, a?.error === "NONE" ? a : undefined, p.fetchOffset, out);
    });
  });
  return w.finish();
}

function batchesOf(a: FetchAnswer): readonly ReadBatch[] {
  return a.read?.batches ?? [];
}

/** One partition's read. */
type FetchAnswer = PartitionRead;

/** A topic's compression.type: `producer` (the default) or the codec Kafka consumers get ("none": uncompressed). */
type TopicCompression = "producer" | CompressionCodec;

/** Each asked topic's compression.type (one metadata pass per request); absent means producer. */
function topicCompression(
  deps: KafkaDeps,
  names: readonly string[],
): Map<string, TopicCompression> {
  const wanted = new Set(names);
  const out = new Map<string, TopicCompression>();
  for (const t of deps.metadata()?.topics ?? []) {
    const type = wanted.has(t.name) ? t.config["compression.type"] : undefined;
    if (type === "uncompressed") out.set(t.name, "none");
    else if (type !== undefined && isCodec(type)) out.set(t.name, type);
  }
  return out;
}

/** What a partition's answer takes besides its batches (topic name aside): offsets, codes, lengths. */
const PARTITION_ANSWER_BYTES = 128;

/** One fetched batch on its way out: its stored bytes, or records to encode (compressed when given). */
type Outgoing =
  | {
      readonly kind: "as-sent";
      readonly batch: Uint8Array;
      readonly baseOffset: bigint;
      /** The offsets the batch covers (lastOffsetDelta + 1). */
      readonly offsetCount: number;
    }
  | {
      readonly kind: "encode";
      readonly batch: ReadBatch;
      readonly compressed?: { codec: CompressionCodec; section: Buffer };
    };

/**
 * How each batch of an answer goes out. Stored batches keep their bytes unless the topic asks
 * for another codec; then (and for `uncompressed`) they are inflated and encoded again, like
 * every batch that came in over gRPC. Inflating and compressing run in the thread pool.
 */
async function outgoingBatches(
  type: TopicCompression,
  a: FetchAnswer | undefined,
): Promise<Outgoing[] | undefined> {
  if (a?.error !== "NONE") return undefined;
  return Promise.all(
    batchesOf(a).map(async (b): Promise<Outgoing> => {
      const stored = b.asSent;
      // A cleaned batch goes as stored in any case: its records' offsets have gaps, which a
      // batch encoded again (offsets 0..) would not keep (docs/storage.md, "Compaction").
      if (
        stored !== undefined &&
        (type === "producer" || type === stored.codec || stored.cleaned)
      ) {
        return {
          kind: "as-sent",
          batch: stored.batch,
          baseOffset: b.baseOffset,
          offsetCount: stored.offsetCount,
        };
      }
      const batch =
        stored === undefined
          ? b
          : { ...b, records: await storedBatchRecords(stored), asSent: undefined };
      if (type === "producer" || type === "none") return { kind: "encode", batch };
      return {
        kind: "encode",
        batch,
        compressed: { codec: type, section: await compress(type, recordsSection(batch)) },
      };
    }),
  );
}

function writeRecords(
  w: KafkaWriter,
  a: FetchAnswer | undefined,
  fetchOffset: bigint,
  outgoing: Outgoing[] | undefined,
): void {
  const lengthAt = w.reserveInt32();
  const start = w.pos;
  if (a !== undefined && outgoing !== undefined) {
    const next = a.read?.nextFetchOffset ?? fetchOffset;
    for (let i = 0; i < outgoing.length; i++) {
      const o = outgoing[i]!;
      const last = i === outgoing.length - 1;
      if (o.kind === "as-sent") {
        const at = w.pos;
        w.raw(o.batch);
        patchBatchOffsets(w.view(at), o.baseOffset, -1); // leader epoch: not tracked, as in encoded batches
        const recordsEnd = o.baseOffset + BigInt(o.offsetCount);
        // Its lastOffsetDelta is under the CRC: filtered offsets after it get an empty batch.
        if (last && next > recordsEnd)
          encodeEmptyBatch(w, recordsEnd, Number(next - 1n - recordsEnd));
        continue;
      }
      const b = o.batch;
      const recordsEnd = b.baseOffset + BigInt(b.records.length);
      encodeBatch(
        w,
        {
          ...b,
          lastOffsetDelta: last && next > recordsEnd ? Number(next - 1n - b.baseOffset) : undefined,
        },
        o.compressed,
      );
    }
    if (outgoing.length === 0 && next > fetchOffset)
      encodeEmptyBatch(w, fetchOffset, Number(next - 1n - fetchOffset));
  }
  w.fillInt32(lengthAt, w.pos - start);
}
