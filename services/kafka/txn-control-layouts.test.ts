// The flexible layouts of the transactional control APIs and of ApiVersions, against frames
// written field by field from Kafka's message schemas: InitProducerId v2-v5, AddPartitionsToTxn
// v3, AddOffsetsToTxn and EndTxn v3-v4 (compact strings, tagged fields; v4 and InitProducerId v5 differ from the
// version before only in allowing TRANSACTION_ABORTABLE, which tern never answers), each with an
// unknown tagged field skipped and a truncated frame refused; the classic layouts unchanged; and
// ApiVersions v4 answered as v3 (no features advertised yet), the version table flexible where
// Kafka's schemas are.
import { describe, expect, it } from "vitest";
import { TernError } from "../../libs/common/errors.js";
import { silentLogger } from "../../libs/common/logger.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import {
  addOffsetsToTxnResponse,
  decodeAddOffsetsToTxnRequest,
  encodeAddOffsetsToTxnResponse,
} from "./add-offsets-to-txn-api.js";
import {
  decodeAddPartitionsToTxnRequest,
  encodeAddPartitionsToTxnResponse,
} from "./add-partitions-to-txn-api.js";
import { API, apiVersionsResponse, flexibleRequest, SUPPORTED } from "./api-versions.js";
import { decodeEndTxnRequest, encodeEndTxnResponse, endTxnResponse } from "./end-txn-api.js";
import { initProducerIdResponse } from "./init-producer-id-api.js";
import type { KafkaDeps, TransactionCoordinatorCalls } from "./kafka-deps.js";

/** An unknown tagged field (tag 5, two bytes) closing a flexible body. */
function unknownTag(w: KafkaWriter): Buffer {
  return w.uvarint(1).uvarint(5).uvarint(2).int16(-1).finish();
}

function endTxnBody(version: number): Buffer {
  const w = new KafkaWriter(64);
  if (version >= 3) w.compactNullableString("tx-1");
  else w.string("tx-1");
  w.int64(7n).int16(3).bool(true);
  return version >= 3 ? unknownTag(w) : w.finish();
}

function addOffsetsBody(version: number): Buffer {
  const w = new KafkaWriter(64);
  if (version >= 3) w.compactNullableString("tx-1").int64(7n).int16(3).compactNullableString("g1");
  else w.string("tx-1").int64(7n).int16(3).string("g1");
  return version >= 3 ? unknownTag(w) : w.finish();
}

/** A throttle time and error code, then an empty tagged-field section when flexible. */
function readErrorAnswer(body: Buffer, flexible: boolean): number {
  const r = new KafkaReader(body);
  expect(r.int32()).toBe(0);
  const code = r.int16();
  if (flexible) r.taggedFields();
  expect(r.remaining()).toBe(0);
  return code;
}

describe("EndTxn and AddOffsetsToTxn layouts", () => {
  it("decode v3-v4 flexible (an unknown tagged field skipped) and v0-v2 classic alike", () => {
    for (const version of [0, 2, 3, 4]) {
      const r = new KafkaReader(endTxnBody(version));
      expect(decodeEndTxnRequest(version, r)).toEqual({
        transactionalId: "tx-1",
        producerId: 7n,
        producerEpoch: 3,
        committed: true,
      });
      expect(r.remaining()).toBe(0);
      const a = new KafkaReader(addOffsetsBody(version));
      expect(decodeAddOffsetsToTxnRequest(version, a)).toEqual({
        transactionalId: "tx-1",
        producerId: 7n,
        producerEpoch: 3,
        groupId: "g1",
      });
      expect(a.remaining()).toBe(0);
    }
  });

  it("refuse a truncated flexible frame", () => {
    for (const cut of [1, 4]) {
      const e = endTxnBody(4);
      expect(() =>
        decodeEndTxnRequest(4, new KafkaReader(e.subarray(0, e.length - cut))),
      ).toThrow();
      const a = addOffsetsBody(3);
      expect(() =>
        decodeAddOffsetsToTxnRequest(3, new KafkaReader(a.subarray(0, a.length - cut))),
      ).toThrow();
    }
  });

  it("encode the answer with tagged fields from v3", () => {
    for (const version of [2, 3, 4]) {
      expect(readErrorAnswer(encodeEndTxnResponse(version, 51), version >= 3)).toBe(51);
      expect(readErrorAnswer(encodeAddOffsetsToTxnResponse(version, 0), version >= 3)).toBe(0);
    }
  });

  it("reach the coordinator's handlers from v4, fencing answered as PRODUCER_FENCED", async () => {
    const asked: unknown[] = [];
    const calls = {
      endTxn: async (req: unknown) => {
        asked.push(req);
        throw new TernError("PRODUCER_FENCED", "a newer instance holds the id");
      },
      addOffsetsToTxn: async (req: unknown) => {
        asked.push(req);
        return {};
      },
    } as unknown as TransactionCoordinatorCalls;
    const end = await endTxnResponse(calls, silentLogger(), 4, new KafkaReader(endTxnBody(4)));
    expect(readErrorAnswer(end, true)).toBe(90);
    const add = await addOffsetsToTxnResponse(
      calls,
      silentLogger(),
      4,
      new KafkaReader(addOffsetsBody(4)),
    );
    expect(readErrorAnswer(add, true)).toBe(0);
    expect(asked).toEqual([
      {
        transactionalId: "tx-1",
        producerId: "7",
        producerEpoch: 3,
        committed: true,
        keepEpoch: true,
      },
      { transactionalId: "tx-1", producerId: "7", producerEpoch: 3, groupId: "g1" },
    ]);
  });
});

