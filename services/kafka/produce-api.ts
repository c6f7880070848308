// Produce v0-v12 (v9+ flexible; v10 answers a NOT_LEADER_OR_FOLLOWER partition's current
// leader and that leader's endpoint, KIP-951; v11 only allows TRANSACTION_ABORTABLE, which tern
// never answers; v12 is transactions V2, KIP-890 part 2: a transactional batch adds its
// partition to the transaction itself, the leader asking the coordinator as it does for tern's
// own producer, where below v12 the leader only verifies the client added it): each
// partition's record batch v2 is checked (magic, CRC-32C, layout) and
// decoded into the broker's records, then the batches go to the partition service's produce
// (services/broker/partition-service/produce.ts): validation, idempotence, transactions and
// replication are the same as for a gRPC producer. Records keep null distinct from empty
// (tombstones) and header order. The batch's bytes go along (asSent) when the partition may
// store them as sent.
import { refusal } from "./kafka-access.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { kafkaErrorCode, kafkaErrorMessage } from "./kafka-errors.js";
import { BatchRefusal, decodeOnlyBatch, inflationBound } from "./record-batch.js";
import type { InflationBudget, InflationHold } from "./inflation-budget.js";
import type { ProduceCommand } from "../broker/partition-service/produce.js";
import { fieldReader, fieldWriter, writeTaggedFields } from "./versioned-fields.js";
import { carriesCurrentLeader, PartitionLeaders } from "./leader-epochs.js";

interface PartitionAnswer {
  readonly index: number;
  readonly error: number;
  readonly message: string | null;
  readonly baseOffset: bigint;
  readonly logStartOffset: bigint;
}

/**
 * A Produce request decoded (gzip batches are inflated in the thread pool), ready to send.
 * send() hands it to the partition service at once and returns the answer body, or undefined for
 * acks=0 (Kafka sends no response then). The listener calls send() in arrival order per
 * connection: an idempotent producer's pipelined batches must reach the partition in order.
 * Before any batch inflates, the request reserves what its batches may inflate to from each of
 * `budgets` in turn (the connection's, then the listener's: inflation-budget.ts); it keeps what
 * they did inflate to until answered.
 */
export async function prepareProduce(
  deps: KafkaDeps,
  version: number,
  r: KafkaReader,
  budgets: readonly InflationBudget[] = [],
): Promise<{ send(): Promise<Buffer | undefined> }> {
  const flexible = version >= PRODUCE_FLEXIBLE_SINCE;
  const f = fieldReader(r, flexible);
  const transactionalId = version >= 3 ? f.nullableString() : null;
  const acks = r.int16();
  const timeoutMs = r.int32();
  const topics = f.array(() => {
    const name = f.string();
    const partitions = f.array((y) => {
      const index = y.int32();
      const records = flexible ? y.compactNullableBytes() : y.nullableBytes();
      f.tags();
      return { index, records };
    });
    f.tags();
    return { name, partitions };
  });
  f.tags();
  const refused = new Map<string, PartitionAnswer>();
  const partitions: ProducePartition[] = [];
  // ACLs: a transactional produce needs WRITE on its transactional id, every topic WRITE.
  const txnRefusal = transactionalId
    ? refusal(deps.access, "write", "transactional-id", transactionalId)
    : undefined;
  const topicRefusals = new Map(
    topics.map((t) => [t.name, txnRefusal ?? refusal(deps.access, "write", "topic", t.name)]),
  );
  let bound = 0;
  for (const t of topics)
    if (!topicRefusals.get(t.name))
      for (const p of t.partitions) bound += inflationBound(p.records ?? Buffer.alloc(0));
  const holds: InflationHold[] = [];
  const release = (): void => holds.forEach((h) => h.release());
  try {
    for (const budget of budgets) holds.push(await budget.acquire(bound));
    let inflated = 0;
    for (const t of topics) {
      const topicRefusal = topicRefusals.get(t.name);
      for (const p of t.partitions) {
        const key = `${t.name}\u0000${p.index}`;
        if (topicRefusal) {
          refused.set(key, {
            index: p.index,
            error: kafkaErrorCode(topicRefusal.errorName),
            message: topicRefusal.message,
            baseOffset: -1n,
            logStartOffset: -1n,
          });
          continue;
        }
        try {
          const b = await decodeOnlyBatch(p.records ?? Buffer.alloc(0));
          inflated += b.inflatedBytes;
          if (b.isControl)
            throw new BatchRefusal("INVALID_RECORD", "clients may not write control batches");
          partitions.push({
            topic: t.name,
            partition: p.index,
            batch: { kind: "ready", batch: b },
          });
        } catch (e) {
          if (!(e instanceof BatchRefusal)) throw e;
          refused.set(key, {
            index: p.index,
            error: kafkaErrorCode(e.errorName),
            message: e.message,
            baseOffset: -1n,
            logStartOffset: -1n,
          });
        }
      }
    }
    for (const h of holds) h.shrinkTo(inflated);
  } catch (e) {
    release();
    throw e;
  }
  return {
    send: () =>
      answer(deps, version, {
        transactionalId,
        acks,
        timeoutMs,
        topics,
        partitions,
        refused,
      }).finally(release),
  };
}

