// The flexible versions a Kafka 4.x client sends first, frame by frame against the real
// listeners of a local cluster (helpers/kafka-raw-client.ts): ApiVersions v4, Metadata v12 (by
// name, for every topic, by an unknown id), FindCoordinator v4 with batched group and
// transactional keys (each the node the v2 answer names), InitProducerId v5, AddPartitionsToTxn
// v3, AddOffsetsToTxn v3 and EndTxn v4 on a broker (NOT_COORDINATOR in the flexible layout),
// ListGroups v5 (states filter), DescribeGroups v6 of an unknown group (GROUP_ID_NOT_FOUND), and a truncated
// flexible frame, which closes its own connection only.
import { beforeAll, describe, expect, it } from "vitest";
import { KafkaWriter, type KafkaReader } from "../../../libs/records/kafka-codec.js";
import type { ProcessCluster } from "../../../scripts/cluster/process-cluster.js";
import { API } from "../../../services/kafka/api-versions.js";
import { sharedCluster } from "../helpers/shared-cluster.js";
import { kafkaRequest, KafkaRawConnection } from "../helpers/kafka-raw-client.js";
import { okCli } from "../helpers/tern-cli.js";

const TOPIC = "flexible";
const COORDINATOR_NODE_ID_BASE = 1_000_000_000;
const NOT_COORDINATOR = 16;
const UNKNOWN_TOPIC_ID = 100;

let cluster: ProcessCluster;
let brokerPort: number;
let coordinatorPort: number;

/** One flexible call on a fresh connection. */
async function call<T>(
  port: number,
  apiKey: number,
  version: number,
  body: (w: KafkaWriter) => void,
  read: (r: KafkaReader) => T,
): Promise<T> {
  const c = await KafkaRawConnection.open(port);
  try {
    return read(await c.flexibleCall(apiKey, version, body));
  } finally {
    c.close();
  }
}

function metadataV12Body(names: readonly (string | null)[] | null, id?: Buffer) {
  return (w: KafkaWriter): void => {
    if (names === null) w.uvarint(0);
    else
      w.compactArray(names, (x, n) => {
        x.raw(n === null ? id! : Buffer.alloc(16))
          .compactNullableString(n)
          .noTaggedFields();
      });
    w.bool(false).bool(false).noTaggedFields();
  };
}

interface MetadataTopic {
  error: number;
  name: string | null;
  partitions: number;
}

function readMetadataV12(r: KafkaReader): { nodes: number[]; topics: MetadataTopic[] } {
  r.int32();
  const nodes = r.compactArray((x) => {
    const id = x.int32();
    x.compactString();
    x.int32();
    x.compactNullableString();
    x.taggedFields();
    return id;
  });
  r.compactNullableString();
  r.int32();
  const topics = r.compactArray((x) => {
    const error = x.int16();
    const name = x.compactNullableString();
    x.bytesOf(16);
    x.bool();
    const partitions = x.compactArray((y) => {
      y.int16();
      y.int32();
      y.int32();
      y.int32();
      for (let i = 0; i < 3; i++) y.compactArray((z) => z.int32());
      y.taggedFields();
    }).length;
    x.int32();
    x.taggedFields();
    return { error, name, partitions };
  });
  r.taggedFields();
  expect(r.remaining()).toBe(0);
  return { nodes, topics };
}

