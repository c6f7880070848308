// CreatePartitions v0-3 codec: v0-1 classic and v2-3 flexible layouts carry each topic's new
// total to the controller in request order with validate_only; a topic named twice is
// INVALID_REQUEST (42) each time and not sent, a manual assignment INVALID_REQUEST; the
// controller's refusals pass through (INVALID_PARTITIONS, 37); the answer is throttle_time_ms, then (name, error_code, error_message) per topic in order.
import { describe, expect, it } from "vitest";
import { TernError } from "../../libs/common/errors.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { createPartitionsResponse } from "./create-partitions-api.js";
import type { KafkaDeps } from "./kafka-deps.js";

const INVALID_REQUEST = 42;
const INVALID_PARTITIONS = 37;

type Topic = [name: string, count: number, assignments: number[][] | null];

function request(version: number, topics: readonly Topic[], validateOnly: boolean): KafkaReader {
  const flexible = version >= 2;
  const w = new KafkaWriter(128);
  const str = (x: KafkaWriter, s: string) => (flexible ? x.compactNullableString(s) : x.string(s));
  const arr = <T>(
    x: KafkaWriter,
    items: readonly T[] | null,
    item: (y: KafkaWriter, t: T) => void,
  ) => {
    if (flexible) {
      if (items === null) x.uvarint(0);
      else x.compactArray(items, item);
    } else if (items === null) x.int32(-1);
    else x.array(items, item);
  };
  arr(w, topics, (x, [name, count, assignments]) => {
    str(x, name);
    x.int32(count);
    arr(x, assignments, (y, brokers) => {
      arr(y, brokers, (z, b) => void z.int32(b));
      if (flexible) y.noTaggedFields();
    });
    if (flexible) x.noTaggedFields();
  });
  w.int32(5_000).bool(validateOnly);
  if (flexible) w.noTaggedFields();
  return new KafkaReader(Buffer.from(w.finish()));
}

function decode(version: number, b: Buffer): Array<[string, number, string | null]> {
  const flexible = version >= 2;
  const r = new KafkaReader(b);
  expect(r.int32()).toBe(0);
  const item = (x: KafkaReader): [string, number, string | null] => {
    const out: [string, number, string | null] = flexible
      ? [x.compactString(), x.int16(), x.compactNullableString()]
      : [x.string(), x.int16(), x.nullableString()];
    if (flexible) x.taggedFields();
    return out;
  };
  const results = flexible ? r.compactArray(item) : r.array(item);
  if (flexible) r.taggedFields();
  expect(r.remaining()).toBe(0);
  return results;
}

function deps(seen: unknown[]): KafkaDeps {
  return {
    topicAdmin: {
      createPartitions: async (
        changes: Array<{ name: string; totalCount: number }>,
        options: unknown,
      ) => {
        seen.push({ changes, options });
        return changes.map((c) =>
          c.name === "small"
            ? {
                name: c.name,
                error: new TernError("INVALID_PARTITIONS", "partitions cannot be removed"),
              }
            : { name: c.name },
        );
      },
    },
  } as unknown as KafkaDeps;
}

describe("CreatePartitions v0-3", () => {
  for (const version of [0, 1, 2, 3])
    it(`v${version}: sends each topic's total in order and answers per topic`, async () => {
      const seen: unknown[] = [];
      const topics: Topic[] = [
        ["a", 6, null],
        ["twice", 4, null],
        ["small", 1, null],
        ["placed", 4, [[0, 1, 2]]],
        ["twice", 5, null],
      ];
      const out = decode(
        version,
        await createPartitionsResponse(deps(seen), version, request(version, topics, true)),
      );
      expect(seen).toEqual([
        {
          changes: [
            { name: "a", totalCount: 6 },
            { name: "small", totalCount: 1 },
          ],
          options: { validateOnly: true },
        },
      ]);
      expect(out.map(([name, code]) => [name, code])).toEqual([
        ["a", 0],
        ["twice", INVALID_REQUEST],
        ["small", INVALID_PARTITIONS],
        ["placed", INVALID_REQUEST],
        ["twice", INVALID_REQUEST],
      ]);
      expect(out[0]![2]).toBeNull();
      expect(out[2]![2]).toBe("partitions cannot be removed");
      expect(out[3]![2]).toMatch(/manual replica assignment/);
    });
});