type ProducePartition = ProduceCommand["partitions"][number];

interface PreparedProduce {
  readonly transactionalId: string | null;
  readonly acks: number;
  readonly timeoutMs: number;
  readonly topics: ReadonlyArray<{ name: string; partitions: ReadonlyArray<{ index: number }> }>;
  readonly partitions: ProducePartition[];
  readonly refused: ReadonlyMap<string, PartitionAnswer>;
}

async function answer(
  deps: KafkaDeps,
  version: number,
  q: PreparedProduce,
): Promise<Buffer | undefined> {
  const { transactionalId, acks, timeoutMs, topics, partitions, refused } = q;
  const answered = new Map<string, PartitionAnswer>();
  if (partitions.length > 0) {
    const outcomes = await deps.produce({
      transactionalId: transactionalId ?? "",
      acks: acks === 0 ? 1 : acks,
      timeoutMs,
      partitions,
      // Below v12 (transactions V1) the client added the partition itself: the leader verifies.
      addPartitions: version >= PRODUCE_ADDS_PARTITIONS_SINCE,
    });
    for (const p of outcomes) {
      answered.set(`${p.topic}\u0000${p.partition}`, {
        index: p.partition,
        error: kafkaErrorCode(p.error),
        message: p.error === "NONE" ? null : kafkaErrorMessage(p.error, p.message) || null,
        baseOffset: p.baseOffset,
        logStartOffset: p.logStartOffset,
      });
    }
  }
  if (acks === 0) return undefined;
  const w = new KafkaWriter(256);
  const f = fieldWriter(w, version >= PRODUCE_FLEXIBLE_SINCE);
  // v10+: a partition this node does not lead names its leader, and the answer that leader's endpoint.
  const leaders = version >= 10 ? new PartitionLeaders(deps) : undefined;
  const named = new Set<number>();
  f.array(topics, (_, t) => {
    f.string(t.name);
    f.array(t.partitions, (y, p) => {
      const key = `${t.name}\u0000${p.index}`;
      const a = refused.get(key) ??
        answered.get(key) ?? {
          index: p.index,
          error: -1,
          message: "no answer for this partition",
          baseOffset: -1n,
          logStartOffset: -1n,
        };
      y.int32(a.index).int16(a.error).int64(a.baseOffset);
      if (version >= 2) y.int64(-1n); // log_append_time: create time is kept
      if (version >= 5) y.int64(a.logStartOffset);
      if (version >= 8) {
        f.array([], () => undefined); // record_errors
        f.string(a.message);
      }
      const leader = carriesCurrentLeader(a.error) ? leaders?.of(t.name, p.index) : undefined;
      if (leader !== undefined && leader.leaderId >= 0) {
        named.add(leader.leaderId);
        writeTaggedFields(y, [
          [0, (x) => x.int32(leader.leaderId).int32(leader.leaderEpoch).noTaggedFields()],
        ]);
      } else f.tags();
    });
    f.tags();
  });
  const throttleAt = w.pos;
  if (version >= 1) w.int32(0); // throttle_time_ms
  const endpoints = leaders?.endpoints(named) ?? [];
  if (endpoints.length > 0)
    writeTaggedFields(w, [
      [
        0,
        (x) =>
          x.compactArray(endpoints, (e, n) =>
            e
              .int32(n.nodeId)
              .compactNullableString(n.host)
              .int32(n.port)
              .compactNullableString(n.rack)
              .noTaggedFields(),
          ),
      ],
    ]);
  else f.tags();
  const body = w.finish();
  if (version >= 1) THROTTLE_TIME_AT.set(body, throttleAt);
  return body;
}

/** Where each answer's throttle_time_ms is (flexible answers end with tagged fields after it). */
const THROTTLE_TIME_AT = new WeakMap<Buffer, number>();

/** The position of throttle_time_ms in a Produce answer body this file wrote (v1+). */
export function produceThrottleTimeAt(body: Buffer): number | undefined {
  return THROTTLE_TIME_AT.get(body);
}

/** The first flexible version (request header v2, response header v1). */
const PRODUCE_FLEXIBLE_SINCE = 9;

/** Transactions V2 (KIP-890 part 2): a transactional batch adds its partition to the transaction. */
const PRODUCE_ADDS_PARTITIONS_SINCE = 12;
