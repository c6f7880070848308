// OffsetDelete v0 (Kafka has no flexible version of it): the group service's offset-delete, which
// removes a group's committed offsets of topics no member subscribes to (a subscribed one is
// GROUP_SUBSCRIBED_TO_TOPIC for its partitions). ACLs as Kafka's: DELETE on the group (else the
// whole request is GROUP_AUTHORIZATION_FAILED), READ on each topic (else that topic's partitions
// are TOPIC_AUTHORIZATION_FAILED and nothing of them is deleted).
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { errorCodeOf, groupCoordinatorOf } from "./group-api-common.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { kafkaErrorCode } from "./kafka-errors.js";

interface TopicAnswer {
  readonly name: string;
  readonly partitions: Array<{ partition: number; error: number }>;
}

export async function offsetDeleteResponse(
  deps: KafkaDeps,
  _version: number,
  r: KafkaReader,
): Promise<Buffer> {
  const groupId = r.string();
  const asked = r.array((x) => ({ name: x.string(), partitions: x.array((y) => y.int32()) }));
  let error = 0;
  let topics: TopicAnswer[] = [];
  try {
    const groups = groupCoordinatorOf(deps, groupId, "delete");
    const access = deps.access;
    const readable = (t: string): boolean =>
      access === undefined || access.allowed("read", "topic", t);
    const partitions = asked
      .filter((t) => readable(t.name))
      .flatMap((t) => t.partitions.map((partition) => ({ topic: t.name, partition })));
    const results =
      partitions.length === 0
        ? []
        : (await groups.offsetDelete({ groupId, partitions })).partitions;
    const outcome = new Map(results.map((p) => [`${p.topic}\u0000${p.partition}`, p.errorCode]));
    const refused = kafkaErrorCode("TOPIC_AUTHORIZATION_FAILED");
    topics = asked.map((t) => ({
      name: t.name,
      partitions: t.partitions.map((partition) => ({
        partition,
        error: readable(t.name)
          ? kafkaErrorCode(outcome.get(`${t.name}\u0000${partition}`) ?? "NONE")
          : refused,
      })),
    }));
  } catch (e) {
    error = errorCodeOf(deps, e, "OffsetDelete");
  }
  const w = new KafkaWriter(64);
  w.int16(error);
  w.int32(0); // throttle_time_ms
  w.array(topics, (x, t) => {
    x.string(t.name);
    x.array(t.partitions, (y, p) => y.int32(p.partition).int16(p.error));
  });
  return w.finish();
}
