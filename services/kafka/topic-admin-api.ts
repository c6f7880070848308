// Topic administration through the Kafka protocol, on the controller's own commands (the
// answering broker forwards them with its controller client; Metadata names it the "controller"):
// CreateTopics v0-4, DeleteTopics v0-3, DescribeConfigs v0-2 (topics: every key tern knows, with
// its value or default and where it came from; brokers: none). Manual replica assignment is
// refused: placement is the controller's. Layouts from Kafka's message schemas.
import { clusterAllowed } from "./kafka-access.js";
import type { TopicSpec } from "../../libs/metadata/controller-client.js";
import type { TopicInfo } from "../../libs/metadata/types.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { kafkaErrorCode } from "./kafka-errors.js";
import type { SchedulingClock } from "../../libs/runtime/scheduler.js";
import { sleep } from "../../libs/runtime/sleep.js";

export type { TopicAdmin } from "./admin-ports.js";

/** Kafka's defaults for -1 (KIP-464): tern's num.partitions and default.replication.factor. */
export const DEFAULT_PARTITIONS = 1;
export const DEFAULT_REPLICATION_FACTOR = 3;
const RESOURCE_TOPIC = 2;
const RESOURCE_BROKER = 4;
/** Kafka's ConfigSource numbers. */
const SOURCE_TOPIC_CONFIG = 1;
const SOURCE_DEFAULT_CONFIG = 5;
const UNKNOWN_TOPIC_OR_PARTITION = 3;
const INVALID_REQUEST = 42;

interface CreateRequest {
  readonly name: string;
  readonly partitions: number;
  readonly replicationFactor: number;
  readonly assigned: boolean;
  readonly config: Record<string, string | null>;
}

/** How long a CreateTopics answer waits for this process's metadata view to show the topics. */
const CREATED_VISIBLE_WAIT_MS = 5_000;
const CREATED_VISIBLE_POLL_MS = 20;

export async function createTopicsResponse(
  deps: KafkaDeps,
  clock: SchedulingClock,
  version: number,
  r: KafkaReader,
): Promise<Buffer> {
  const wanted: CreateRequest[] = r.array((x) => ({
    name: x.string(),
    partitions: x.int32(),
    replicationFactor: x.int16(),
    assigned:
      x.array((y) => ({ partition: y.int32(), brokers: y.array((z) => z.int32()) })).length > 0,
    config: Object.fromEntries(x.array((y) => [y.string(), y.nullableString()] as const)),
  }));
  r.int32(); // timeout_ms: the controller answers once the command is committed
  const validateOnly = version >= 1 ? r.bool() : false;
  const answers = new Map<string, { code: number; message: string | null }>();
  const send: TopicSpec[] = [];
  // ACLs: CREATE on the cluster, or on the topic (Kafka's rule).
  const access = deps.access;
  const mayCreate = (name: string): boolean =>
    access === undefined ||
    clusterAllowed(access, "create") ||
    access.allowed("create", "topic", name);
  for (const t of wanted) {
    if (!mayCreate(t.name))
      answers.set(t.name, {
        code: kafkaErrorCode("TOPIC_AUTHORIZATION_FAILED"),
        message: `${access?.principal} may not create topic "${t.name}"`,
      });
    else if (t.assigned)
      answers.set(t.name, {
        code: INVALID_REQUEST,
        message: "manual replica assignment is not supported: the controller places replicas",
      });
    else if (Object.values(t.config).some((v) => v === null))
      answers.set(t.name, {
        code: kafkaErrorCode("INVALID_CONFIG"),
        message: "a config entry has a null value",
      });
    else
      send.push({
        name: t.name,
        partitions: t.partitions === -1 ? DEFAULT_PARTITIONS : t.partitions,
        replicationFactor:
          t.replicationFactor === -1 ? DEFAULT_REPLICATION_FACTOR : t.replicationFactor,
        config: t.config as Record<string, string>,
      });
  }
  if (send.length > 0) {
    const outcomes = await deps.topicAdmin.createTopics(send, { validateOnly });
    for (const o of outcomes)
      answers.set(o.name, {
        code: kafkaErrorCode(o.error?.errorName),
        message: o.error?.message ?? null,
      });
    const created = outcomes.filter(
      (o) => !validateOnly && (o.error?.errorName ?? "NONE") === "NONE",
    );
    await untilVisible(
      deps,
      clock,
      created.map((o) => o.name),
    );
  }
  const w = new KafkaWriter(256);
  if (version >= 2) w.int32(0); // throttle_time_ms
  w.array(wanted, (x, t) => {
    const a = answers.get(t.name) ?? {
      code: kafkaErrorCode("UNKNOWN_SERVER_ERROR"),
      message: "no answer from the controller",
    };
    x.string(t.name).int16(a.code);
    if (version >= 1) x.nullableString(a.message);
  });
  return w.finish();
}

