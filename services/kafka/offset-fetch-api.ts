// OffsetFetch v1-5 through the group coordinator's OffsetFetch (read barrier, then the applied
// offsets): the given partitions, or (v2+, topics null) every partition the group committed.
// No offset is -1. A group-level error is the top-level error_code from v2, per partition in v1.
import { errorCodeOf, groupCoordinatorOf } from "./group-api-common.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { kafkaErrorCode } from "./kafka-errors.js";

interface Answer {
  partition: number;
  offset: bigint;
  leaderEpoch: number;
  metadata: string;
  error: number;
}

export async function offsetFetchResponse(
  deps: KafkaDeps,
  version: number,
  r: KafkaReader,
): Promise<Buffer> {
  const groupId = r.string();
  const requested = r.nullableArray((x) => ({
    name: x.string(),
    partitions: x.array((y) => y.int32()),
  }));
  let top = 0;
  const byTopic = new Map<string, Answer[]>();
  for (const t of requested ?? []) byTopic.set(t.name, []);
  try {
    // ACLs: DESCRIBE on the group, and on each topic (others are refused, or left out of an all-topics answer).
    const groups = groupCoordinatorOf(deps, groupId, "describe");
    const access = deps.access;
    const describable = (topic: string): boolean =>
      access === undefined || access.allowed("describe", "topic", topic);
    for (const t of requested ?? []) {
      if (!describable(t.name))
        byTopic.set(
          t.name,
          t.partitions.map((partition) => ({
            partition,
            offset: -1n,
            leaderEpoch: -1,
            metadata: "",
            error: kafkaErrorCode("TOPIC_AUTHORIZATION_FAILED"),
          })),
        );
    }
    const wanted = (requested ?? [])
      .filter((t) => describable(t.name))
      .flatMap((t) => t.partitions.map((partition) => ({ topic: t.name, partition })));
    if (requested === null || wanted.length > 0) {
      const res = await groups.offsetFetch({ groupId, partitions: wanted, requireStable: false });
      for (const p of res.partitions) {
        if (!describable(p.topic)) continue;
        const list = byTopic.get(p.topic) ?? [];
        list.push({
          partition: p.partition,
          offset: BigInt(p.offset),
          leaderEpoch: p.leaderEpoch,
          metadata: p.metadata,
          error: kafkaErrorCode(p.errorCode),
        });
        byTopic.set(p.topic, list);
      }
    }
  } catch (e) {
    top = errorCodeOf(deps, e, "OffsetFetch");
    // v1 has no top-level error: every requested partition carries it.
    for (const t of requested ?? [])
      byTopic.set(
        t.name,
        t.partitions.map((partition) => ({
          partition,
          offset: -1n,
          leaderEpoch: -1,
          metadata: "",
          error: top,
        })),
      );
  }
  const w = new KafkaWriter(256);
  if (version >= 3) w.int32(0);
  w.array([...byTopic], (x, [topic, answers]) => {
    x.string(topic);
    x.array(answers, (y, a) => {
      y.int32(a.partition).int64(a.offset);
      if (version >= 5) y.int32(a.leaderEpoch);
      y.nullableString(a.metadata).int16(a.error);
    });
  });
  if (version >= 2) w.int16(top);
  return w.finish();
}
