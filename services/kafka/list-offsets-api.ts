// ListOffsets v1-v5: earliest (-2), latest (-1) and by timestamp, through the Broker service's
// ListOffsets handler in-process.
import { answerAllowed } from "./kafka-access.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { kafkaErrorCode } from "./kafka-errors.js";
import type { ListOffsetsPartitionResult__Output } from "../../libs/common/proto-types/index.js";

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
      timestampMs: p.timestamp.toString(),
    })),
  );
  // ACLs: DESCRIBE on the topic.
  const access = deps.access;
  const answers: Array<Partial<ListOffsetsPartitionResult__Output>> = await answerAllowed<
    (typeof flat)[number],
    Partial<ListOffsetsPartitionResult__Output>
  >(
    flat,
    (p) => access === undefined || access.allowed("describe", "topic", p.topic),
    async (asked) =>
      (
        await deps.listOffsets({
          isolationLevel: isolation === 1 ? "READ_COMMITTED" : "READ_UNCOMMITTED",
          partitions: asked,
        })
      ).partitions ?? [],
    () => ({ errorCode: "TOPIC_AUTHORIZATION_FAILED" }),
  );
  const w = new KafkaWriter(256);
  if (version >= 2) w.int32(0);
  let i = 0;
  w.array(topics, (x, t) => {
    x.string(t.name);
    x.array(t.partitions, (y, p) => {
      const a = answers[i++];
      y.int32(p.partition).int16(kafkaErrorCode(a?.errorCode ?? "UNKNOWN_SERVER_ERROR"));
      y.int64(BigInt(a?.timestampMs ?? -1)).int64(BigInt(a?.offset ?? -1));
      if (version >= 4) y.int32(-1); // leader epoch
    });
  });
  return w.finish();
}
