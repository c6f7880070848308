// OffsetCommit v0-7 through the group coordinator's OffsetCommit (the same path as gRPC): the
// classic group's leader-side check first (REBALANCE_IN_PROGRESS while the leader's assignment
// is awaited, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID), then the proposal,
// whose apply checks the generation again against the log. Generation -1 (v0 always) is a
// simple-group commit, as in Kafka. Retention (v2-4) and the v1 commit timestamp are ignored:
// offsets expire by the broker's retention.
import { answerAllowed } from "./kafka-access.js";
import { errorCodeOf, groupCoordinatorOf } from "./group-api-common.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { kafkaErrorCode } from "./kafka-errors.js";

export async function offsetCommitResponse(
  deps: KafkaDeps,
  version: number,
  r: KafkaReader,
): Promise<Buffer> {
  const groupId = r.string();
  const generationId = version >= 1 ? r.int32() : -1;
  const memberId = version >= 1 ? r.string() : "";
  const groupInstanceId = version >= 7 ? (r.nullableString() ?? "") : "";
  if (version >= 2 && version <= 4) r.int64(); // retention_time_ms
  const topics = r.array((x) => ({
    name: x.string(),
    partitions: x.array((y) => {
      const partition = y.int32();
      const offset = y.int64();
      const leaderEpoch = version >= 6 ? y.int32() : -1;
      if (version === 1) y.int64(); // commit_timestamp
      return { partition, offset, leaderEpoch, metadata: y.nullableString() ?? "" };
    }),
  }));
  const flat = topics.flatMap((t) =>
    t.partitions.map((p) => ({
      topic: t.name,
      partition: p.partition,
      offset: p.offset.toString(),
      leaderEpoch: p.leaderEpoch,
      metadata: p.metadata,
    })),
  );
  let codes: number[];
  try {
    const groups = groupCoordinatorOf(deps, groupId);
    const refusal = await groups.classic.checkCommit(
      groupId,
      { generationId, memberId, groupInstanceId },
      false,
    );
    if (refusal) codes = flat.map(() => kafkaErrorCode(refusal.error));
    else {
      // ACLs: READ on each topic too.
      const access = deps.access;
      codes = await answerAllowed(
        flat,
        (p) => access === undefined || access.allowed("read", "topic", p.topic),
        async (asked) =>
          (
            await groups.offsetCommit({
              groupId,
              generationId,
              memberId,
              groupInstanceId,
              partitions: asked,
            })
          ).partitions.map((p) => kafkaErrorCode(p.errorCode)),
        () => kafkaErrorCode("TOPIC_AUTHORIZATION_FAILED"),
      );
    }
  } catch (e) {
    const code = errorCodeOf(deps, e, "OffsetCommit");
    codes = flat.map(() => code);
  }
  const w = new KafkaWriter(64 + flat.length * 8);
  if (version >= 3) w.int32(0);
  let i = 0;
  w.array(topics, (x, t) => {
    x.string(t.name);
    x.array(t.partitions, (y, p) => {
      y.int32(p.partition).int16(codes[i++] ?? -1);
    });
  });
  return w.finish();
}