describe("AddPartitionsToTxn v3", () => {
  function body(version: number): Buffer {
    const topics: Array<[string, number[]]> = [
      ["t1", [0, 2]],
      ["t2", [1]],
    ];
    const w = new KafkaWriter(64);
    if (version < 3) {
      w.string("tx-1").int64(7n).int16(3);
      w.array(topics, (x, [name, ps]) => x.string(name).array(ps, (y, p) => y.int32(p)));
      return w.finish();
    }
    w.compactNullableString("tx-1").int64(7n).int16(3);
    w.compactArray(topics, (x, [name, ps]) => {
      x.compactNullableString(name).compactArray(ps, (y, p) => y.int32(p));
      x.uvarint(1).uvarint(6).uvarint(1).int8(0); // an unknown tagged field, skipped
    });
    return unknownTag(w);
  }

  it("decodes v3 flexible (unknown tagged fields skipped) as v2 classic", () => {
    const expected = {
      transactionalId: "tx-1",
      producerId: 7n,
      producerEpoch: 3,
      topics: [
        { name: "t1", partitions: [0, 2] },
        { name: "t2", partitions: [1] },
      ],
    };
    for (const version of [2, 3]) {
      const r = new KafkaReader(body(version));
      expect(decodeAddPartitionsToTxnRequest(version, r)).toEqual(expected);
      expect(r.remaining()).toBe(0);
    }
    const b = body(3);
    expect(() =>
      decodeAddPartitionsToTxnRequest(3, new KafkaReader(b.subarray(0, b.length - 5))),
    ).toThrow();
  });

  it("encodes every partition's code, flexible in v3", () => {
    const topics = decodeAddPartitionsToTxnRequest(3, new KafkaReader(body(3))).topics;
    const codes = new Map([
      ["t1/0", 0],
      ["t1/2", 3],
    ]);
    const r = new KafkaReader(encodeAddPartitionsToTxnResponse(3, topics, codes));
    expect(r.int32()).toBe(0);
    const read = r.compactArray((x) => {
      const t = {
        name: x.compactString(),
        ps: x.compactArray((y) => {
          const p = [y.int32(), y.int16()];
          y.taggedFields();
          return p;
        }),
      };
      x.taggedFields();
      return t;
    });
    r.taggedFields();
    expect(r.remaining()).toBe(0);
    expect(read).toEqual([
      {
        name: "t1",
        ps: [
          [0, 0],
          [2, 3],
        ],
      },
      { name: "t2", ps: [[1, -1]] },
    ]);
  });
});

describe("InitProducerId v5", () => {
  const deps = {
    logger: silentLogger(),
    metadata: () => undefined,
    initProducerId: async () => ({ producerId: 42n, producerEpoch: 0 }),
  } as unknown as KafkaDeps;

  function body(): Buffer {
    const w = new KafkaWriter(64).compactNullableString(null).int32(60_000);
    return unknownTag(w.int64(-1n).int16(-1));
  }

  it("answers an idempotent producer in the flexible layout, an unknown tagged field skipped", async () => {
    const r = new KafkaReader(await initProducerIdResponse(deps, 5, new KafkaReader(body())));
    expect([r.int32(), r.int16(), r.int64(), r.int16()]).toEqual([0, 0, 42n, 0]);
    r.taggedFields();
    expect(r.remaining()).toBe(0);
  });

  it("refuses a truncated frame", async () => {
    const b = body();
    await expect(
      initProducerIdResponse(deps, 5, new KafkaReader(b.subarray(0, b.length - 3))),
    ).rejects.toThrow();
  });
});

describe("ApiVersions v4 and the version table", () => {
  it("answers v4 as v3: the table, a throttle time, no features", () => {
    const w = new KafkaWriter(32).compactNullableString("apache-kafka-java");
    const req = unknownTag(w.compactNullableString("4.4.0"));
    const r = new KafkaReader(apiVersionsResponse(4, new KafkaReader(req)));
    expect(r.int16()).toBe(0);
    const table = r.compactArray((x) => {
      const e = [x.int16(), x.int16(), x.int16()];
      x.taggedFields();
      return e;
    });
    expect(r.int32()).toBe(0);
    r.taggedFields();
    expect(r.remaining()).toBe(0);
    expect(new Map(table.map(([k, min, max]) => [k, { min, max }]))).toEqual(SUPPORTED);
  });

  it("answers v5 (not served) in v0's layout with UNSUPPORTED_VERSION", () => {
    const r = new KafkaReader(apiVersionsResponse(5, undefined));
    expect(r.int16()).toBe(35);
    expect(r.array((x) => [x.int16(), x.int16(), x.int16()]).length).toBe(SUPPORTED.size);
  });

  it("reads the flexible header exactly from each API's first flexible version", () => {
    const since: Array<[number, number]> = [
      [API.Metadata, 9],
      [API.FindCoordinator, 3],
      [API.ApiVersions, 3],
      [API.InitProducerId, 2],
      [API.AddOffsetsToTxn, 3],
      [API.EndTxn, 3],
    ];
    for (const [key, first] of since) {
      const { max } = SUPPORTED.get(key)!;
      expect(flexibleRequest(key, first - 1)).toBe(false);
      for (let v = first; v <= max; v++) expect(flexibleRequest(key, v)).toBe(true);
      expect(flexibleRequest(key, max + 1)).toBe(false);
    }
  });
});
