// TxnOffsetCommit's layouts (txn-offset-commit-codec.ts) against frames written field by field
// from Kafka's TxnOffsetCommitRequest/Response.json: v3 flexible with KIP-447's generation,
// member and instance id (null and set), v2 with leader epochs, v0 without; the answers in
// both encodings. And the adapter (txn-offset-commit-api.ts) over a stand-in group service:
// v3's member fields reach the group service's TxnOffsetCommit (v0-v2 commit as a simple
// group: generation -1, no member), and its fencing refusals reach the client with Kafka's
// codes on every partition (the checks themselves: services/group/classic-group.test.ts).
import { describe, expect, it } from "vitest";
import { TernError } from "../../libs/common/errors.js";
import { silentLogger } from "../../libs/common/logger.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { txnOffsetCommitResponse } from "./txn-offset-commit-api.js";
import {
  decodeTxnOffsetCommitRequest,
  encodeTxnOffsetCommitResponse,
} from "./txn-offset-commit-codec.js";

interface Fields {
  generationId: number;
  memberId: string;
  groupInstanceId: string | null;
}

/** A request body as a Kafka client writes it, with topic t1 partitions 0 (offset 10) and 2 (offset 20, null metadata). */
function requestBody(version: number, member: Fields): Buffer {
  const w = new KafkaWriter(256);
  const partitions: Array<[number, bigint, number, string | null]> = [
    [0, 10n, 4, "m0"],
    [2, 20n, -1, null],
  ];
  if (version >= 3) {
    w.compactNullableString("tx-1").compactNullableString("group-1");
    w.int64(7n).int16(3);
    w.int32(member.generationId).compactNullableString(member.memberId);
    w.compactNullableString(member.groupInstanceId);
    w.compactArray(["t1"], (x, name) => {
      x.compactNullableString(name);
      x.compactArray(partitions, (y, [p, offset, epoch, metadata]) => {
        y.int32(p).int64(offset).int32(epoch).compactNullableString(metadata);
        y.uvarint(1).uvarint(0).uvarint(2).int16(0); // an unknown tagged field, skipped
      });
      x.noTaggedFields();
    });
    w.noTaggedFields();
    return w.finish();
  }
  w.string("tx-1").string("group-1").int64(7n).int16(3);
  w.array(["t1"], (x, name) => {
    x.string(name);
    x.array(partitions, (y, [p, offset, epoch, metadata]) => {
      y.int32(p).int64(offset);
      if (version >= 2) y.int32(epoch);
      y.nullableString(metadata);
    });
  });
  return w.finish();
}

const MEMBER: Fields = { generationId: 5, memberId: "consumer-1-abc", groupInstanceId: null };

describe("TxnOffsetCommit layouts", () => {
  it("decodes v3 (flexible) with the generation, member id and instance id", () => {
    const r = new KafkaReader(requestBody(3, { ...MEMBER, groupInstanceId: "static-1" }));
    expect(decodeTxnOffsetCommitRequest(3, r)).toEqual({
      transactionalId: "tx-1",
      groupId: "group-1",
      producerId: 7n,
      producerEpoch: 3,
      generationId: 5,
      memberId: "consumer-1-abc",
      groupInstanceId: "static-1",
      topics: [
        {
          name: "t1",
          partitions: [
            { partition: 0, offset: 10n, leaderEpoch: 4, metadata: "m0" },
            { partition: 2, offset: 20n, leaderEpoch: -1, metadata: "" },
          ],
        },
      ],
    });
    expect(r.remaining()).toBe(0);
    expect(decodeTxnOffsetCommitRequest(3, new KafkaReader(requestBody(3, MEMBER)))).toMatchObject({
      groupInstanceId: null,
    });
  });

  it("decodes v2 and v0 as a simple group's commit (no generation, no member)", () => {
    const v2 = decodeTxnOffsetCommitRequest(2, new KafkaReader(requestBody(2, MEMBER)));
    expect(v2).toMatchObject({ generationId: -1, memberId: "", groupInstanceId: null });
    expect(v2.topics[0]!.partitions[0]).toEqual({
      partition: 0,
      offset: 10n,
      leaderEpoch: 4,
      metadata: "m0",
    });
    const r0 = new KafkaReader(requestBody(0, MEMBER));
    const v0 = decodeTxnOffsetCommitRequest(0, r0);
    expect(v0.topics[0]!.partitions[0]!.leaderEpoch).toBe(-1);
    expect(r0.remaining()).toBe(0);
  });

  it("a truncated v3 frame throws (the connection closes, as for any malformed request)", () => {
    const body = requestBody(3, MEMBER);
    expect(() =>
      decodeTxnOffsetCommitRequest(3, new KafkaReader(body.subarray(0, body.length - 6))),
    ).toThrow();
  });

  it("encodes the answer flexible from v3, classic before", () => {
    const topics = decodeTxnOffsetCommitRequest(3, new KafkaReader(requestBody(3, MEMBER))).topics;
    const code = (_t: string, p: number): number => (p === 0 ? 0 : 22);
    const v3 = new KafkaReader(encodeTxnOffsetCommitResponse(3, topics, code));
    expect(v3.int32()).toBe(0);
    const read3 = v3.compactArray((x) => {
      const name = x.compactString();
      const ps = x.compactArray((y) => {
        const p = [y.int32(), y.int16()];
        y.taggedFields();
        return p;
      });
      x.taggedFields();
      return { name, ps };
    });
    v3.taggedFields();
    expect(read3).toEqual([
      {
        name: "t1",
        ps: [
          [0, 0],
          [2, 22],
        ],
      },
    ]);
    expect(v3.remaining()).toBe(0);
    const v2 = new KafkaReader(encodeTxnOffsetCommitResponse(2, topics, code));
    expect(v2.int32()).toBe(0);
    const read2 = v2.array((x) => ({
      name: x.string(),
      ps: x.array((y) => [y.int32(), y.int16()]),
    }));
    expect(read2).toEqual(read3);
    expect(v2.remaining()).toBe(0);
  });
});

