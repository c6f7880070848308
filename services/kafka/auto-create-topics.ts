// Kafka's auto.create.topics.enable (`--kafka-auto-create-topics`, off by default:
// docs/decisions.md): a Metadata request that names a topic the cluster lacks, with
// allow_auto_topic_creation set (what producers send; consumers and admin clients clear it),
// creates it with the defaults CreateTopics uses for -1 (1 partition, replication factor 3),
// as Kafka's broker does with num.partitions and default.replication.factor. Produce never
// creates: a Kafka producer asks Metadata for a topic before it sends to it. Creation needs
// CREATE on the cluster or on the topic (Kafka's rule: TOPIC_AUTHORIZATION_FAILED otherwise).
// Kafka answers the new topic LEADER_NOT_AVAILABLE and creates it in the background; here the
// answer waits (at most 5 s, as CreateTopics) until this node's metadata view shows it, so it
// carries the new partitions, each LEADER_NOT_AVAILABLE until its leader is elected.
import { clusterAllowed } from "./kafka-access.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { kafkaErrorCode } from "./kafka-errors.js";
import type { SchedulingClock } from "../../libs/runtime/scheduler.js";
import type { MetadataRequest } from "./metadata-codec.js";
import { DEFAULT_PARTITIONS, DEFAULT_REPLICATION_FACTOR, untilVisible } from "./topic-admin-api.js";

/**
 * Creates the topics a Metadata request names that the cluster lacks, when the setting and the
 * request allow it; answers the Kafka error code of each one that could not be created.
 */
export async function autoCreateTopics(
  deps: KafkaDeps,
  clock: SchedulingClock,
  request: MetadataRequest,
): Promise<ReadonlyMap<string, number>> {
  const refused = new Map<string, number>();
  if (deps.autoCreateTopics !== true || !request.allowAutoTopicCreation || request.topics === null)
    return refused;
  const known = new Set((deps.metadata()?.topics ?? []).map((t) => t.name));
  const missing = [
    ...new Set(
      request.topics.flatMap(({ name }) => (name === null || known.has(name) ? [] : [name])),
    ),
  ];
  const access = deps.access;
  const mayCreate = (name: string): boolean =>
    access === undefined ||
    clusterAllowed(access, "create") ||
    access.allowed("create", "topic", name);
  const create = missing.filter((name) => {
    if (mayCreate(name)) return true;
    refused.set(name, kafkaErrorCode("TOPIC_AUTHORIZATION_FAILED"));
    return false;
  });
  if (create.length === 0) return refused;
  const outcomes = await deps.topicAdmin.createTopics(
    create.map((name) => ({
      name,
      partitions: DEFAULT_PARTITIONS,
      replicationFactor: DEFAULT_REPLICATION_FACTOR,
    })),
    {},
  );
  for (const o of outcomes) {
    const error = o.error?.errorName ?? "NONE";
    // Another client's request created it first: as good as ours.
    if (error !== "NONE" && error !== "TOPIC_ALREADY_EXISTS")
      refused.set(o.name, kafkaErrorCode(error));
  }
  await untilVisible(
    deps,
    clock,
    create.filter((name) => !refused.has(name)),
  );
  deps.logger.info({ topics: create, refused: Object.fromEntries(refused) }, "auto-created topics");
  return refused;
}
