// ListOffsets v1-v9 through the partition service's offsets by time
// (services/broker/partition-service/offsets.ts): earliest (-2), latest (-1), by timestamp, and
// from v7 max timestamp (-3, KIP-734), v8 earliest local (-4, KIP-405: the log start, every
// offset is local), v9 latest tiered (-5, KIP-1005: -1, nothing is tiered). v6+ is flexible.
// A partition's current_leader_epoch (v4+) is checked first (leader-epochs.ts). Answers carry
// leader epoch -1: tern's batches have none, so a consumer positioned by them validates nothing
// (KIP-320) and sends no last fetched epoch.
import { answerAllowed } from "./kafka-access.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { KafkaWriter, type KafkaReader } from "../../libs/records/kafka-codec.js";
import { kafkaErrorCode } from "./kafka-errors.js";
import { fieldReader, fieldWriter } from "./versioned-fields.js";
import { PartitionLeaders } from "./leader-epochs.js";

/** One partition's answer: its error code, and the offset found (with its record's timestamp). */
interface Answer {
  readonly code: number;
  readonly timestampMs: number;
  readonly offset: bigint;
}

const refusedWith = (code: number): Answer => ({ code, timestampMs: -1, offset: -1n });

export async function listOffsetsResponse(
  deps: KafkaDeps,
  version: number,
  reader: KafkaReader,
): Promise<Buffer> {
  const flexible = version >= 6; // the first flexible version
  const r = fieldReader(reader, flexible);
  reader.int32(); // replica_id
  const isolation = version >= 2 ? reader.int8() : 0;
  const topics = r.array(() => {
    const name = r.string();
    const partitions = r.array((y) => {
      const partition = y.int32();
      const currentLeaderEpoch = version >= 4 ? y.int32() : -1;
      const timestamp = y.int64();
      r.tags();
      return { partition, currentLeaderEpoch, timestamp };
    });
    r.tags();
    return { name, partitions };
  });
  r.tags();
  const leaders = new PartitionLeaders(deps);
  const flat = topics.flatMap((t) =>
    t.partitions.map((p) => ({
      topic: t.name,
      partition: p.partition,
      timestampMs: p.timestamp,
      epochError: leaders.epochError(t.name, p.partition, p.currentLeaderEpoch),
    })),
  );
  // ACLs: DESCRIBE on the topic; then the leader epoch.
  const access = deps.access;
  const allowed = (p: (typeof flat)[number]): boolean =>
    access === undefined || access.allowed("describe", "topic", p.topic);
  const answers = await answerAllowed<(typeof flat)[number], Answer>(
    flat,
    (p) => allowed(p) && p.epochError === 0,
    async (asked) =>
      (
        await deps.listOffsets({
          isolation: isolation === 1 ? "READ_COMMITTED" : "READ_UNCOMMITTED",
          partitions: asked,
        })
      ).map((a) => {
        const code = kafkaErrorCode(a.error);
        return code === 0
          ? { code, timestampMs: a.timestampMs, offset: a.offset }
          : refusedWith(code);
      }),
    (p) => refusedWith(allowed(p) ? p.epochError : kafkaErrorCode("TOPIC_AUTHORIZATION_FAILED")),
  );
  const w = new KafkaWriter(256);
  const f = fieldWriter(w, flexible);
  if (version >= 2) w.int32(0);
  let i = 0;
  f.array(topics, (_, t) => {
    f.string(t.name);
    f.array(t.partitions, (y, p) => {
      const a = answers[i++] ?? refusedWith(-1);
      y.int32(p.partition).int16(a.code).int64(BigInt(a.timestampMs)).int64(a.offset);
      if (version >= 4) y.int32(-1); // leader epoch: batches carry none
      f.tags();
    });
    f.tags();
  });
  f.tags();
  return w.finish();
}
