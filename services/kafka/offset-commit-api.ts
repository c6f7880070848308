// OffsetCommit v0-9 (v8+ flexible) through the group coordinator's OffsetCommit (the same path
// as gRPC): the classic group's leader-side check first (REBALANCE_IN_PROGRESS while the
// leader's assignment is awaited, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID),
// then the proposal, whose apply checks the generation again against the log. Generation -1 (v0 always) is a
// simple-group commit, as in Kafka. Retention (v2-4) and the v1 commit timestamp are ignored:
// offsets expire by the broker's retention. From v9 (KIP-848's first) a commit with a
// generation to a group that does not exist is GROUP_ID_NOT_FOUND, before v9 ILLEGAL_GENERATION
// (Kafka's compatibility rule); STALE_MEMBER_EPOCH is a consumer-protocol group's, which a
// Kafka client commits to with OffsetCommit only once ConsumerGroupHeartbeat is served.
import { answerAllowed } from "./kafka-access.js";
import { errorCodeOf, groupCoordinatorOf } from "./group-api-common.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { kafkaErrorCode } from "./kafka-errors.js";
import { fieldReader, fieldWriter } from "./versioned-fields.js";
import { TernError } from "../../libs/common/errors.js";
import type { GroupCoordinator } from "../group/index.js";

export async function offsetCommitResponse(
  deps: KafkaDeps,
  version: number,
  r: KafkaReader,
): Promise<Buffer> {
  const flexible = version >= OFFSET_COMMIT_FLEXIBLE_SINCE;
  const f = fieldReader(r, flexible);
  const groupId = f.string();
  const generationId = version >= 1 ? r.int32() : -1;
  const memberId = version >= 1 ? f.string() : "";
  const groupInstanceId = version >= 7 ? (f.nullableString() ?? "") : "";
  if (version >= 2 && version <= 4) r.int64(); // retention_time_ms
  const topics = f.array(() => {
    const name = f.string();
    const partitions = f.array((y) => {
      const partition = y.int32();
      const offset = y.int64();
      const leaderEpoch = version >= 6 ? y.int32() : -1;
      if (version === 1) y.int64(); // commit_timestamp
      const metadata = f.nullableString() ?? "";
      f.tags();
      return { partition, offset, leaderEpoch, metadata };
    });
    f.tags();
    return { name, partitions };
  });
  f.tags();
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
    const simple = generationId === -1 || (generationId === 0 && memberId === "");
    if (version >= 9 && !simple && !(await groupExists(groups, groupId)))
      throw new TernError("GROUP_ID_NOT_FOUND", `group ${JSON.stringify(groupId)} does not exist`);
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
  const o = fieldWriter(w, flexible);
  if (version >= 3) w.int32(0);
  let i = 0;
  o.array(topics, (_, t) => {
    o.string(t.name);
    o.array(t.partitions, (y, p) => {
      y.int32(p.partition).int16(codes[i++] ?? -1);
      o.tags();
    });
    o.tags();
  });
  o.tags();
  return w.finish();
}

/** The first flexible version (request header v2, response header v1). */
const OFFSET_COMMIT_FLEXIBLE_SINCE = 8;

/** Whether the group exists in any form: classic (in memory), in the log, or offsets only (Kafka's simple group). */
async function groupExists(groups: GroupCoordinator, groupId: string): Promise<boolean> {
  return (
    (await groups.classic.describe(groupId)) !== undefined ||
    groups.listGroups().some((g) => g.groupId === groupId)
  );
}
