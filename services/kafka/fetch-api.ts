// Fetch v4-v12, with fetch sessions from v7 (KIP-227, fetch-sessions.ts: a full fetch with
// epoch 0 gets a session when the listener has room, and the incremental fetches that follow
// are answered only with the partitions that have something new). v12 is flexible (compact
// records, tagged fields). A partition's current_leader_epoch (v9+) is checked before it is
// read (leader-epochs.ts), and from v12 a NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH
// partition names its current leader. No diverging epoch is ever answered: tern's batches carry
// no leader epoch, so a consumer has no last_fetched_epoch to send. v13+ names topics by id,
// which tern's topics do not have yet: a Kafka client that sees the zero id stays at v12
// (docs/kafka-protocol.md). The request goes to the partition service's reads
// (services/broker/partition-service/read.ts), which filter control records (and, under
// read_committed, aborted and open transactions) itself: the aborted-transactions list is
// therefore always empty. When that filtering leaves offsets after the last record returned,
// the last batch's lastOffsetDelta covers them (as a compacted batch's does), or, when that
// batch goes as stored or there is no record at all, an empty batch does, so Kafka clients move
// past them instead of asking for them again. A Kafka producer's batch stored as sent goes out
// as stored (baseOffset and partition leader epoch patched, outside the CRC) when the topic's
// compression.type is `producer` or names the batch's own codec; other batches are encoded per
// fetch, compressed with the topic's codec when it names one (docs/kafka-protocol.md, "What is
// mapped how").
import type { ReadBatch } from "../broker/partition-state-machine.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { KafkaReader, KafkaWriter, type KafkaBody } from "../../libs/records/kafka-codec.js";
import { kafkaErrorCode } from "./kafka-errors.js";
import { encodeBatch, encodeEmptyBatch, recordsSection } from "./record-batch.js";
import { compress, isCodec, type CompressionCodec } from "../../libs/records/compression.js";
import { patchBatchOffsets } from "../../libs/records/batch-header.js";
import { storedBatchRecords } from "../broker/stored-kafka-batch.js";
import type { PartitionRead } from "../broker/partition-service/read.js";
import { fieldReader, fieldWriter, writeTaggedFields } from "./versioned-fields.js";
import { carriesCurrentLeader, PartitionLeaders } from "./leader-epochs.js";
import {
  FetchSessionCache,
  newSessionOwner,
  type FetchPartition,
  type SessionOwner,
} from "./fetch-sessions.js";

/** The first flexible version (request header v2, response header v1, compact records). */
const FETCH_FLEXIBLE_SINCE = 12;

/** The fetch sessions of the connection a request came on (fetch-sessions.ts). */
export interface ConnectionFetchSessions {
  readonly cache: FetchSessionCache;
  readonly owner: SessionOwner;
}

/** Where no session cache is given: every fetch is sessionless. */
const NO_SESSIONS: ConnectionFetchSessions = {
  cache: new FetchSessionCache(0, () => 0),
  owner: newSessionOwner(),
};

