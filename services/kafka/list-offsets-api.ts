// ListOffsets v1-v5: earliest (-2), latest (-1) and by timestamp, through the partition
// service's offsets by time (services/broker/partition-service/offsets.ts).
import { answerAllowed } from "./kafka-access.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { kafkaErrorCode } from "./kafka-errors.js";
import type { OffsetAnswer } from "../broker/partition-service/offsets.js";

export async function listOffsetsResponse(
  deps: KafkaDeps,
  version: number,
  r: KafkaReader,
): Promise<Buffer> {
  r.int32(); // replica_id
  const isolation = version >= 2 ? r.int8() : 0;
  const topics = r.array((x) => ({
    name: x.string(),
    partitions: x.array((y) => {
      const partition = y.int32();
      if (version >= 4) y.int32(); // current leader epoch
      return { partition, timestamp: y.int64() };
    }),
  }));
  const flat = topics.flatMap((t) =>
    t.partitions.map((p) => ({
      topic: t.name,
      partition: p.partition,
      timestampMs: p.timestamp,
    })),
  );
  // ACLs: DESCRIBE on the topic.
  const access = deps.access;
  const answers: Array<Pick<OffsetAnswer, "error"> & Partial<OffsetAnswer>> = await answerAllowed<
    (typeof flat)[number],
    Pick<OffsetAnswer, "error"> & Partial<OffsetAnswer>
  >(
    flat,
    (p) => access === undefined || access.allowed("describe", "topic", p.topic),
    (asked) =>
      deps.listOffsets({
        isolation: isolation === 1 ? "READ_COMMITTED" : "READ_UNCOMMITTED",
        partitions: asked,
      }),
    () => ({ error: "TOPIC_AUTHORIZATION_FAILED" }),
  );
  const w = new KafkaWriter(256);
  if (version >= 2) w.int32(0);
  let i = 0;
  w.array(topics, (x, t) => {
    x.string(t.name);
    x.array(t.partitions, (y, p) => {
      const a = answers[i++];
      y.int32(p.partition).int16(kafkaErrorCode(a?.error ?? "UNKNOWN_SERVER_ERROR"));
      y.int64(BigInt(a?.timestampMs ?? -1)).int64(a?.offset ?? -1n);
      if (version >= 4) y.int32(-1); // leader epoch
    });
  });
  return w.finish();
}