/** The adapter over a stand-in for the group service's TxnOffsetCommit: what it was asked, and what it answers. */
function deps(answer: (req: any) => Promise<any>): { deps: KafkaDeps; asked: any[] } {
  const asked: any[] = [];
  return {
    asked,
    deps: {
      nodeId: 0,
      clusterId: "test",
      logger: silentLogger(),
      txnOffsetCommit: (req: any) => {
        asked.push(req);
        return answer(req);
      },
    } as unknown as KafkaDeps,
  };
}

/** The answer's codes per partition, in request order (either encoding). */
function codes(version: number, body: Buffer): number[] {
  const r = new KafkaReader(body);
  r.int32();
  const out: number[] = [];
  if (version >= 3)
    r.compactArray((x) => {
      x.compactString();
      x.compactArray((y) => {
        y.int32();
        out.push(y.int16());
        y.taggedFields();
      });
      x.taggedFields();
    });
  else r.array((x) => (x.string(), x.array((y) => (y.int32(), out.push(y.int16())))));
  return out;
}

describe("TxnOffsetCommit through the listener's adapter", () => {
  it("passes v3's generation, member and instance id to the group service; v2 commits as a simple group", async () => {
    const ok = deps(async (req) => ({
      partitions: req.partitions.map((p: any) => ({ ...p, errorCode: "NONE" })),
    }));
    const v3 = { ...MEMBER, groupInstanceId: "static-1" };
    const a3 = await txnOffsetCommitResponse(ok.deps, 3, new KafkaReader(requestBody(3, v3)));
    expect(codes(3, a3)).toEqual([0, 0]);
    expect(ok.asked[0]).toMatchObject({
      transactionalId: "tx-1",
      groupId: "group-1",
      producerId: "7",
      producerEpoch: 3,
      generationId: 5,
      memberId: "consumer-1-abc",
      groupInstanceId: "static-1",
      partitions: [
        { topic: "t1", partition: 0, offset: "10", leaderEpoch: 4, metadata: "m0" },
        { topic: "t1", partition: 2, offset: "20", leaderEpoch: -1, metadata: "" },
      ],
    });
    await txnOffsetCommitResponse(ok.deps, 3, new KafkaReader(requestBody(3, MEMBER)));
    expect(ok.asked[1]).toMatchObject({ groupInstanceId: "" }); // null: not a static member
    const a2 = await txnOffsetCommitResponse(ok.deps, 2, new KafkaReader(requestBody(2, MEMBER)));
    expect(codes(2, a2)).toEqual([0, 0]);
    expect(ok.asked[2]).toMatchObject({ generationId: -1, memberId: "", groupInstanceId: "" });
  });

  it("answers the group's fencing refusals with Kafka's codes on every partition", async () => {
    for (const [name, code] of [
      ["ILLEGAL_GENERATION", 22],
      ["UNKNOWN_MEMBER_ID", 25],
      ["FENCED_INSTANCE_ID", 82],
    ] as const) {
      const refusing = deps(async () => {
        throw new TernError(name, "fenced");
      });
      const body = await txnOffsetCommitResponse(
        refusing.deps,
        3,
        new KafkaReader(requestBody(3, MEMBER)),
      );
      expect(codes(3, body)).toEqual([code, code]);
    }
  });

  it("answers PRODUCER_FENCED (90) from v3 and INVALID_PRODUCER_EPOCH (47) before", async () => {
    const fenced = deps(async (req) => ({
      partitions: req.partitions.map((p: any) => ({ ...p, errorCode: "PRODUCER_FENCED" })),
    }));
    const a3 = await txnOffsetCommitResponse(
      fenced.deps,
      3,
      new KafkaReader(requestBody(3, MEMBER)),
    );
    expect(codes(3, a3)).toEqual([90, 90]);
    const a2 = await txnOffsetCommitResponse(
      fenced.deps,
      2,
      new KafkaReader(requestBody(2, MEMBER)),
    );
    expect(codes(2, a2)).toEqual([47, 47]);
  });

  it("a transaction coordinator's listener answers NOT_COORDINATOR (16)", async () => {
    const none = { nodeId: 0, clusterId: "t", logger: silentLogger() } as unknown as KafkaDeps;
    const body = await txnOffsetCommitResponse(none, 3, new KafkaReader(requestBody(3, MEMBER)));
    expect(codes(3, body)).toEqual([16, 16]);
  });
});
