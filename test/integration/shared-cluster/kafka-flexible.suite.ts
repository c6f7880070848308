// The flexible versions a Kafka 4.x client sends first, frame by frame against the real
// listeners of a local cluster (helpers/kafka-raw-client.ts): ApiVersions v4, Metadata v12 (by
// name, for every topic, by an unknown id), FindCoordinator v4 with batched group and
// transactional keys (each the node the v2 answer names), InitProducerId v5, AddPartitionsToTxn
// v3, AddOffsetsToTxn v3 and EndTxn v4 on a broker (NOT_COORDINATOR in the flexible layout),
// ListGroups v5 (states filter), DescribeGroups v6 of an unknown group (GROUP_ID_NOT_FOUND), a truncated
// flexible frame, which closes its own connection only; and the data path: Produce v11 and
// Fetch v12 (compact records; a non-leader names the leader and its endpoint, KIP-951; a stale
// or future current_leader_epoch is fenced; an unknown fetch session is refused), ListOffsets
// v9 by every timestamp sentinel, fetch sessions (KIP-227) on one connection, and OffsetCommit
// v8/v9 to an unknown group. Transactions V2 (KIP-890 part 2): ApiVersions finalizes
// transaction.version 2, Produce v12 adds its partition without AddPartitionsToTxn, EndTxn v5
// answers the bumped epoch, AddPartitionsToTxn v4 verifies for brokers, and a late batch of an
// ended transaction is refused.
import { beforeAll, describe, expect, it } from "vitest";
import { KafkaReader, KafkaWriter } from "../../../libs/records/kafka-codec.js";
import { until } from "../../../libs/common/poll.js";
import { encodeBatch } from "../../../services/kafka/record-batch.js";
import type { ProcessCluster } from "../../../scripts/cluster/process-cluster.js";
import { API } from "../../../services/kafka/api-versions.js";
import { sharedCluster } from "../helpers/shared-cluster.js";
import { kafkaRequest, KafkaRawConnection } from "../helpers/kafka-raw-client.js";
import { okCli } from "../helpers/tern-cli.js";

const TOPIC = "flexible";
/** Two partitions: transactions V2 write partition 0 only. */
const TXN_TOPIC = "flexible-txn";
/** One partition, written and read by the data-path tests in order. */
const DATA_TOPIC = "flexible-data";
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

