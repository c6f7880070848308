// WriteTxnMarkers v1 codec (the admin client's abort of a hanging transaction): each ABORT
// marker's partitions reach the Broker service's AbortPartitionTransaction with the producer's
// id and epoch and the coordinator epoch; a COMMIT marker is INVALID_REQUEST (42) and not sent;
// a listener without the call (a coordinator's) answers NOT_LEADER_OR_FOLLOWER (6); without
// CLUSTER_ACTION, CLUSTER_AUTHORIZATION_FAILED (31). The answer is per marker its producer id,
// then per topic and partition the error code, in request order.
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import type { RequestAccess } from "./kafka-access.js";
import {
  writeTxnMarkersResponse,
  type AbortPartitionTransactionCall,
} from "./write-txn-markers-api.js";

const logger = pino({ level: "silent" });

interface Marker {
  producerId: bigint;
  epoch: number;
  commit: boolean;
  topics: Array<[string, number[]]>;
  coordinatorEpoch: number;
}

function request(markers: readonly Marker[]): KafkaReader {
  const w = new KafkaWriter(128);
  w.compactArray(markers, (x, m) => {
    x.int64(m.producerId).int16(m.epoch).bool(m.commit);
    x.compactArray(m.topics, (y, [name, partitions]) => {
      y.compactNullableString(name).compactArray(partitions, (z, p) => void z.int32(p));
      y.noTaggedFields();
    });
    x.int32(m.coordinatorEpoch).noTaggedFields();
  });
  w.noTaggedFields();
  return new KafkaReader(Buffer.from(w.finish()));
}

function decode(b: Buffer): Array<[bigint, Array<[string, Array<[number, number]>]>]> {
  const r = new KafkaReader(b);
  const out = r.compactArray((x) => {
    const producerId = x.int64();
    const topics = x.compactArray((y) => {
      const name = y.compactString();
      const partitions = y.compactArray((z) => {
        const p: [number, number] = [z.int32(), z.int16()];
        z.taggedFields();
        return p;
      });
      y.taggedFields();
      return [name, partitions] as [string, Array<[number, number]>];
    });
    x.taggedFields();
    return [producerId, topics] as [bigint, Array<[string, Array<[number, number]>]>];
  });
  r.taggedFields();
  expect(r.remaining()).toBe(0);
  return out;
}

const markers: Marker[] = [
  { producerId: 7n, epoch: 3, commit: false, topics: [["t", [0, 2]]], coordinatorEpoch: 4 },
  { producerId: 8n, epoch: 1, commit: true, topics: [["t", [1]]], coordinatorEpoch: 4 },
];

describe("WriteTxnMarkers v1", () => {
  it("aborts each ABORT marker's partitions through AbortPartitionTransaction and refuses COMMIT", async () => {
    const seen: unknown[] = [];
    const abort: AbortPartitionTransactionCall = async (req) => {
      seen.push(req);
      return {
        errorCode: req.topicPartition?.partition === 2 ? "INVALID_PRODUCER_EPOCH" : "NONE",
        errorMessage: "",
        leader: null,
      } as never;
    };
    const out = decode(await writeTxnMarkersResponse(abort, logger, 1, request(markers)));
    expect(seen).toEqual([
      {
        topicPartition: { topic: "t", partition: 0 },
        producerId: "7",
        producerEpoch: 3,
        coordinatorEpoch: 4,
      },
      {
        topicPartition: { topic: "t", partition: 2 },
        producerId: "7",
        producerEpoch: 3,
        coordinatorEpoch: 4,
      },
    ]);
    expect(out).toEqual([
      [
        7n,
        [
          [
            "t",
            [
              [0, 0],
              [2, 47],
            ],
          ],
        ],
      ],
      [8n, [["t", [[1, 42]]]]],
    ]);
  });

  it("answers NOT_LEADER_OR_FOLLOWER on a coordinator, CLUSTER_AUTHORIZATION_FAILED without CLUSTER_ACTION", async () => {
    const onCoordinator = decode(
      await writeTxnMarkersResponse(undefined, logger, 1, request(markers.slice(0, 1))),
    );
    expect(onCoordinator).toEqual([
      [
        7n,
        [
          [
            "t",
            [
              [0, 6],
              [2, 6],
            ],
          ],
        ],
      ],
    ]);
    let called = false;
    const denied = { principal: "User:alice", allowed: () => false } as unknown as RequestAccess;
    const refused = decode(
      await writeTxnMarkersResponse(
        async () => {
          called = true;
          return { errorCode: "NONE" } as never;
        },
        logger,
        1,
        request(markers.slice(0, 1)),
        denied,
      ),
    );
    expect(called).toBe(false);
    expect(refused).toEqual([
      [
        7n,
        [
          [
            "t",
            [
              [0, 31],
              [2, 31],
            ],
          ],
        ],
      ],
    ]);
  });
});