export async function deleteTopicsResponse(
  deps: KafkaDeps,
  version: number,
  r: KafkaReader,
): Promise<Buffer> {
  const names = r.array((x) => x.string());
  r.int32(); // timeout_ms
  // ACLs: DELETE on the topic; refused ones are not sent.
  const access = deps.access;
  const refused = new Set(
    access === undefined ? [] : names.filter((n) => !access.allowed("delete", "topic", n)),
  );
  const allowed = names.filter((n) => !refused.has(n));
  const outcomes = new Map(
    allowed.length === 0
      ? []
      : (await deps.topicAdmin.deleteTopics(allowed)).map((o) => [o.name, o]),
  );
  const w = new KafkaWriter(256);
  if (version >= 1) w.int32(0); // throttle_time_ms
  w.array(names, (x, name) => {
    const o = outcomes.get(name);
    x.string(name).int16(
      refused.has(name)
        ? kafkaErrorCode("TOPIC_AUTHORIZATION_FAILED")
        : o === undefined
          ? kafkaErrorCode("UNKNOWN_SERVER_ERROR")
          : kafkaErrorCode(o.error?.errorName),
    );
  });
  return w.finish();
}

export function describeConfigsResponse(deps: KafkaDeps, version: number, r: KafkaReader): Buffer {
  const resources = r.array((x) => ({
    type: x.int8(),
    name: x.string(),
    keys: x.nullableArray((y) => y.string()),
  }));
  if (version >= 1) r.bool(); // include_synonyms: tern has no synonyms to list
  const topics = new Map(
    (deps.metadata()?.topics ?? []).filter((t) => t.role === "broker").map((t) => [t.name, t]),
  );
  const defaults = deps.topicAdmin.configDefaults();
  const w = new KafkaWriter(1024);
  w.int32(0); // throttle_time_ms
  w.array(resources, (x, res) => {
    const topic = res.type === RESOURCE_TOPIC ? topics.get(res.name) : undefined;
    let error = 0;
    let message: string | null = null;
    // ACLs: DESCRIBE_CONFIGS on the topic or (brokers' configs) the cluster.
    const refused =
      deps.access !== undefined &&
      (res.type === RESOURCE_TOPIC
        ? !deps.access.allowed("describe-configs", "topic", res.name)
        : !clusterAllowed(deps.access, "describe-configs"));
    if (refused)
      [error, message] = [
        kafkaErrorCode(
          res.type === RESOURCE_TOPIC
            ? "TOPIC_AUTHORIZATION_FAILED"
            : "CLUSTER_AUTHORIZATION_FAILED",
        ),
        `${deps.access?.principal} may not describe the configs of ${res.name}`,
      ];
    else if (res.type === RESOURCE_TOPIC && topic === undefined)
      [error, message] = [UNKNOWN_TOPIC_OR_PARTITION, `unknown topic ${res.name}`];
    else if (res.type !== RESOURCE_TOPIC && res.type !== RESOURCE_BROKER)
      [error, message] = [
        INVALID_REQUEST,
        `resource type ${res.type} has no configs here (topics: 2, brokers: 4)`,
      ];
    x.int16(error).nullableString(message).int8(res.type).string(res.name);
    x.array(
      error === 0 && topic !== undefined ? topicConfigs(topic, defaults, res.keys) : [],
      (y, c) => {
        y.string(c.name).nullableString(c.value).bool(false);
        if (version === 0) y.bool(c.source === SOURCE_DEFAULT_CONFIG);
        else y.int8(c.source);
        y.bool(false); // is_sensitive
        if (version >= 1) y.array([], () => undefined); // synonyms
      },
    );
  });
  return w.finish();
}

function topicConfigs(
  t: TopicInfo,
  defaults: ReadonlyMap<string, string>,
  keys: readonly string[] | null,
): Array<{ name: string; value: string; source: number }> {
  const names =
    keys === null || keys.length === 0
      ? [...new Set([...defaults.keys(), ...Object.keys(t.config)])].sort()
      : keys;
  return names.flatMap((name) => {
    const set = t.config[name];
    if (set !== undefined) return [{ name, value: set, source: SOURCE_TOPIC_CONFIG }];
    const d = defaults.get(name);
    return d === undefined ? [] : [{ name, value: d, source: SOURCE_DEFAULT_CONFIG }];
  });
}

/**
 * The controller answers CreateTopics once the topics are committed; this process's metadata
 * view (the controllers' watch) follows a moment later. A client that asks this listener for
 * the new topic's metadata right after (kafkajs's createTopics waits for leaders that way)
 * would be told UNKNOWN_TOPIC_OR_PARTITION, which it does not retry, so the answer waits until
 * the view shows them, at most CREATED_VISIBLE_WAIT_MS.
 */
export async function untilVisible(
  deps: KafkaDeps,
  clock: SchedulingClock,
  names: readonly string[],
): Promise<void> {
  const deadlineMs = clock.monotonicMs() + CREATED_VISIBLE_WAIT_MS;
  for (;;) {
    const known = new Set((deps.metadata()?.topics ?? []).map((t) => t.name));
    if (names.every((n) => known.has(n)) || clock.monotonicMs() >= deadlineMs) return;
    await sleep(clock, CREATED_VISIBLE_POLL_MS);
  }
}
