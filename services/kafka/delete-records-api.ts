// DeleteRecords v0-v1 (API key 21; v1 only changes throttling, v2 is flexible and not served):
// through the partition service's log start moves (services/broker/partition-service/log-start.ts). Layout from Kafka's
// DeleteRecordsRequest.json / DeleteRecordsResponse.json: topics [name, partitions
// [partition_index, offset]], timeout_ms; answer throttle_time_ms, topics [name, partitions
// [partition_index, low_watermark, error_code]]. A partition this broker does not lead is
// answered NOT_LEADER_OR_FOLLOWER (the client refreshes metadata and sends it to the leader).
import { answerAllowed } from "./kafka-access.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { kafkaErrorCode } from "./kafka-errors.js";
import type { LogStartOutcome } from "../broker/partition-service/log-start.js";

export async function deleteRecordsResponse(
  deps: KafkaDeps,
  _version: number,
  r: KafkaReader,
): Promise<Buffer> {
  const topics = r.array((x) => ({
    name: x.string(),
    partitions: x.array((y) => ({ partition: y.int32(), offset: y.int64() })),
  }));
  const timeoutMs = r.int32();
  const flat = topics.flatMap((t) =>
    t.partitions.map((p) => ({
      topic: t.name,
      partition: p.partition,
      offset: p.offset,
    })),
  );
  // A coordinator's listener leads no topic partitions.
  // ACLs: DELETE on the topic.
  const access = deps.access;
  const answers: Array<Pick<LogStartOutcome, "error" | "lowWatermark">> = await answerAllowed<
    (typeof flat)[number],
    Pick<LogStartOutcome, "error" | "lowWatermark">
  >(
    flat,
    (p) => access === undefined || access.allowed("delete", "topic", p.topic),
    async (asked) =>
      deps.deleteRecords === undefined
        ? asked.map(() => ({ error: "NOT_LEADER_OR_FOLLOWER", lowWatermark: -1n }))
        : deps.deleteRecords({ partitions: asked, timeoutMs }),
    () => ({ error: "TOPIC_AUTHORIZATION_FAILED", lowWatermark: -1n }),
  );
  const w = new KafkaWriter(256);
  w.int32(0); // throttle_time_ms
  let i = 0;
  w.array(topics, (x, t) => {
    x.string(t.name);
    x.array(t.partitions, (y, p) => {
      const a = answers[i++];
      y.int32(p.partition)
        .int64(a?.lowWatermark ?? -1n)
        .int16(kafkaErrorCode(a?.error ?? "UNKNOWN_SERVER_ERROR"));
    });
  });
  return w.finish();
}
