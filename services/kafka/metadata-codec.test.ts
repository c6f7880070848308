// Metadata's layouts (metadata-codec.ts) against frames written field by field from Kafka's
// MetadataRequest/Response.json: the flexible request of v9-v13 (topic ids from v10, a topic by
// id only from v12, an unknown tagged field skipped, a truncated frame refused), the classic
// one of v1-v8, and the answers read back in both encodings. And the adapter
// (metadata-api.ts): tern's topics answer Kafka's zero id; a topic asked for by id is
// UNKNOWN_TOPIC_ID with a null name.
import { describe, expect, it } from "vitest";
import { silentLogger } from "../../libs/common/logger.js";
import type { ClusterMetadata } from "../../libs/metadata/types.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { metadataResponse } from "./metadata-api.js";
import {
  decodeMetadataRequest,
  encodeMetadataResponse,
  ZERO_UUID,
  type MetadataResponse,
} from "./metadata-codec.js";

const ID = Buffer.from("00112233445566778899aabbccddeeff", "hex");

/** A request as a Kafka client writes it: topics by name (and by id from v12), null for all. */
function requestBody(version: number, topics: Array<{ name: string | null; id?: Buffer }> | null) {
  const w = new KafkaWriter(128);
  if (version >= 9) {
    if (topics === null) w.uvarint(0);
    else
      w.compactArray(topics, (x, t) => {
        if (version >= 10) x.raw(t.id ?? ZERO_UUID);
        x.compactNullableString(t.name);
        x.uvarint(1).uvarint(3).uvarint(2).int16(7); // an unknown tagged field, skipped
      });
  } else if (topics === null) w.int32(-1);
  else w.array(topics, (x, t) => x.string(t.name!));
  if (version >= 4) w.bool(false);
  if (version >= 8 && version <= 10) w.bool(false);
  if (version >= 8) w.bool(false);
  if (version >= 9) w.noTaggedFields();
  return w.finish();
}

const ANSWER: MetadataResponse = {
  brokers: [{ nodeId: 1, host: "h1", port: 9092, rack: null }],
  clusterId: "c1",
  controllerId: 1,
  topics: [
    {
      errorCode: 0,
      name: "t1",
      topicId: ZERO_UUID,
      internal: false,
      partitions: [
        {
          errorCode: 0,
          partition: 0,
          leader: 1,
          leaderEpoch: 4,
          replicas: [1, 2],
          isr: [1],
          offline: [2],
        },
      ],
    },
  ],
};

/** Reads an answer back as a Kafka client would, field by field. */
function readAnswer(version: number, body: Buffer) {
  const flex = version >= 9;
  const r = new KafkaReader(body);
  const str = () => (flex ? r.compactNullableString() : r.nullableString());
  const arr = <T>(item: () => T): T[] =>
    flex ? r.compactArray(() => item()) : r.array(() => item());
  const tags = () => (flex ? r.taggedFields() : undefined);
  const throttle = r.int32();
  const brokers = arr(() => {
    const b = { nodeId: r.int32(), host: str(), port: r.int32(), rack: str() };
    tags();
    return b;
  });
  const clusterId = str();
  const controllerId = r.int32();
  const topics = arr(() => {
    const errorCode = r.int16();
    const name = str();
    const topicId = version >= 10 ? Buffer.from(r.bytesOf(16)) : undefined;
    const internal = r.bool();
    const partitions = arr(() => {
      const p = {
        errorCode: r.int16(),
        partition: r.int32(),
        leader: r.int32(),
        leaderEpoch: r.int32(),
        replicas: arr(() => r.int32()),
        isr: arr(() => r.int32()),
        offline: arr(() => r.int32()),
      };
      tags();
      return p;
    });
    const operations = r.int32();
    tags();
    return { errorCode, name, topicId, internal, partitions, operations };
  });
  const clusterOperations = version <= 10 ? r.int32() : undefined;
  const errorCode = version >= 13 ? r.int16() : undefined;
  tags();
  expect(r.remaining()).toBe(0);
  return { throttle, brokers, clusterId, controllerId, topics, clusterOperations, errorCode };
}

