// DeleteRecords v0-1 codec: the request's topics/partitions reach the Broker handler flattened
// in order with timeout_ms, and the answer is throttle_time_ms, then per topic and partition
// (partition_index, low_watermark, error_code) in the request's order; a listener without the
// handler (a coordinator's) answers NOT_LEADER_OR_FOLLOWER (6) for every partition.
import { describe, expect, it } from "vitest";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { deleteRecordsResponse } from "./delete-records-api.js";
import type { KafkaDeps } from "./kafka-deps.js";

function request(): KafkaReader {
  const w = new KafkaWriter(128);
  const topics: Array<[string, Array<[number, bigint]>]> = [
    [
      "a",
      [
        [0, 5n],
        [1, -1n],
      ],
    ],
    ["b", [[2, 9n]]],
  ];
  w.array(topics, (x, [name, parts]) => {
    x.string(name).array(parts, (y, [p, off]) => void y.int32(p).int64(off));
  });
  w.int32(4_000);
  return new KafkaReader(Buffer.from(w.finish()));
}

function decode(b: Buffer): {
  throttle: number;
  topics: Array<{ name: string; partitions: Array<[number, bigint, number]> }>;
} {
  const r = new KafkaReader(b);
  const throttle = r.int32();
  const topics = r.array((x) => ({
    name: x.string(),
    partitions: x.array((y) => [y.int32(), y.int64(), y.int16()] as [number, bigint, number]),
  }));
  return { throttle, topics };
}

describe("DeleteRecords v0-1", () => {
  it("passes partitions to the partition service in order and answers low watermarks and error codes", async () => {
    let seen: unknown;
    const deps = {
      deleteRecords: async (req: unknown) => {
        seen = req;
        return [
          { error: "NONE", lowWatermark: 5n },
          { error: "NONE", lowWatermark: 12n },
          { error: "OFFSET_OUT_OF_RANGE", lowWatermark: -1n },
        ];
      },
    } as unknown as KafkaDeps;
    const out = decode(await deleteRecordsResponse(deps, 1, request()));
    expect(seen).toEqual({
      timeoutMs: 4_000,
      partitions: [
        { topic: "a", partition: 0, offset: 5n },
        { topic: "a", partition: 1, offset: -1n },
        { topic: "b", partition: 2, offset: 9n },
      ],
    });
    expect(out).toEqual({
      throttle: 0,
      topics: [
        {
          name: "a",
          partitions: [
            [0, 5n, 0],
            [1, 12n, 0],
          ],
        },
        { name: "b", partitions: [[2, -1n, 1]] },
      ],
    });
  });

  it("answers NOT_LEADER_OR_FOLLOWER everywhere on a listener without log start moves", async () => {
    const out = decode(await deleteRecordsResponse({} as KafkaDeps, 0, request()));
    expect(out.topics.flatMap((t) => t.partitions.map((p) => p[2]))).toEqual([6, 6, 6]);
  });
});