describe("flexible versions through the Kafka listeners", () => {
  beforeAll(async () => {
    cluster = await sharedCluster();
    brokerPort = cluster.spec("broker", 0).kafkaPort!;
    coordinatorPort = cluster.spec("coordinator", 0).kafkaPort!;
    const bootstrap = cluster.addresses("controller").join(",");
    await okCli(bootstrap, ["topics", "create", TOPIC, "-p", "2", "-r", "3"]);
  }, 240_000);

  it("ApiVersions v4 answers the table with the flexible versions", async () => {
    const c = await KafkaRawConnection.open(brokerPort);
    try {
      c.s.write(
        kafkaRequest(
          API.ApiVersions,
          4,
          1,
          (w) => w.compactNullableString("test").compactNullableString("1").noTaggedFields(),
          true,
        ),
      );
      const answer = (await c.next())!; // response header v0, as Kafka's
      expect(answer.body.int16()).toBe(0);
      const table = new Map(
        answer.body.compactArray((x) => {
          const e: [number, number] = [x.int16(), (x.int16(), x.int16())];
          x.taggedFields();
          return e;
        }),
      );
      expect(table.get(API.Metadata)).toBe(13);
      expect(table.get(API.FindCoordinator)).toBe(5);
      expect(table.get(API.EndTxn)).toBe(4);
    } finally {
      c.close();
    }
  });

  it("Metadata v12 answers topics by name and all, and an unknown id as UNKNOWN_TOPIC_ID", async () => {
    const byName = await call(
      brokerPort,
      API.Metadata,
      12,
      metadataV12Body([TOPIC, "no-such-topic"]),
      readMetadataV12,
    );
    expect(byName.nodes).toHaveLength(6); // 3 brokers, 3 coordinators
    expect(byName.topics).toEqual([
      { error: 0, name: TOPIC, partitions: 2 },
      { error: 3, name: "no-such-topic", partitions: 0 },
    ]);
    const all = await call(
      coordinatorPort,
      API.Metadata,
      12,
      metadataV12Body(null),
      readMetadataV12,
    );
    expect(all.topics.map((t) => t.name)).toContain(TOPIC);
    const id = Buffer.alloc(16, 7);
    const byId = await call(
      brokerPort,
      API.Metadata,
      12,
      metadataV12Body([null], id),
      readMetadataV12,
    );
    expect(byId.topics).toEqual([{ error: UNKNOWN_TOPIC_ID, name: null, partitions: 0 }]);
  });

  it("FindCoordinator v4 answers batched keys with the nodes v2 names one by one", async () => {
    const single = async (keyType: number, key: string): Promise<number> => {
      const c = await KafkaRawConnection.open(coordinatorPort);
      try {
        c.s.write(kafkaRequest(API.FindCoordinator, 2, 1, (w) => w.string(key).int8(keyType)));
        const r = (await c.next())!.body;
        r.int32();
        expect(r.int16()).toBe(0);
        r.nullableString();
        return r.int32();
      } finally {
        c.close();
      }
    };
    for (const [keyType, prefix] of [
      [0, "flex-group"],
      [1, "flex-txn"],
    ] as const) {
      const keys = Array.from({ length: 6 }, (_, i) => `${prefix}-${i}`);
      const entries = await call(
        coordinatorPort,
        API.FindCoordinator,
        4,
        (w) => {
          w.int8(keyType).compactArray(keys, (x, k) => x.compactNullableString(k));
          w.noTaggedFields();
        },
        (r) => {
          r.int32();
          const out = r.compactArray((x) => {
            const e = { key: x.compactString(), nodeId: x.int32() };
            x.compactString();
            x.int32();
            expect(x.int16()).toBe(0);
            x.compactNullableString();
            x.taggedFields();
            return e;
          });
          r.taggedFields();
          return out;
        },
      );
      expect(entries.map((e) => e.key)).toEqual(keys);
      for (const e of entries) {
        expect(e.nodeId >= COORDINATOR_NODE_ID_BASE).toBe(keyType === 1);
        expect(e.nodeId).toBe(await single(keyType, e.key));
      }
    }
  });

  it("InitProducerId v5 gives an idempotent producer an id; AddPartitionsToTxn v3, AddOffsetsToTxn v3 and EndTxn v4 on a broker are NOT_COORDINATOR", async () => {
    const init = await call(
      brokerPort,
      API.InitProducerId,
      5,
      (w) => w.compactNullableString(null).int32(60_000).int64(-1n).int16(-1).noTaggedFields(),
      (r) => ({ throttle: r.int32(), error: r.int16(), producerId: r.int64(), epoch: r.int16() }),
    );
    expect(init.error).toBe(0);
    expect(init.producerId >= 0n).toBe(true);
    const errorOf = (r: KafkaReader): number => (r.int32(), r.int16());
    const addOffsets = await call(
      brokerPort,
      API.AddOffsetsToTxn,
      3,
      (w) =>
        w.compactNullableString("t").int64(1n).int16(0).compactNullableString("g").noTaggedFields(),
      errorOf,
    );
    expect(addOffsets).toBe(NOT_COORDINATOR);
    const endTxn = await call(
      brokerPort,
      API.EndTxn,
      4,
      (w) => w.compactNullableString("t").int64(1n).int16(0).bool(true).noTaggedFields(),
      errorOf,
    );
    expect(endTxn).toBe(NOT_COORDINATOR);
    const addPartitions = await call(
      brokerPort,
      API.AddPartitionsToTxn,
      3,
      (w) => {
        w.compactNullableString("t").int64(1n).int16(0);
        w.compactArray([TOPIC], (x, name) => {
          x.compactNullableString(name).compactArray([0, 1], (y, p) => y.int32(p));
          x.noTaggedFields();
        });
        w.noTaggedFields();
      },
      (r) => {
        r.int32();
        return r.compactArray((x) => {
          const t = {
            name: x.compactString(),
            codes: x.compactArray((y) => {
              y.int32();
              const code = y.int16();
              y.taggedFields();
              return code;
            }),
          };
          x.taggedFields();
          return t;
        });
      },
    );
    expect(addPartitions).toEqual([{ name: TOPIC, codes: [NOT_COORDINATOR, NOT_COORDINATOR] }]);
  });

  it("ListGroups v5 and DescribeGroups v6 answer in the flexible layout", async () => {
    // v5 with a states filter and an empty types filter: the groups listed are Stable or Empty.
    const listed = await call(
      brokerPort,
      16,
      5,
      (w) =>
        w
          .compactArray(["Stable", "Empty"], (x, st) => x.compactNullableString(st))
          .uvarint(1)
          .noTaggedFields(),
      (r) => {
        r.int32();
        const error = r.int16();
        const groups = r.compactArray((x) => {
          const g = [x.compactString(), x.compactString(), x.compactString(), x.compactString()];
          x.taggedFields();
          return g;
        });
        r.taggedFields();
        expect(r.remaining()).toBe(0);
        for (const [, , state, type] of groups) {
          expect(["Stable", "Empty"]).toContain(state);
          expect(["classic", "consumer"]).toContain(type);
        }
        return error;
      },
    );
    expect(listed).toBe(0);
    // An unknown group, asked of the broker FindCoordinator names: GROUP_ID_NOT_FOUND from v6.
    const group = "flex-no-such-group";
    const coordinatorId = await call(
      brokerPort,
      API.FindCoordinator,
      4,
      (w) =>
        w
          .int8(0)
          .compactArray([group], (x, k) => x.compactNullableString(k))
          .noTaggedFields(),
      (r) => (r.int32(), r.compactArray((x) => (x.compactString(), x.int32()))[0]!),
    );
    const described = await call(
      cluster.spec("broker", coordinatorId).kafkaPort!,
      15,
      6,
      (w) =>
        w
          .compactArray([group], (x, g) => x.compactNullableString(g))
          .bool(false)
          .noTaggedFields(),
      (r) => {
        r.int32();
        return r.compactArray((x) => ({
          error: x.int16(),
          message: x.compactNullableString(),
          groupId: x.compactString(),
          state: x.compactString(),
        }));
      },
    );
    expect(described).toEqual([
      { error: 69, message: `group ${group} not found`, groupId: group, state: "Dead" },
    ]);
  });

  it("a truncated flexible frame closes its own connection only", async () => {
    const bystander = await KafkaRawConnection.open(brokerPort);
    const hostile = await KafkaRawConnection.open(brokerPort);
    try {
      const w = new KafkaWriter(64);
      const at = w.reserveInt32();
      w.int16(API.Metadata).int16(12).int32(1).nullableString("hostile").noTaggedFields();
      w.uvarint(5); // four topics announced, none sent
      w.fillInt32(at, w.pos - 4);
      hostile.s.write(Buffer.from(w.finish()));
      expect(await hostile.next()).toBeUndefined();
      expect(hostile.closed).toBe(true);
      const answer = await bystander.flexibleCall(API.Metadata, 12, metadataV12Body([TOPIC]));
      expect(readMetadataV12(answer).topics[0]).toMatchObject({ error: 0, name: TOPIC });
    } finally {
      bystander.close();
      hostile.close();
    }
  });
});