describe("Metadata layouts", () => {
  it("decodes v9-v13 (flexible) and v8, by name and for every topic", () => {
    for (const version of [8, 9, 10, 11, 12, 13]) {
      const r = new KafkaReader(requestBody(version, [{ name: "t1" }, { name: "t2" }]));
      expect(decodeMetadataRequest(version, r)).toEqual({
        topics: [
          { name: "t1", topicId: ZERO_UUID },
          { name: "t2", topicId: ZERO_UUID },
        ],
        allowAutoTopicCreation: false,
      });
      expect(r.remaining()).toBe(0);
      expect(
        decodeMetadataRequest(version, new KafkaReader(requestBody(version, null))).topics,
      ).toBeNull();
    }
  });

  it("decodes a topic by id from v12 and refuses one without a name before", () => {
    const byId = [{ name: null, id: ID }];
    expect(decodeMetadataRequest(12, new KafkaReader(requestBody(12, byId))).topics).toEqual([
      { name: null, topicId: ID },
    ]);
    expect(() => decodeMetadataRequest(11, new KafkaReader(requestBody(11, byId)))).toThrow(
      /without a name/,
    );
  });

  it("refuses a truncated flexible frame", () => {
    const body = requestBody(12, [{ name: "t1" }]);
    for (const cut of [1, 3, 10])
      expect(() =>
        decodeMetadataRequest(12, new KafkaReader(body.subarray(0, body.length - cut))),
      ).toThrow();
  });

  it("encodes the answer flexible from v9 (ids from v10, no cluster operations from v11, an error code in v13), classic before", () => {
    for (const version of [8, 9, 10, 11, 12, 13]) {
      const a = readAnswer(version, encodeMetadataResponse(version, ANSWER));
      expect(a).toMatchObject({ throttle: 0, clusterId: "c1", controllerId: 1 });
      expect(a.brokers).toEqual([{ nodeId: 1, host: "h1", port: 9092, rack: null }]);
      expect(a.topics).toEqual([
        {
          errorCode: 0,
          name: "t1",
          topicId: version >= 10 ? ZERO_UUID : undefined,
          internal: false,
          partitions: ANSWER.topics[0]!.partitions,
          operations: -2147483648,
        },
      ]);
      expect(a.clusterOperations).toBe(version <= 10 ? -2147483648 : undefined);
      expect(a.errorCode).toBe(version >= 13 ? 0 : undefined);
    }
  });
});

const metadata: ClusterMetadata = {
  version: "1",
  controllerLeader: 0,
  nodes: [{ role: "broker", nodeId: 1, address: "127.0.0.1:1", alive: true, incarnation: "1" }],
  topics: [
    {
      name: "t1",
      internal: false,
      role: "broker",
      config: {},
      partitions: [{ topic: "t1", partition: 0, replicas: [1], leader: 1, leaderTerm: 3 }],
    },
  ],
};

const deps = {
  role: "broker",
  nodeId: 1,
  clusterId: "c1",
  logger: silentLogger(),
  metadata: () => metadata,
  kafkaEndpoint: () => ({ host: "127.0.0.1", port: 9092 }),
} as unknown as KafkaDeps;

describe("Metadata adapter", () => {
  it("answers tern's topics with Kafka's zero id and a topic asked for by id as UNKNOWN_TOPIC_ID", () => {
    const all = readAnswer(12, metadataResponse(deps, 12, new KafkaReader(requestBody(12, null))));
    expect(all.topics.map((t) => [t.errorCode, t.name, t.topicId])).toEqual([[0, "t1", ZERO_UUID]]);
    expect(all.topics[0]!.partitions[0]).toMatchObject({ leader: 1, leaderEpoch: 3, isr: [1] });
    const asked = [{ name: null, id: ID }, { name: "t1" }, { name: "nope" }];
    const a = readAnswer(12, metadataResponse(deps, 12, new KafkaReader(requestBody(12, asked))));
    expect(a.topics.map((t) => [t.errorCode, t.name, t.topicId])).toEqual([
      [100, null, ID],
      [0, "t1", ZERO_UUID],
      [3, "nope", ZERO_UUID],
    ]);
  });
});

describe("Metadata adapter with topic ids", () => {
  const withId: ClusterMetadata = {
    ...metadata,
    topics: [{ ...metadata.topics[0]!, id: ID.toString("base64url") }],
  };
  const idDeps = { ...deps, metadata: () => withId } as unknown as KafkaDeps;

  it("answers a topic's id and finds a topic asked for by id; an unknown id is UNKNOWN_TOPIC_ID", () => {
    const all = readAnswer(
      12,
      metadataResponse(idDeps, 12, new KafkaReader(requestBody(12, null))),
    );
    expect(all.topics.map((t) => [t.errorCode, t.name, t.topicId])).toEqual([[0, "t1", ID]]);
    const other = Buffer.alloc(16, 7);
    const asked = [
      { name: null, id: ID },
      { name: null, id: other },
    ];
    const a = readAnswer(12, metadataResponse(idDeps, 12, new KafkaReader(requestBody(12, asked))));
    expect(a.topics.map((t) => [t.errorCode, t.name, t.topicId])).toEqual([
      [0, "t1", ID],
      [100, null, other],
    ]);
  });
});