export async function fetchResponse(
  deps: KafkaDeps,
  version: number,
  r: KafkaReader,
  sessions: ConnectionFetchSessions = NO_SESSIONS,
): Promise<KafkaBody> {
  const flexible = version >= FETCH_FLEXIBLE_SINCE;
  const f = fieldReader(r, flexible);
  r.int32(); // replica_id: consumers only (-1)
  const maxWaitMs = r.int32();
  const minBytes = r.int32();
  const maxBytes = r.int32();
  const isolation = r.int8();
  // Before v7 no sessions: a sessionless full fetch.
  const sessionId = version >= 7 ? r.int32() : 0;
  const epoch = version >= 7 ? r.int32() : -1;
  const asked: FetchPartition[] = [];
  f.array(() => {
    const topic = f.string();
    f.array((y) => {
      const partition = y.int32();
      const currentLeaderEpoch = version >= 9 ? y.int32() : -1;
      const fetchOffset = y.int64();
      // last_fetched_epoch (v12+): tern's batches carry no epoch, so none was fetched from here.
      if (version >= 12) y.int32();
      if (version >= 5) y.int64(); // log start offset: a follower's, not ours
      const partitionMaxBytes = y.int32();
      f.tags();
      asked.push({
        topic,
        partition,
        currentLeaderEpoch,
        fetchOffset,
        maxBytes: partitionMaxBytes,
      });
    });
    f.tags();
  });
  const forgotten: Array<{ topic: string; partition: number }> = [];
  if (version >= 7)
    f.array(() => {
      const topic = f.string();
      for (const partition of f.array((y) => y.int32())) forgotten.push({ topic, partition });
      f.tags();
    });
  if (version >= 11) f.string(); // rack id
  f.tags();
  const context = sessions.cache.begin(sessions.owner, {
    sessionId,
    epoch,
    partitions: asked,
    forgotten,
  });
  const w = new KafkaWriter(64 * 1024);
  const o = fieldWriter(w, flexible);
  w.int32(0); // throttle_time_ms
  if (context.kind === "error") {
    // An incremental fetch of an unknown session, or at the wrong epoch: the client starts over.
    w.int16(context.error).int32(0);
    o.array([], () => undefined);
    o.tags();
    return w.finish();
  }
  const partitions = context.partitions;
  // ACLs: a topic the principal may not READ is answered TOPIC_AUTHORIZATION_FAILED, unread.
  // Then each partition's current leader epoch (v9+), against this node's view: in fetch
  // order, the code a partition is answered without a read, 0 for those read.
  const access = deps.access;
  const readable = new Map<string, boolean>();
  const mayRead = (topic: string): boolean => {
    let ok = readable.get(topic);
    if (ok === undefined)
      readable.set(topic, (ok = access === undefined || access.allowed("read", "topic", topic)));
    return ok;
  };
  const leaders = new PartitionLeaders(deps);
  const unread = partitions.map((p) =>
    mayRead(p.topic)
      ? leaders.epochError(p.topic, p.partition, p.currentLeaderEpoch)
      : kafkaErrorCode("TOPIC_AUTHORIZATION_FAILED"),
  );
  const flat = partitions.filter((_, k) => unread[k] === 0);
  const answers: FetchAnswer[] =
    flat.length === 0 && unread.length > 0
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
    partitions.map((p) => p.topic),
  );
  const outgoing = await Promise.all(
    answers.map((a, k) => outgoingBatches(types.get(flat[k]?.topic ?? "") ?? "producer", a)),
  );
  // Each partition's answer in fetch order; then the ones this answer carries: all of a full
  // fetch's, those with something new of an incremental one (the session records each).
  let next = 0;
  const outcomes = partitions.map((p, k): Answered => {
    if (unread[k] !== 0) return { p, code: unread[k]!, a: undefined, out: undefined };
    const out = outgoing[next];
    const a = answers[next++];
    return { p, code: kafkaErrorCode(a?.error ?? "UNKNOWN_SERVER_ERROR"), a, out };
  });
  const session = context.session;
  const carried = outcomes.filter((x) => {
    if (session === undefined) return true;
    const read = x.a?.read;
    const must = session.answered(x.p, {
      error: x.code,
      highWatermark: read?.highWatermark ?? -1n,
      lastStableOffset: read?.lastStableOffset ?? -1n,
      logStartOffset: read?.logStartOffset ?? -1n,
      hasRecords:
        x.code === 0 &&
        ((x.out?.length ?? 0) > 0 || (read?.nextFetchOffset ?? x.p.fetchOffset) > x.p.fetchOffset),
    });
    return context.kind === "full" || must;
  });
  if (version >= 7) w.int16(0).int32(session?.id ?? 0);
  // Consecutive partitions of a topic share its entry (a session's order may split a topic, as
  // in Kafka's answers).
  const byTopic: Answered[][] = [];
  for (const x of carried) {
    const last = byTopic.at(-1);
    if (last !== undefined && last[0]!.p.topic === x.p.topic) last.push(x);
    else byTopic.push([x]);
  }
  o.array(byTopic, (_, group) => {
    o.string(group[0]!.p.topic);
    o.array(group, (y, { p, code, a, out }) => {
      y.int32(p.partition).int16(code);
      y.int64(a?.read?.highWatermark ?? -1n).int64(a?.read?.lastStableOffset ?? -1n);
      if (version >= 5) y.int64(a?.read?.logStartOffset ?? -1n);
      o.array([], () => undefined); // aborted_transactions: filtered by the broker already
      if (version >= 11) y.int32(-1); // preferred read replica
      writeRecords(y, a?.error === "NONE" ? a : undefined, p.fetchOffset, out, flexible);
      // v12+: a partition led elsewhere, or at a newer epoch, names its current leader (KIP-951).
      const leader =
        flexible && carriesCurrentLeader(code) ? leaders.of(p.topic, p.partition) : undefined;
      if (leader !== undefined && leader.leaderId >= 0)
        writeTaggedFields(y, [
          [1, (x) => x.int32(leader.leaderId).int32(leader.leaderEpoch).noTaggedFields()],
        ]);
      else o.tags();
    });
    o.tags();
  });
  o.tags();
  return w.finishBody();
}

