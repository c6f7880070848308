// Fetch v4-v11, sessionless (KIP-227 fetch sessions are not offered: session id 0 in every
// answer, so clients send full fetches). The request goes to the Broker service's Fetch handler
// in-process, which filters control records (and, under read_committed, aborted and open
// transactions) itself: the aborted-transactions list is therefore always empty. When that
// filtering leaves offsets after the last record returned, the last batch's lastOffsetDelta
// covers them (as a compacted batch's does), or, with no record at all, an empty batch
// does, so Kafka clients move past them instead of asking for them again. Batches go out
// compressed with the topic's compression.type when it names a codec (records are stored
// uncompressed; "producer" and "uncompressed" send them as stored).
import type { ReadBatch } from "../broker/partition-state-machine.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { kafkaErrorCode } from "./kafka-errors.js";
import { encodeBatch, encodeEmptyBatch, recordsSection } from "./record-batch.js";
import { compress, isCodec, type CompressionCodec } from "../../libs/records/compression.js";

const FETCH_SESSION_ID_NOT_FOUND = 70;

export async function fetchResponse(deps: KafkaDeps, version: number, r: KafkaReader): Promise<Buffer> {
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
    w.int16(FETCH_SESSION_ID_NOT_FOUND).int32(0).array([], () => undefined);
    return w.finish();
  }
  // ACLs: a topic the principal may not READ is answered TOPIC_AUTHORIZATION_FAILED, unread.
  const access = deps.access;
  const refusedTopics = new Set(access === undefined ? [] : topics.filter((t) => !access.allowed("read", "topic", t.topic)).map((t) => t.topic));
  const flat = topics.flatMap((t) => (refusedTopics.has(t.topic) ? [] : t.partitions.map((p) => ({ topic: t.topic, ...p }))));
  const res = flat.length === 0 && refusedTopics.size > 0 ? { partitions: [] } : await deps.fetch({
    maxWaitMs,
    minBytes,
    maxBytes,
    isolationLevel: isolation === 1 ? "READ_COMMITTED" : "READ_UNCOMMITTED",
    partitions: flat.map((p) => ({ topic: p.topic, partition: p.partition, fetchOffset: p.fetchOffset.toString(), partitionMaxBytes: p.maxBytes })),
  });
  const answers: any[] = res.partitions ?? [];
  const codecs = topicCodecs(deps, topics.map((t) => t.topic));
  const sections = await Promise.all(answers.map((a, k) => compressedSections(codecs.get(flat[k]?.topic ?? ""), a)));
  if (version >= 7) w.int16(0).int32(0);
  let i = 0;
  w.array(topics, (x, t) => {
    x.string(t.topic);
    x.array(t.partitions, (y, p) => {
      if (refusedTopics.has(t.topic)) {
        y.int32(p.partition).int16(kafkaErrorCode("TOPIC_AUTHORIZATION_FAILED")).int64(-1n).int64(-1n);
        if (version >= 5) y.int64(-1n);
        y.array([], () => undefined);
        if (version >= 11) y.int32(-1);
        writeRecords(y, undefined, p.fetchOffset, undefined);
        return;
      }
      const compressed = sections[i];
      const a = answers[i++];
      y.int32(p.partition).int16(kafkaErrorCode(a?.errorCode ?? "UNKNOWN_SERVER_ERROR"));
      y.int64(BigInt(a?.highWatermark ?? -1)).int64(BigInt(a?.lastStableOffset ?? -1));
      if (version >= 5) y.int64(BigInt(a?.logStartOffset ?? -1));
      y.array([], () => undefined); // aborted_transactions: filtered by the broker already
      if (version >= 11) y.int32(-1); // preferred read replica
      writeRecords(y, a?.errorCode === "NONE" ? a : undefined, p.fetchOffset, compressed);
    });
  });
  return w.finish();
}

function batchesOf(a: any): ReadBatch[] {
  return (a.batches ?? []).map((b: { batch: ReadBatch }) => b.batch);
}

/** Each asked topic's codec for Kafka consumers, when its compression.type names one (one metadata pass per request). */
function topicCodecs(deps: KafkaDeps, names: readonly string[]): Map<string, Exclude<CompressionCodec, "none">> {
  const wanted = new Set(names);
  const out = new Map<string, Exclude<CompressionCodec, "none">>();
  for (const t of deps.metadata()?.topics ?? []) {
    const type = wanted.has(t.name) ? t.config["compression.type"] : undefined;
    if (type !== undefined && isCodec(type) && type !== "none") out.set(t.name, type);
  }
  return out;
}

/** Each batch's records section compressed with the topic's codec (in the thread pool), or undefined to send them plain. */
async function compressedSections(codec: Exclude<CompressionCodec, "none"> | undefined, a: any): Promise<{ codec: CompressionCodec; section: Buffer }[] | undefined> {
  if (codec === undefined || a?.errorCode !== "NONE") return undefined;
  return Promise.all(batchesOf(a).map(async (b) => ({ codec, section: await compress(codec, recordsSection(b)) })));
}

function writeRecords(w: KafkaWriter, a: any, fetchOffset: bigint, compressed: { codec: CompressionCodec; section: Buffer }[] | undefined): void {
  const lengthAt = w.reserveInt32();
  const start = w.pos;
  if (a !== undefined) {
    const batches = batchesOf(a);
    const next = BigInt(a.nextFetchOffset ?? fetchOffset);
    for (let i = 0; i < batches.length; i++) {
      const b = batches[i]!;
      const last = i === batches.length - 1;
      const recordsEnd = b.baseOffset + BigInt(b.records.length);
      encodeBatch(w, { ...b, lastOffsetDelta: last && next > recordsEnd ? Number(next - 1n - b.baseOffset) : undefined }, compressed?.[i]);
    }
    if (batches.length === 0 && next > fetchOffset) encodeEmptyBatch(w, fetchOffset, Number(next - 1n - fetchOffset));
  }
  w.fillInt32(lengthAt, w.pos - start);
}
