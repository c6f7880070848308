// CreatePartitions v0-3 (API key 37; v2+ flexible, v3 = v2): raises topics' partition counts
// through the controller's CreatePartitions, as `tern topics alter --partitions` does (what
// kafka-topics.sh --alter --partitions and Admin.createPartitions send). Manual assignments of
// the new partitions are refused, as CreateTopics refuses them: placement is the controller's.
// ALTER on the topic is needed (Kafka's rule). A topic named twice is INVALID_REQUEST for
// both, as Kafka answers it.
import type { KafkaDeps } from "./kafka-deps.js";
import type { KafkaReader } from "../../libs/records/kafka-codec.js";
import { KafkaWriter } from "../../libs/records/kafka-codec.js";
import { kafkaErrorCode } from "./kafka-errors.js";
import { fieldReader, fieldWriter } from "./versioned-fields.js";

/** The first flexible version (Kafka's CreatePartitionsRequest.json). */
export const CREATE_PARTITIONS_FLEXIBLE_SINCE = 2;

interface Answer {
  readonly code: number;
  readonly message: string | null;
}

export async function createPartitionsResponse(
  deps: KafkaDeps,
  version: number,
  r: KafkaReader,
): Promise<Buffer> {
  const flexible = version >= CREATE_PARTITIONS_FLEXIBLE_SINCE;
  const f = fieldReader(r, flexible);
  const wanted = f.array((x) => {
    const g = fieldReader(x, flexible);
    const t = {
      name: g.string(),
      count: x.int32(),
      // assignments: nullable array of [broker_ids]; only whether any is given matters.
      assigned: readAssignments(x, flexible),
    };
    g.tags();
    return t;
  });
  r.int32(); // timeout_ms: the controller answers once the change is committed
  const validateOnly = r.bool();
  f.tags();

  const answers = new Map<string, Answer>();
  const counts = new Map<string, number>();
  for (const t of wanted) counts.set(t.name, (counts.get(t.name) ?? 0) + 1);
  const send: Array<{ name: string; totalCount: number }> = [];
  const access = deps.access;
  for (const t of wanted) {
    if ((counts.get(t.name) ?? 0) > 1)
      answers.set(t.name, {
        code: kafkaErrorCode("INVALID_REQUEST"),
        message: `topic ${t.name} appears more than once in the request`,
      });
    else if (access !== undefined && !access.allowed("alter", "topic", t.name))
      answers.set(t.name, {
        code: kafkaErrorCode("TOPIC_AUTHORIZATION_FAILED"),
        message: `${access.principal} may not alter topic "${t.name}"`,
      });
    else if (t.assigned)
      answers.set(t.name, {
        code: kafkaErrorCode("INVALID_REQUEST"),
        message: "manual replica assignment is not supported: the controller places replicas",
      });
    else send.push({ name: t.name, totalCount: t.count });
  }
  if (send.length > 0) {
    const outcomes = await deps.topicAdmin.createPartitions(send, { validateOnly });
    for (const o of outcomes)
      answers.set(o.name, {
        code: kafkaErrorCode(o.error?.errorName),
        message: o.error?.message ?? null,
      });
  }

  const w = new KafkaWriter(256);
  const out = fieldWriter(w, flexible);
  w.int32(0); // throttle_time_ms
  out.array(wanted, (x, t) => {
    const a = answers.get(t.name) ?? {
      code: kafkaErrorCode("UNKNOWN_SERVER_ERROR"),
      message: "no answer from the controller",
    };
    const o = fieldWriter(x, flexible);
    o.string(t.name);
    x.int16(a.code);
    o.string(a.message);
    o.tags();
  });
  out.tags();
  return w.finish();
}

/** Reads a topic's nullable assignments array; whether it names any partition's brokers. */
function readAssignments(r: KafkaReader, flexible: boolean): boolean {
  const item = (x: KafkaReader): number[] => {
    const g = fieldReader(x, flexible);
    const brokers = g.array((y) => y.int32());
    g.tags();
    return brokers;
  };
  const assignments = flexible ? r.compactNullableArray(item) : r.nullableArray(item);
  return assignments !== null && assignments.length > 0;
}