function readMetadataV12(
  r: KafkaReader,
  ids?: Map<string | null, Buffer>,
): { nodes: number[]; topics: MetadataTopic[] } {
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
    const id = Buffer.from(x.bytesOf(16));
    ids?.set(name, id);
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

/** A tagged-field section read into its fields, each a reader over its bytes. */
function readTags(r: KafkaReader): Map<number, KafkaReader> {
  const out = new Map<number, KafkaReader>();
  const n = r.uvarint();
  for (let i = 0; i < n; i++) {
    const tag = r.uvarint();
    out.set(tag, new KafkaReader(Buffer.from(r.bytesOf(r.uvarint()))));
  }
  return out;
}

/** Partition 0's leader and leader epoch, as Metadata v12 answers them. */
async function leaderOf(topic: string): Promise<{ leader: number; epoch: number }> {
  return call(brokerPort, API.Metadata, 12, metadataV12Body([topic]), (r) => {
    r.int32();
    r.compactArray((x) => {
      x.int32();
      x.compactString();
      x.int32();
      x.compactNullableString();
      x.taggedFields();
    });
    r.compactNullableString();
    r.int32();
    const [t] = r.compactArray((x) => {
      x.int16();
      x.compactNullableString();
      x.bytesOf(16);
      x.bool();
      const partitions = x.compactArray((y) => {
        y.int16();
        const p = { index: y.int32(), leader: y.int32(), epoch: y.int32() };
        for (let i = 0; i < 3; i++) y.compactArray((z) => z.int32());
        y.taggedFields();
        return p;
      });
      x.int32();
      x.taggedFields();
      return partitions;
    });
    const p = t?.find((q) => q.index === 0);
    return { leader: p?.leader ?? -1, epoch: p?.epoch ?? -1 };
  });
}

/** A batch of records with these timestamps (keys k0.., values v0..). */
function timestampedBatch(timestamps: readonly number[]): Buffer {
  const w = new KafkaWriter(256);
  encodeBatch(w, {
    baseOffset: 0n,
    producerId: -1n,
    producerEpoch: -1,
    baseSequence: -1,
    isTransactional: false,
    records: timestamps.map((timestampMs, i) => ({
      key: Buffer.from(`k${i}`),
      value: Buffer.from(`v${i}`),
      headers: [],
      timestampMs,
    })),
  });
  return Buffer.from(w.finish());
}

interface ProducePartitionAnswer {
  error: number;
  baseOffset: bigint;
  tags: Map<number, KafkaReader>;
}

/** Produce v11 of one batch to partition 0 of a topic: the partition's answer and the answer's tags. */
function produceV11(
  port: number,
  topic: string,
  batch: Buffer,
): Promise<{ partition: ProducePartitionAnswer; tags: Map<number, KafkaReader> }> {
  return produceFlexible(port, 11, null, topic, batch);
}

/** Produce v9+ of one batch to partition 0 of a topic, under a transactional id or none. */
async function produceFlexible(
  port: number,
  version: number,
  transactionalId: string | null,
  topic: string,
  batch: Buffer,
): Promise<{ partition: ProducePartitionAnswer; tags: Map<number, KafkaReader> }> {
  return call(
    port,
    API.Produce,
    version,
    (w) => {
      w.compactNullableString(transactionalId).int16(-1).int32(10_000);
      w.compactArray([topic], (x, name) => {
        x.compactNullableString(name);
        x.compactArray([0], (y, p) => {
          y.int32(p)
            .uvarint(batch.byteLength + 1)
            .raw(batch);
          y.noTaggedFields();
        });
        x.noTaggedFields();
      });
      w.noTaggedFields();
    },
    (r) => {
      const [partition] = r.compactArray((x) => {
        x.compactString();
        const ps = x.compactArray((y) => {
          y.int32();
          const error = y.int16();
          const baseOffset = y.int64();
          y.int64(); // log append time
          y.int64(); // log start offset
          y.compactArray((z) => (z.int32(), z.compactNullableString()));
          y.compactNullableString();
          return { error, baseOffset, tags: readTags(y) };
        });
        x.taggedFields();
        return ps[0]!;
      });
      r.int32(); // throttle
      const tags = readTags(r);
      expect(r.remaining()).toBe(0);
      return { partition: partition!, tags };
    },
  );
}

/** A transactional batch of `count` records of a producer, from a sequence. */
function transactionalBatch(
  producerId: bigint,
  producerEpoch: number,
  baseSequence: number,
  count: number,
): Buffer {
  const w = new KafkaWriter(256);
  encodeBatch(w, {
    baseOffset: 0n,
    producerId,
    producerEpoch,
    baseSequence,
    isTransactional: true,
    records: Array.from({ length: count }, (_, i) => ({
      key: null,
      value: Buffer.from(`txn-${producerEpoch}-${baseSequence + i}`),
      headers: [],
      timestampMs: Date.now(),
    })),
  });
  return Buffer.from(w.finish());
}

/** The Kafka port of a transactional id's coordinator (FindCoordinator v2). */
async function transactionCoordinatorPort(transactionalId: string): Promise<number> {
  const c = await KafkaRawConnection.open(coordinatorPort);
  try {
    c.s.write(kafkaRequest(API.FindCoordinator, 2, 1, (w) => w.string(transactionalId).int8(1)));
    const r = (await c.next())!.body;
    r.int32();
    expect(r.int16()).toBe(0);
    r.nullableString();
    r.int32();
    r.string();
    return r.int32();
  } finally {
    c.close();
  }
}

/** EndTxn v5: its error and the producer id and epoch of the next transaction. */
function endTxnV5(
  port: number,
  transactionalId: string,
  producerId: bigint,
  producerEpoch: number,
  committed: boolean,
): Promise<{ error: number; producerId: bigint; producerEpoch: number }> {
  return call(
    port,
    API.EndTxn,
    5,
    (w) =>
      w
        .compactNullableString(transactionalId)
        .int64(producerId)
        .int16(producerEpoch)
        .bool(committed)
        .noTaggedFields(),
    (r) => {
      r.int32();
      const answer = { error: r.int16(), producerId: r.int64(), producerEpoch: r.int16() };
      r.taggedFields();
      expect(r.remaining()).toBe(0);
      return answer;
    },
  );
}

/** AddPartitionsToTxn v4 of one transaction: the top-level error and each partition's code. */
function addPartitionsV4(
  port: number,
  transactionalId: string,
  producerId: bigint,
  producerEpoch: number,
  verifyOnly: boolean,
  topic: string,
  partitions: readonly number[],
): Promise<{ error: number; transactions: Array<{ id: string; codes: number[] }> }> {
  return call(
    port,
    API.AddPartitionsToTxn,
    4,
    (w) => {
      w.compactArray([transactionalId], (x, id) => {
        x.compactNullableString(id).int64(producerId).int16(producerEpoch).bool(verifyOnly);
        x.compactArray([topic], (y, name) => {
          y.compactNullableString(name).compactArray(partitions, (z, p) => z.int32(p));
          y.noTaggedFields();
        });
        x.noTaggedFields();
      });
      w.noTaggedFields();
    },
    (r) => {
      r.int32();
      const error = r.int16();
      const transactions = r.compactArray((x) => {
        const id = x.compactString();
        const codes = x
          .compactArray((y) => {
            y.compactString();
            const cs = y.compactArray((z) => {
              z.int32();
              const code = z.int16();
              z.taggedFields();
              return code;
            });
            y.taggedFields();
            return cs;
          })
          .flat();
        x.taggedFields();
        return { id, codes };
      });
      r.taggedFields();
      expect(r.remaining()).toBe(0);
      return { error, transactions };
    },
  );
}

interface FetchPartitionAnswer {
  error: number;
  highWatermark: bigint;
  lastStableOffset: bigint;
  records: Buffer | null;
  tags: Map<number, KafkaReader>;
}

/** A fetch's session fields: id and epoch, and whether it names partition 0 or forgets it. */
interface FetchSessionFields {
  readonly id: number;
  readonly epoch: number;
  readonly omitPartition?: boolean;
  readonly forget?: boolean;
}

const SESSIONLESS: FetchSessionFields = { id: 0, epoch: -1 };

/**
 * Fetch v12 of partition 0 of a topic from an offset, on a fresh connection to a port or on an
 * open one: the answer's error, session id and first partition.
 */
async function fetchV12(
  target: number | KafkaRawConnection,
  topic: string,
  fetchOffset: bigint,
  currentLeaderEpoch: number,
  session: FetchSessionFields = SESSIONLESS,
): Promise<{ error: number; sessionId: number; partition: FetchPartitionAnswer | undefined }> {
  const c = typeof target === "number" ? await KafkaRawConnection.open(target) : target;
  try {
    const r = await c.flexibleCall(API.Fetch, 12, (w) => {
      w.int32(-1)
        .int32(100)
        .int32(1)
        .int32(1 << 20)
        .int8(1); // replica, wait, min/max bytes, read_committed
      w.int32(session.id).int32(session.epoch);
      const asked = session.omitPartition === true ? [] : [topic];
      w.compactArray(asked, (x, name) => {
        x.compactNullableString(name);
        x.compactArray([0], (y, p) => {
          y.int32(p).int32(currentLeaderEpoch).int64(fetchOffset).int32(-1).int64(-1n);
          y.int32(1 << 20).noTaggedFields();
        });
        x.noTaggedFields();
      });
      w.compactArray(session.forget === true ? [topic] : [], (x, name) => {
        x.compactNullableString(name).compactArray([0], (y, p) => y.int32(p));
        x.noTaggedFields();
      });
      w.compactNullableString(""); // rack
      w.noTaggedFields();
    });
    r.int32();
    const error = r.int16();
    const id = r.int32();
    const topics = r.compactArray((x) => {
      x.compactString();
      const ps = x.compactArray((y) => {
        y.int32();
        const p = {
          error: y.int16(),
          highWatermark: y.int64(),
          lastStableOffset: y.int64(),
        };
        y.int64(); // log start
        y.compactNullableArray((z) => (z.int64(), z.int64(), z.taggedFields()));
        y.int32(); // preferred read replica
        const records = y.compactNullableBytes();
        return { ...p, records: records && Buffer.from(records), tags: readTags(y) };
      });
      x.taggedFields();
      return ps[0]!;
    });
    r.taggedFields();
    expect(r.remaining()).toBe(0);
    return { error, sessionId: id, partition: topics[0] };
  } finally {
    if (typeof target === "number") c.close();
  }
}

/** The record count of each batch in a records section (batch v2: the count at byte 57). */
function batchRecordCounts(records: Buffer): number[] {
  const out: number[] = [];
  for (let at = 0; at + 61 <= records.byteLength; at += 12 + records.readInt32BE(at + 8))
    out.push(records.readInt32BE(at + 57));
  return out;
}

describe("flexible versions through the Kafka listeners", () => {
  beforeAll(async () => {
    cluster = await sharedCluster();
    brokerPort = cluster.spec("broker", 0).kafkaPort!;
    coordinatorPort = cluster.spec("coordinator", 0).kafkaPort!;
    const bootstrap = cluster.addresses("controller").join(",");
    await okCli(bootstrap, ["topics", "create", TOPIC, "-p", "2", "-r", "3"]);
    await okCli(bootstrap, ["topics", "create", DATA_TOPIC, "-p", "1", "-r", "3"]);
    await okCli(bootstrap, ["topics", "create", TXN_TOPIC, "-p", "2", "-r", "3"]);
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
      expect(table.get(API.EndTxn)).toBe(5);
    } finally {
      c.close();
    }
  });

  it("ApiVersions v4 and v3 finalize transaction.version 2 under an epoch; v4 also names its supported range", async () => {
    for (const [port, version] of [
      [brokerPort, 4],
      [coordinatorPort, 3],
    ] as const) {
      const c = await KafkaRawConnection.open(port);
      try {
        c.s.write(
          kafkaRequest(
            API.ApiVersions,
            version,
            1,
            (w) => w.compactNullableString("test").compactNullableString("1").noTaggedFields(),
            true,
          ),
        );
        const r = (await c.next())!.body;
        expect(r.int16()).toBe(0);
        const table = new Map(
          r.compactArray((x) => {
            const e: [number, number] = [x.int16(), (x.int16(), x.int16())];
            x.taggedFields();
            return e;
          }),
        );
        expect([table.get(API.EndTxn), table.get(API.Produce)]).toEqual([5, 12]);
        r.int32(); // throttle
        const tags = readTags(r);
        const features = (x: KafkaReader): Array<[string, number, number]> =>
          x.compactArray((y) => {
            const e: [string, number, number] = [y.compactString(), y.int16(), y.int16()];
            y.taggedFields();
            return e;
          });
        const supported = features(tags.get(0)!);
        expect(supported.find(([n]) => n === "transaction.version")).toEqual(
          version >= 4 ? ["transaction.version", 0, 2] : undefined,
        );
        expect(tags.get(1)!.int64()).toBeGreaterThanOrEqual(0n);
        expect(features(tags.get(2)!)).toContainEqual(["transaction.version", 2, 2]);
      } finally {
        c.close();
      }
    }
  });

  it("transactions V2: Produce v12 adds its partition, EndTxn v5 answers the bumped epoch, a late batch of the ended transaction is refused", async () => {
    const transactionalId = `flex-v2-${Date.now()}`;
    const txnPort = await transactionCoordinatorPort(transactionalId);
    const init = await call(
      txnPort,
      API.InitProducerId,
      5,
      (w) =>
        w
          .compactNullableString(transactionalId)
          .int32(60_000)
          .int64(-1n)
          .int16(-1)
          .noTaggedFields(),
      (r) => ({ throttle: r.int32(), error: r.int16(), producerId: r.int64(), epoch: r.int16() }),
    );
    expect(init.error).toBe(0);
    const { producerId, epoch } = init;
    const { leader, epoch: leaderEpoch } = await until(
      "a leader for the transactions topic",
      60_000,
      async () => {
        const l = await leaderOf(TXN_TOPIC);
        return l.leader >= 0 ? l : undefined;
      },
      { intervalMs: 250 },
    );
    const leaderPort = cluster.spec("broker", leader).kafkaPort!;

    // No AddPartitionsToTxn: the v12 produce adds partition 0 to the transaction itself.
    const first = await produceFlexible(
      leaderPort,
      12,
      transactionalId,
      TXN_TOPIC,
      transactionalBatch(producerId, epoch, 0, 2),
    );
    expect(first.partition).toMatchObject({ error: 0, baseOffset: 0n });
    // Brokers' verify-only AddPartitionsToTxn v4: partition 0 is in it, partition 1 is not.
    expect(
      await addPartitionsV4(txnPort, transactionalId, producerId, epoch, true, TXN_TOPIC, [0, 1]),
    ).toEqual({ error: 0, transactions: [{ id: transactionalId, codes: [0, 48] }] });
    // v11 (transactions V1) only verifies: the partition the v12 produce added is in it.
    const v1 = await produceFlexible(
      leaderPort,
      11,
      transactionalId,
      TXN_TOPIC,
      transactionalBatch(producerId, epoch, 2, 1),
    );
    expect(v1.partition.error).toBe(0);

    const committed = await endTxnV5(txnPort, transactionalId, producerId, epoch, true);
    expect(committed).toEqual({ error: 0, producerId, producerEpoch: epoch + 1 });
    // The marker follows the answer: read_committed sees the 3 records once it is written.
    const stable = await until(
      "the commit marker",
      30_000,
      async () => {
        const f = await fetchV12(leaderPort, TXN_TOPIC, 0n, leaderEpoch);
        return f.partition?.lastStableOffset === 4n ? f.partition : undefined;
      },
      { intervalMs: 100 },
    );
    expect(batchRecordCounts(stable.records!).slice(0, 2)).toEqual([2, 1]);

    // A late batch of the ended transaction (its epoch, the next sequence): refused.
    const late = await produceFlexible(
      leaderPort,
      12,
      transactionalId,
      TXN_TOPIC,
      transactionalBatch(producerId, epoch, 3, 1),
    );
    // The leader asks the coordinator to add the partition for the old epoch: PRODUCER_FENCED.
    expect(late.partition.error).toBe(90);
    // The next transaction runs on the bumped epoch from sequence 0, and an abort bumps again.
    const second = await produceFlexible(
      leaderPort,
      12,
      transactionalId,
      TXN_TOPIC,
      transactionalBatch(producerId, epoch + 1, 0, 1),
    );
    expect(second.partition).toMatchObject({ error: 0, baseOffset: 4n });
    expect(await endTxnV5(txnPort, transactionalId, producerId, epoch + 1, false)).toEqual({
      error: 0,
      producerId,
      producerEpoch: epoch + 2,
    });
    // A retry of the old epoch's EndTxn is fenced, with -1/-1 for the identity.
    expect(await endTxnV5(txnPort, transactionalId, producerId, epoch, true)).toEqual({
      error: 90,
      producerId: -1n,
      producerEpoch: -1,
    });
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

  it("Metadata v12 answers each topic's id, the one `tern topics describe` shows, and finds the topic by it", async () => {
    const ids = new Map<string | null, Buffer>();
    await call(brokerPort, API.Metadata, 12, metadataV12Body([TOPIC]), (r) =>
      readMetadataV12(r, ids),
    );
    const id = ids.get(TOPIC)!;
    expect(id.equals(Buffer.alloc(16))).toBe(false);
    const bootstrap = cluster.addresses("controller").join(",");
    const described = JSON.parse(
      (await okCli(bootstrap, ["--json", "topics", "describe", TOPIC])).stdout,
    ) as Array<{ id: string }>;
    expect(described[0]!.id).toBe(id.toString("base64url"));
    const byId = await call(
      coordinatorPort,
      API.Metadata,
      12,
      metadataV12Body([null], id),
      readMetadataV12,
    );
    expect(byId.topics).toEqual([{ error: 0, name: TOPIC, partitions: 2 }]);
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

  it("Produce v11 and Fetch v12 write and read in the flexible layout; other brokers name the leader, stale and future epochs are fenced", async () => {
    const { leader, epoch } = await until(
      "a leader for the data topic",
      60_000,
      async () => {
        const l = await leaderOf(DATA_TOPIC);
        return l.leader >= 0 ? l : undefined;
      },
      { intervalMs: 250 },
    );
    expect(epoch).toBeGreaterThanOrEqual(1);
    const leaderPort = cluster.spec("broker", leader).kafkaPort!;
    const otherPort = cluster.spec("broker", (leader + 1) % 3).kafkaPort!;
    const base = Date.now() - 60_000;
    const batch = timestampedBatch([base, base + 5_000, base + 1_000]);

    const written = await produceV11(leaderPort, DATA_TOPIC, batch);
    expect(written.partition).toMatchObject({ error: 0, baseOffset: 0n });
    expect(written.partition.tags.size).toBe(0);
    expect(written.tags.size).toBe(0);

    // Another broker: NOT_LEADER_OR_FOLLOWER with the current leader and its endpoint (v10+).
    const moved = await produceV11(otherPort, DATA_TOPIC, batch);
    expect(moved.partition.error).toBe(6);
    const current = moved.partition.tags.get(0)!;
    expect([current.int32(), current.int32()]).toEqual([leader, epoch]);
    const nodes = moved.tags.get(0)!.compactArray((x) => {
      const n = { id: x.int32(), host: x.compactString(), port: x.int32() };
      x.compactNullableString();
      x.taggedFields();
      return n;
    });
    expect(nodes).toEqual([{ id: leader, host: "127.0.0.1", port: leaderPort }]);

    const read = await fetchV12(leaderPort, DATA_TOPIC, 0n, epoch);
    expect(read.error).toBe(0);
    expect(read.sessionId).toBe(0); // sessionless
    expect(read.partition).toMatchObject({ error: 0, highWatermark: 3n, lastStableOffset: 3n });
    expect(batchRecordCounts(read.partition!.records!)).toEqual([3]);
    expect(read.partition!.tags.size).toBe(0); // no diverging epoch, no leader change

    const fenced = await fetchV12(leaderPort, DATA_TOPIC, 0n, epoch - 1);
    expect(fenced.partition).toMatchObject({ error: 74, highWatermark: -1n });
    expect(fenced.partition!.records).toEqual(Buffer.alloc(0));
    const fencedLeader = fenced.partition!.tags.get(1)!;
    expect([fencedLeader.int32(), fencedLeader.int32()]).toEqual([leader, epoch]);
    expect((await fetchV12(leaderPort, DATA_TOPIC, 0n, epoch + 1)).partition!.error).toBe(75);

    const elsewhere = await fetchV12(otherPort, DATA_TOPIC, 0n, epoch);
    expect(elsewhere.partition!.error).toBe(6);
    const named = elsewhere.partition!.tags.get(1)!;
    expect([named.int32(), named.int32()]).toEqual([leader, epoch]);

    // An incremental fetch of a session never created: FETCH_SESSION_ID_NOT_FOUND, flexible.
    const session = await fetchV12(leaderPort, DATA_TOPIC, 0n, epoch, { id: 12345, epoch: 1 });
    expect(session).toEqual({ error: 70, sessionId: 0, partition: undefined });
  });

  it("ListOffsets v9 answers earliest, latest, max timestamp, earliest local and latest tiered; a stale epoch is fenced", async () => {
    const { leader, epoch } = await leaderOf(DATA_TOPIC);
    const ask = (timestamp: bigint, currentLeaderEpoch = epoch) =>
      call(
        cluster.spec("broker", leader).kafkaPort!,
        API.ListOffsets,
        9,
        (w) => {
          w.int32(-1).int8(0);
          w.compactArray([DATA_TOPIC], (x, name) => {
            x.compactNullableString(name);
            x.compactArray([0], (y, p) => {
              y.int32(p).int32(currentLeaderEpoch).int64(timestamp).noTaggedFields();
            });
            x.noTaggedFields();
          });
          w.noTaggedFields();
        },
        (r) => {
          r.int32();
          const [answer] = r.compactArray((x) => {
            x.compactString();
            const [p] = x.compactArray((y) => {
              y.int32();
              const a = { error: y.int16(), timestamp: y.int64(), offset: y.int64() };
              expect(y.int32()).toBe(-1); // leader epoch: batches carry none
              y.taggedFields();
              return a;
            });
            x.taggedFields();
            return p;
          });
          r.taggedFields();
          expect(r.remaining()).toBe(0);
          return answer;
        },
      );
    // The batch of the previous test: timestamps base, base + 5 s, base + 1 s at offsets 0-2.
    const latest = await ask(-1n);
    expect(latest).toEqual({ error: 0, timestamp: -1n, offset: 3n });
    expect(await ask(-2n)).toEqual({ error: 0, timestamp: -1n, offset: 0n });
    const max = await ask(-3n);
    expect(max.offset).toBe(1n);
    const byTime = await ask(max.timestamp - 4_000n); // base + 1 s: the first at or after is offset 1
    expect(byTime).toEqual({ error: 0, timestamp: max.timestamp, offset: 1n });
    expect(await ask(-4n)).toEqual({ error: 0, timestamp: -1n, offset: 0n });
    expect(await ask(-5n)).toEqual({ error: 0, timestamp: -1n, offset: -1n });
    expect((await ask(-1n, epoch - 1)).error).toBe(74);
    expect((await ask(-1n, epoch + 1)).error).toBe(75);
  });

  it("Fetch v12 sessions: a full fetch makes one, incremental fetches answer what changed, a wrong epoch or another connection is refused", async () => {
    const { leader, epoch } = await leaderOf(DATA_TOPIC);
    const leaderPort = cluster.spec("broker", leader).kafkaPort!;
    const c = await KafkaRawConnection.open(leaderPort);
    const other = await KafkaRawConnection.open(leaderPort);
    try {
      // The topic holds the 3 records of the tests above.
      const full = await fetchV12(c, DATA_TOPIC, 0n, epoch, { id: 0, epoch: 0 });
      expect(full.error).toBe(0);
      expect(full.sessionId).not.toBe(0);
      expect(full.partition).toMatchObject({ error: 0, highWatermark: 3n });
      const id = full.sessionId;
      // The position moved to 3 and nothing else changed: the answer carries no partition.
      const quiet = await fetchV12(c, DATA_TOPIC, 3n, epoch, { id, epoch: 1 });
      expect(quiet).toEqual({ error: 0, sessionId: id, partition: undefined });
      // A new record: the partition (still at 3, not named again) is answered with it.
      const written = await produceV11(leaderPort, DATA_TOPIC, timestampedBatch([Date.now()]));
      expect(written.partition.error).toBe(0);
      const moved = await fetchV12(c, DATA_TOPIC, 0n, epoch, { id, epoch: 2, omitPartition: true });
      expect(moved.sessionId).toBe(id);
      expect(moved.partition).toMatchObject({ error: 0, highWatermark: 4n });
      expect(batchRecordCounts(moved.partition!.records!)).toEqual([1]);
      // The same epoch again: INVALID_FETCH_SESSION_EPOCH; the id on another connection: not found.
      expect(
        await fetchV12(c, DATA_TOPIC, 4n, epoch, { id, epoch: 2, omitPartition: true }),
      ).toEqual({ error: 71, sessionId: 0, partition: undefined });
      expect(
        await fetchV12(other, DATA_TOPIC, 4n, epoch, { id, epoch: 3, omitPartition: true }),
      ).toEqual({ error: 70, sessionId: 0, partition: undefined });
      // The session is still there at its epoch; forgetting the partition leaves nothing to answer.
      const forgot = await fetchV12(c, DATA_TOPIC, 4n, epoch, {
        id,
        epoch: 3,
        omitPartition: true,
        forget: true,
      });
      expect(forgot).toEqual({ error: 0, sessionId: id, partition: undefined });
      // Epoch -1 closes it: a sessionless answer, and the id is gone.
      const closed = await fetchV12(c, DATA_TOPIC, 4n, epoch, { id, epoch: -1 });
      expect(closed).toMatchObject({ error: 0, sessionId: 0, partition: { error: 0 } });
      expect(
        await fetchV12(c, DATA_TOPIC, 4n, epoch, { id, epoch: 4, omitPartition: true }),
      ).toEqual({ error: 70, sessionId: 0, partition: undefined });
    } finally {
      c.close();
      other.close();
    }
  });

  it("OffsetCommit v9 to an unknown group with a generation is GROUP_ID_NOT_FOUND, v8 ILLEGAL_GENERATION; a simple commit is taken", async () => {
    const group = "flex-commit-no-such-group";
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
    const commit = (version: number, generation: number, memberId: string) =>
      call(
        cluster.spec("broker", coordinatorId).kafkaPort!,
        8,
        version,
        (w) => {
          w.compactNullableString(group).int32(generation).compactNullableString(memberId);
          w.compactNullableString(null);
          w.compactArray([DATA_TOPIC], (x, name) => {
            x.compactNullableString(name);
            x.compactArray([0], (y, p) => {
              y.int32(p).int64(2n).int32(-1).compactNullableString("m").noTaggedFields();
            });
            x.noTaggedFields();
          });
          w.noTaggedFields();
        },
        (r) => {
          r.int32();
          const codes = r.compactArray((x) => {
            x.compactString();
            const c = x.compactArray((y) => {
              y.int32();
              const code = y.int16();
              y.taggedFields();
              return code;
            });
            x.taggedFields();
            return c;
          });
          r.taggedFields();
          expect(r.remaining()).toBe(0);
          return codes.flat();
        },
      );
    expect(await commit(9, 3, "member-1")).toEqual([69]);
    expect(await commit(8, 3, "member-1")).toEqual([22]);
    expect(await commit(9, -1, "")).toEqual([0]);
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
  /** The Kafka port of the broker FindCoordinator v4 names for a group. */
  async function groupCoordinatorPort(group: string): Promise<number> {
    const id = await call(
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
    return cluster.spec("broker", id).kafkaPort!;
  }

  interface Beat {
    memberId: string;
    epoch: number;
    /** null leaves a field as it was (Kafka's "unchanged"). */
    topics?: string[] | null;
    rebalanceTimeoutMs?: number;
    owned?: Array<{ id: Buffer; partitions: number[] }> | null;
  }

  interface BeatAnswer {
    error: number;
    message: string | null;
    memberId: string | null;
    epoch: number;
    interval: number;
    assignment: Array<{ id: string; partitions: number[] }> | null;
  }

  async function consumerHeartbeat(
    port: number,
    version: number,
    group: string,
    b: Beat,
  ): Promise<BeatAnswer> {
    return call(
      port,
      68,
      version,
      (w) => {
        w.compactNullableString(group).compactNullableString(b.memberId).int32(b.epoch);
        w.compactNullableString(null).compactNullableString(null); // instance id, rack id
        w.int32(b.rebalanceTimeoutMs ?? -1);
        const topics = b.topics ?? null;
        if (topics === null) w.uvarint(0);
        else w.compactArray(topics, (x, t) => x.compactNullableString(t));
        if (version >= 1) w.compactNullableString(null); // regex
        w.compactNullableString(null); // server assignor
        const owned = b.owned ?? null;
        if (owned === null) w.uvarint(0);
        else
          w.compactArray(owned, (x, tp) => {
            x.raw(tp.id).compactArray(tp.partitions, (y, p) => y.int32(p));
            x.noTaggedFields();
          });
        w.noTaggedFields();
      },
      (r) => {
        r.int32();
        const error = r.int16();
        const message = r.compactNullableString();
        const memberId = r.compactNullableString();
        const epoch = r.int32();
        const interval = r.int32();
        let assignment: BeatAnswer["assignment"] = null;
        if (r.int8() === 1) {
          assignment = r.compactArray((x) => {
            const id = Buffer.from(x.bytesOf(16)).toString("base64url");
            const partitions = x.compactArray((y) => y.int32());
            x.taggedFields();
            return { id, partitions };
          });
          r.taggedFields();
        }
        r.taggedFields();
        expect(r.remaining()).toBe(0);
        return { error, message, memberId, epoch, interval, assignment };
      },
    );
  }

  async function consumerGroupDescribe(port: number, group: string) {
    return call(
      port,
      69,
      1,
      (w) =>
        w
          .compactArray([group], (x, g) => x.compactNullableString(g))
          .bool(false)
          .noTaggedFields(),
      (r) => {
        r.int32();
        const groups = r.compactArray((x) => {
          const error = x.int16();
          x.compactNullableString();
          const groupId = x.compactString();
          const state = x.compactString();
          x.int32();
          x.int32();
          const assignor = x.compactString();
          const members = x.compactArray((y) => {
            const memberId = y.compactString();
            y.compactNullableString();
            y.compactNullableString();
            const epoch = y.int32();
            y.compactString();
            y.compactString();
            const topics = y.compactArray((z) => z.compactString());
            y.compactNullableString();
            const assignments = [0, 1].map(() => {
              const tps = y.compactArray((z) => {
                const id = Buffer.from(z.bytesOf(16)).toString("base64url");
                const name = z.compactString();
                const partitions = z.compactArray((p) => p.int32());
                z.taggedFields();
                return { id, name, partitions };
              });
              y.taggedFields();
              return tps;
            });
            const type = y.int8();
            y.taggedFields();
            return { memberId, epoch, topics, assigned: assignments[0]!, type };
          });
          x.int32();
          x.taggedFields();
          return { error, groupId, state, assignor, members };
        });
        r.taggedFields();
        expect(r.remaining()).toBe(0);
        return groups;
      },
    );
  }

  it("ConsumerGroupHeartbeat v0-v1 joins, heartbeats with unchanged fields left null, and ConsumerGroupDescribe v1 shows the group by topic id", async () => {
    const group = "flex-848";
    const port = await groupCoordinatorPort(group);
    const bootstrap = cluster.addresses("controller").join(",");
    const topicId = (
      JSON.parse(
        (await okCli(bootstrap, ["--json", "topics", "describe", TOPIC])).stdout,
      ) as Array<{
        id: string;
      }>
    )[0]!.id;
    // v1: the client makes the member id; an empty one is refused.
    const empty = await consumerHeartbeat(port, 1, group, {
      memberId: "",
      epoch: 0,
      topics: [TOPIC],
      rebalanceTimeoutMs: 30_000,
      owned: [],
    });
    expect(empty.error).toBe(42); // INVALID_REQUEST
    const a = "member-a-0123456789";
    const joined = await consumerHeartbeat(port, 1, group, {
      memberId: a,
      epoch: 0,
      topics: [TOPIC],
      rebalanceTimeoutMs: 30_000,
      owned: [],
    });
    expect(joined).toMatchObject({ error: 0, memberId: a });
    expect(joined.epoch).toBeGreaterThan(0);
    expect(joined.assignment).toEqual([{ id: topicId, partitions: [0, 1] }]);
    // Nothing changed: every field null, the owned partitions too. The member stays as it was.
    const steady = await consumerHeartbeat(port, 1, group, { memberId: a, epoch: joined.epoch });
    expect(steady).toMatchObject({ error: 0, epoch: joined.epoch });
    expect(steady.assignment).toEqual([{ id: topicId, partitions: [0, 1] }]);
    // v0: an empty member id at the join gets one made by the coordinator.
    const second = await consumerHeartbeat(port, 0, group, {
      memberId: "",
      epoch: 0,
      topics: [TOPIC],
      rebalanceTimeoutMs: 30_000,
      owned: [],
    });
    expect(second.error).toBe(0);
    expect(second.memberId).toMatch(/^[A-Za-z0-9_-]{22}$/);
    // The first member gives up a partition once it reports owning one only.
    let a2 = await consumerHeartbeat(port, 1, group, { memberId: a, epoch: joined.epoch });
    expect(a2.error).toBe(0);
    const kept = a2.assignment![0]!.partitions;
    expect(kept).toHaveLength(1);
    a2 = await consumerHeartbeat(port, 1, group, {
      memberId: a,
      epoch: a2.epoch,
      owned: [{ id: Buffer.from(topicId, "base64url"), partitions: kept }],
    });
    expect(a2.error).toBe(0);
    const described = await until("both members own one partition", 10_000, async () => {
      await consumerHeartbeat(port, 0, group, { memberId: second.memberId!, epoch: second.epoch });
      const [d] = await consumerGroupDescribe(port, group);
      return d!.members.every((m) => m.assigned.length === 1) ? d : undefined;
    });
    expect(described).toMatchObject({ error: 0, groupId: group, assignor: "uniform" });
    expect(described!.members.map((m) => m.memberId).sort()).toEqual([a, second.memberId!].sort());
    for (const m of described!.members) {
      expect(m).toMatchObject({ topics: [TOPIC], type: 1 });
      expect(m.assigned).toEqual([{ id: topicId, name: TOPIC, partitions: [expect.any(Number)] }]);
    }
    // An unknown member is UNKNOWN_MEMBER_ID; a classic or unknown group is not a consumer group.
    expect((await consumerHeartbeat(port, 1, group, { memberId: "nobody", epoch: 3 })).error).toBe(
      25,
    );
    const none = "flex-848-none";
    const [unknown] = await consumerGroupDescribe(await groupCoordinatorPort(none), none);
    expect(unknown).toMatchObject({ error: 69, state: "Dead", members: [] });
    // DeleteGroups refuses a group with members; both leave (-1), then it is deleted, once.
    const deleteGroups = () =>
      call(
        port,
        42,
        2,
        (w) => w.compactArray([group], (x, g) => x.compactNullableString(g)).noTaggedFields(),
        (r) => {
          r.int32();
          const codes = r.compactArray(
            (x) => (x.compactString(), x.int16() + (x.taggedFields(), 0)),
          );
          r.taggedFields();
          return codes;
        },
      );
    expect(await deleteGroups()).toEqual([68]); // NON_EMPTY_GROUP
    for (const [memberId, v] of [
      [a, 1],
      [second.memberId!, 0],
    ] as const) {
      expect((await consumerHeartbeat(port, v, group, { memberId, epoch: -1 })).error).toBe(0);
    }
    expect(await deleteGroups()).toEqual([0]);
    expect(await deleteGroups()).toEqual([69]); // GROUP_ID_NOT_FOUND
  });

  it("OffsetDelete v0 removes a simple group's committed offset; OffsetFetch then finds none", async () => {
    const group = "flex-offset-delete";
    const port = await groupCoordinatorPort(group);
    const classic = async (apiKey: number, version: number, body: (w: KafkaWriter) => void) => {
      const c = await KafkaRawConnection.open(port);
      try {
        c.s.write(kafkaRequest(apiKey, version, 1, body));
        return (await c.next())!.body;
      } finally {
        c.close();
      }
    };
    const topicPartition0 = (w: KafkaWriter) =>
      w.array([TOPIC], (x, t) => x.string(t).array([0], (y, p) => y.int32(p)));
    // OffsetCommit v2, a simple group (generation -1).
    const committed = await classic(8, 2, (w) => {
      w.string(group).int32(-1).string("").int64(-1n);
      w.array([TOPIC], (x, t) =>
        x.string(t).array([0], (y, p) => y.int32(p).int64(5n).nullableString(null)),
      );
    });
    expect(
      committed.array((x) => (x.string(), x.array((y) => (y.int32(), y.int16())))).flat(),
    ).toEqual([0]);
    const fetchOffset = async (): Promise<bigint> => {
      const r = await classic(9, 1, (w) => (w.string(group), topicPartition0(w)));
      return r.array((x) => (x.string(), x.array((y) => (y.int32(), y.int64()))))[0]![0]!;
    };
    expect(await fetchOffset()).toBe(5n);
    const deleted = await classic(47, 0, (w) => (w.string(group), topicPartition0(w)));
    expect(deleted.int16()).toBe(0);
    deleted.int32();
    expect(
      deleted.array((x) => ({
        name: x.string(),
        partitions: x.array((y) => [y.int32(), y.int16()]),
      })),
    ).toEqual([{ name: TOPIC, partitions: [[0, 0]] }]);
    expect(await fetchOffset()).toBe(-1n);
  });
});