/** One partition of a fetch: what was asked, its error code, its read and its batches on the way out. */
interface Answered {
  readonly p: FetchPartition;
  readonly code: number;
  readonly a: FetchAnswer | undefined;
  readonly out: Outgoing[] | undefined;
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

/** A stored batch at least this long goes out by reference (a piece of the answer), not copied. */
const ATTACH_BYTES_MIN = 4 * 1024;
/** A stored batch's fields outside its CRC that an answer patches: base offset, length, leader epoch. */
const PATCHED_HEAD_BYTES = 16;

/**
 * A partition's records: int32-length-prefixed, or (flexible) compact. A stored batch keeps its
 * bytes: its head (base offset, length, leader epoch: outside the CRC) is copied into the answer
 * and patched there, and the rest of a large one goes out by reference (KafkaWriter.attach), so
 * a fetch of megabytes copies nothing on its way to the socket. Batches to encode are encoded
 * first, so the section's length is known before it.
 */
function writeRecords(
  w: KafkaWriter,
  a: FetchAnswer | undefined,
  fetchOffset: bigint,
  outgoing: Outgoing[] | undefined,
  compact: boolean,
): void {
  // Encoded bytes, or a stored batch with the base offset to patch into its head on the way out.
  const parts: Array<Uint8Array | { stored: Uint8Array; baseOffset: bigint }> = [];
  const encoded = (encode: (x: KafkaWriter) => void): void => {
    const x = new KafkaWriter(256);
    encode(x);
    parts.push(x.finish());
  };
  if (a !== undefined && outgoing !== undefined) {
    const next = a.read?.nextFetchOffset ?? fetchOffset;
    for (let i = 0; i < outgoing.length; i++) {
      const o = outgoing[i]!;
      const last = i === outgoing.length - 1;
      if (o.kind === "as-sent") {
        parts.push({ stored: o.batch, baseOffset: o.baseOffset });
        const recordsEnd = o.baseOffset + BigInt(o.offsetCount);
        // Its lastOffsetDelta is under the CRC: filtered offsets after it get an empty batch.
        if (last && next > recordsEnd)
          encoded((x) => encodeEmptyBatch(x, recordsEnd, Number(next - 1n - recordsEnd)));
        continue;
      }
      const b = o.batch;
      const recordsEnd = b.baseOffset + BigInt(b.records.length);
      encoded((x) =>
        encodeBatch(
          x,
          {
            ...b,
            lastOffsetDelta:
              last && next > recordsEnd ? Number(next - 1n - b.baseOffset) : undefined,
          },
          o.compressed,
        ),
      );
    }
    if (outgoing.length === 0 && next > fetchOffset)
      encoded((x) => encodeEmptyBatch(x, fetchOffset, Number(next - 1n - fetchOffset)));
  }
  let bytes = 0;
  for (const part of parts) bytes += "stored" in part ? part.stored.byteLength : part.byteLength;
  if (compact) w.uvarint(bytes + 1);
  else w.int32(bytes);
  for (const part of parts) {
    if (!("stored" in part)) {
      w.raw(part);
      continue;
    }
    // The head is patched in the answer's own bytes; a large batch's rest goes by reference.
    const { stored, baseOffset } = part;
    const large = stored.byteLength >= ATTACH_BYTES_MIN;
    const at = w.pos;
    w.raw(large ? stored.subarray(0, PATCHED_HEAD_BYTES) : stored);
    patchBatchOffsets(w.view(at), baseOffset, -1); // leader epoch: not tracked, as in encoded batches
    if (large) w.attach(stored.subarray(PATCHED_HEAD_BYTES));
  }
}
