// OffsetFetch v1-7 through the group coordinator's OffsetFetch (read barrier, then the applied
// offsets): the given partitions, or (v2+, topics null) every partition the group committed.
// No offset is -1. A group-level error is the top-level error_code from v2, per partition in v1.
// v6 is the first flexible version; v7's require_stable answers a partition with a pending
// transactional commit UNSTABLE_OFFSET_COMMIT (88, retriable), as a read_committed Java
// consumer asks. v8's batched groups and v9's KIP-848 member checks are not served yet.
import { errorCodeOf, groupCoordinatorOf } from "./group-api-common.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { fieldReader, fieldWriter } from "./versioned-fields.js";
import { kafkaErrorCode } from "./kafka-errors.js";

/** The first flexible version. */
export const OFFSET_FETCH_FLEXIBLE_SINCE = 6;

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
  const flexible = version >= OFFSET_FETCH_FLEXIBLE_SINCE;
  const f = fieldReader(r, flexible);
  const groupId = f.string();
  const topic = (x: KafkaReader) => {
    const t = { name: f.string(), partitions: f.array(() => x.int32()) };
    f.tags();
    return t;
  };
  const requested = flexible ? r.compactNullableArray(topic) : r.nullableArray(topic);
  const requireStable = version >= 7 ? r.bool() : false;
  f.tags();
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
      const res = await groups.offsetFetch({ groupId, partitions: wanted, requireStable });
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
  const o = fieldWriter(w, flexible);
  if (version >= 3) w.int32(0);
  o.array([...byTopic], (_, [name, answers]) => {
    o.string(name);
    o.array(answers, (y, a) => {
      y.int32(a.partition).int64(a.offset);
      if (version >= 5) y.int32(a.leaderEpoch);
      o.string(a.metadata);
      y.int16(a.error);
      o.tags();
    });
    o.tags();
  });
  if (version >= 2) w.int16(top);
  o.tags();
  return w.finish();
}
