// A scripted cluster behind the client's Transport seam, for unit tests of the Producer,
// Consumer and Admin without processes: the controller answers `metadata` (a test edits it
// between calls), and each node method answers from a queue of one-shot replies (`once`) or
// its standing handler (`on`). Every call is recorded in `calls`. Replies are produced on a
// later microtask, never synchronously, as a network answer would be. Batches cross it as the
// real broker's do: Kafka record batches v2 (RecordBatch.kafka_batch) both ways.
import { TernError, type ErrorName } from "../../common/errors.js";
import type { ClusterMetadata, NodeInfo, PartitionInfo, TopicInfo } from "../../metadata/types.js";
import type { ControllerClientOptions } from "../../metadata/controller-client.js";
import { buildUncompressedBatch } from "../../records/batch-builder.js";
import { patchBatchOffsets, readBatchHeader } from "../../records/batch-header.js";
import {
  readBatch,
  readUncompressedBatch,
  type ReadHeader,
  type RecordConstructor,
} from "../../records/batch-reader.js";
import type {
  ControllerCalls,
  MethodName,
  RequestOf,
  ResponseOf,
  ServiceName,
  Transport,
} from "../network/transport.js";

export interface ScriptedCall {
  readonly service: ServiceName;
  readonly address: string;
  readonly method: string;
  /** The request as sent (typed by the method: narrow with `as` in the test). */
  readonly request: unknown;
  readonly timeoutMs: number | undefined;
}

/** Answers one call: a response, or a thrown TernError (a transport failure). */
export type Reply = (call: ScriptedCall) => unknown | Promise<unknown>;

/** A reply that fails the call as the network would (NETWORK_EXCEPTION by default). */
export function failWith(
  code: ErrorName = "NETWORK_EXCEPTION",
  message = "scripted failure",
): Reply {
  return () => {
    throw new TernError(code, message);
  };
}

export const BROKER_ADDRESS = "broker-1:9092";
export const BROKER_2_ADDRESS = "broker-2:9092";
export const COORDINATOR_ADDRESS = "coordinator-1:9093";

/**
 * A one-controller view: broker nodes 1 and 2, coordinator node 11, and `topics` with every
 * partition led by broker 1 (change `leader` on the returned view to move one).
 */
export function scriptedMetadata(
  topics: ReadonlyArray<{ name: string; partitions: number }>,
): ClusterMetadata {
  const nodes: NodeInfo[] = [
    { nodeId: 1, role: "broker", address: BROKER_ADDRESS, alive: true, incarnation: "1" },
    { nodeId: 2, role: "broker", address: BROKER_2_ADDRESS, alive: true, incarnation: "1" },
    {
      nodeId: 11,
      role: "coordinator",
      address: COORDINATOR_ADDRESS,
      alive: true,
      incarnation: "1",
    },
  ];
  const topicInfos: TopicInfo[] = topics.map((t) => ({
    name: t.name,
    internal: false,
    role: "broker",
    config: {},
    partitions: Array.from({ length: t.partitions }, (_, p): PartitionInfo => ({
      topic: t.name,
      partition: p,
      replicas: [1, 2],
      leader: 1,
      leaderTerm: 1,
    })),
  }));
  return { version: "1", controllerLeader: 0, nodes, topics: topicInfos };
}

export class ScriptedBroker implements Transport {
  readonly calls: ScriptedCall[] = [];
  /** What the controller answers next; bump `version` when changing it. */
  metadata: ClusterMetadata;
  metadataCalls = 0;
  closed = false;
  private readonly standing = new Map<string, Reply>();
  private readonly queued = new Map<string, Reply[]>();

  constructor(metadata: ClusterMetadata) {
    this.metadata = metadata;
  }

  /** The standing reply of `method` (any service, any address). */
  on(method: string, reply: Reply): this {
    this.standing.set(method, reply);
    return this;
  }

  /** One-shot replies of `method`, used in order before the standing one. */
  once(method: string, ...replies: Reply[]): this {
    const list = this.queued.get(method) ?? [];
    list.push(...replies);
    this.queued.set(method, list);
    return this;
  }

  /** The recorded calls of one method. */
  callsOf(method: string): ScriptedCall[] {
    return this.calls.filter((c) => c.method === method);
  }

  call<S extends ServiceName, M extends MethodName<S>>(
    service: S,
    address: string,
    method: M,
    request: RequestOf<S, M>,
    timeoutMs?: number,
  ): Promise<ResponseOf<S, M>> {
    const name = String(method);
    const call: ScriptedCall = { service, address, method: name, request, timeoutMs };
    this.calls.push(call);
    const reply = this.queued.get(name)?.shift() ?? this.standing.get(name);
    return Promise.resolve().then(() => {
      if (this.closed) throw new TernError("SHUTTING_DOWN", "the scripted transport is closed");
      if (reply === undefined)
        throw new TernError("UNKNOWN_SERVER_ERROR", `no scripted reply for ${service}.${name}`);
      return reply(call) as ResponseOf<S, M>;
    });
  }

  controller(_options: ControllerClientOptions): ControllerCalls {
    const metadata = async (): Promise<ClusterMetadata> => {
      this.metadataCalls += 1;
      return structuredClone(this.metadata);
    };
    const unscripted = (name: string) => () =>
      Promise.reject(
        new TernError("UNKNOWN_SERVER_ERROR", `the scripted controller does not answer ${name}`),
      );
    // Only metadata (and close) are scripted; every other controller call is refused loudly.
    return new Proxy({ metadata, close: () => undefined } as Partial<ControllerCalls>, {
      get: (target, name: string) =>
        name in target
          ? target[name as keyof ControllerCalls]
          : name === "then"
            ? undefined
            : unscripted(name),
    }) as ControllerCalls;
  }

  close(): void {
    this.closed = true;
  }
}

/** A Produce request's batch: a Kafka record batch v2. */
interface WireBatch {
  kafkaBatch?: Buffer;
}

interface ReadWireBatch {
  readonly bytes: Buffer;
  readonly header: ReadHeader;
  readonly values: string[];
}

const valueString: RecordConstructor<string> = (_o, _t, _k, value) =>
  value === null ? "" : value.toString();

function kafkaBatchIn(batch: WireBatch): Buffer {
  if (batch.kafkaBatch === undefined)
    throw new TernError("INVALID_RECORD", "a produced batch without kafka_batch");
  return batch.kafkaBatch;
}

/** A produced uncompressed batch's header and values, read at once. */
export function readWireBatch(batch: WireBatch): ReadWireBatch {
  const bytes = kafkaBatchIn(batch);
  const { header, records } = readUncompressedBatch(bytes, valueString);
  return { bytes, header, values: records };
}

/** A produced batch in any codec, inflated. */
async function readCompressedWireBatch(batch: WireBatch): Promise<ReadWireBatch> {
  const bytes = kafkaBatchIn(batch);
  const { header, records } = await readBatch(bytes, valueString);
  return { bytes, header, values: records };
}

/**
 * A produced batch's identity and records as a test checks them (the fields the batch's
 * header carries, named as the proto RecordBatch names them).
 */
export function wireBatchView(batch: WireBatch): {
  producerId: string;
  producerEpoch: number;
  baseSequence: number;
  isTransactional: boolean;
  records: string[];
} {
  const { header, values } = readWireBatch(batch);
  return {
    producerId: String(header.producerId),
    producerEpoch: header.producerEpoch,
    baseSequence: header.baseSequence,
    isTransactional: header.isTransactional,
    records: values,
  };
}

/** One appended batch as the scripted log keeps it. */
export interface AppendedBatch {
  readonly baseOffset: bigint;
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly baseSequence: number;
  readonly transactional: boolean;
  readonly values: string[];
  /** The batch as produced, its baseOffset set: what a fetch answers. */
  readonly bytes: Buffer;
}

/**
 * The Produce side of a broker: appends batches per partition and checks idempotent sequences
 * as the broker does (a batch at or below the last acknowledged sequence is a duplicate; one
 * past the next expected is out of order). Use `produce` as the standing Produce reply.
 */
export class ScriptedLog {
  readonly batches = new Map<string, AppendedBatch[]>();
  private readonly nextOffset = new Map<string, bigint>();
  /** Next expected sequence per producer id and partition. */
  private readonly nextSequence = new Map<string, number>();

  readonly produce: Reply = (call) => {
    const request = call.request as {
      partitions?: Array<{ topic?: string; partition?: number; batch?: WireBatch }>;
    };
    const parts = request.partitions ?? [];
    const answer = (read: ReadWireBatch[]): unknown => ({
      partitions: parts.map((p, i) => this.append(p.topic ?? "", p.partition ?? 0, read[i]!)),
    });
    // Compressed batches inflate off the event loop: their appends wait for it (uncompressed
    // ones append in call order, at once).
    const compressed = parts.some(
      (p) => readBatchHeader(kafkaBatchIn(p.batch ?? {})).codec !== "none",
    );
    if (!compressed) return answer(parts.map((p) => readWireBatch(p.batch ?? {})));
    return Promise.all(parts.map((p) => readCompressedWireBatch(p.batch ?? {}))).then(answer);
  };

  /** The values appended to a partition, in offset order. */
  values(topic: string, partition: number): string[] {
    return (this.batches.get(`${topic}/${partition}`) ?? []).flatMap((b) => b.values);
  }

  private append(topic: string, partition: number, read: ReadWireBatch): Record<string, unknown> {
    const tp = `${topic}/${partition}`;
    const { header, values } = read;
    const producerId = header.producerId;
    const count = header.recordCount;
    const base = { topic, partition, errorMessage: "", logAppendTimeMs: "-1", logStartOffset: "0" };
    if (producerId >= 0n) {
      const key = `${producerId}/${header.producerEpoch}/${tp}`;
      const expected = this.nextSequence.get(key) ?? 0;
      const sequence = header.baseSequence;
      if (sequence < expected)
        return { ...base, errorCode: "DUPLICATE_SEQUENCE_NUMBER", baseOffset: "-1" };
      if (sequence > expected)
        return {
          ...base,
          errorCode: "OUT_OF_ORDER_SEQUENCE_NUMBER",
          errorMessage: `expected ${expected}, got ${sequence}`,
          baseOffset: "-1",
        };
      this.nextSequence.set(key, expected + count);
    }
    const baseOffset = this.nextOffset.get(tp) ?? 0n;
    this.nextOffset.set(tp, baseOffset + BigInt(count));
    const bytes = Buffer.from(read.bytes);
    patchBatchOffsets(bytes, baseOffset, 1);
    const list = this.batches.get(tp) ?? [];
    list.push({
      baseOffset,
      producerId,
      producerEpoch: header.producerEpoch,
      baseSequence: header.baseSequence,
      transactional: header.isTransactional,
      values,
      bytes,
    });
    this.batches.set(tp, list);
    return { ...base, errorCode: "NONE", baseOffset: String(baseOffset) };
  }
}

/**
 * The read side of the same log: a Fetch reply (the batches from each partition's fetch offset
 * on, as the client's fetch decoder hands them over: views of Kafka record batches; with nothing to return it
 * holds the call for maxWaitMs, as the broker's long poll does) and a ListOffsets reply
 * (-2 earliest, -1 latest).
 */
export class ScriptedReader {
  constructor(private readonly log: ScriptedLog) {}

  readonly fetch: Reply = async (call) => {
    const request = call.request as {
      maxWaitMs?: number;
      partitions?: Array<{ topic?: string; partition?: number; fetchOffset?: string }>;
    };
    const partitions = (request.partitions ?? []).map((p) =>
      this.read(p.topic ?? "", p.partition ?? 0, BigInt(p.fetchOffset ?? "0")),
    );
    if (partitions.every((p) => p.batches.length === 0))
      await new Promise((r) => setTimeout(r, request.maxWaitMs ?? 0));
    return { partitions };
  };

  readonly listOffsets: Reply = (call) => {
    const request = call.request as {
      partitions?: Array<{ topic?: string; partition?: number; timestampMs?: string }>;
    };
    return {
      partitions: (request.partitions ?? []).map((p) => {
        const end = this.endOffset(p.topic ?? "", p.partition ?? 0);
        return {
          topic: p.topic,
          partition: p.partition,
          errorCode: "NONE",
          errorMessage: "",
          offset: String(p.timestampMs === "-2" ? 0n : end),
          timestampMs: "-1",
        };
      }),
    };
  };

  endOffset(topic: string, partition: number): bigint {
    const last = this.log.batches.get(`${topic}/${partition}`)?.at(-1);
    return last ? last.baseOffset + BigInt(last.values.length) : 0n;
  }

  private read(
    topic: string,
    partition: number,
    from: bigint,
  ): Record<string, unknown> & { batches: unknown[] } {
    const end = this.endOffset(topic, partition);
    const batches = (this.log.batches.get(`${topic}/${partition}`) ?? [])
      .filter((b) => b.baseOffset + BigInt(b.values.length) > from)
      .map((b) => ({ kafkaBatch: b.bytes }));
    return {
      topic,
      partition,
      errorCode: "NONE",
      errorMessage: "",
      highWatermark: String(end),
      lastStableOffset: String(end),
      nextFetchOffset: String(batches.length > 0 ? end : from),
      batches,
    };
  }
}

/** Appends values to a partition as one non-transactional batch (for consumer tests). */
export function appendValues(
  log: ScriptedLog,
  topic: string,
  partition: number,
  values: readonly string[],
): void {
  void log.produce({
    service: "Broker",
    address: BROKER_ADDRESS,
    method: "Produce",
    timeoutMs: undefined,
    request: {
      partitions: [
        {
          topic,
          partition,
          batch: { kafkaBatch: kafkaBatchOf(values) },
        },
      ],
    },
  });
}

/** Values as one non-transactional Kafka record batch v2 (baseOffset 0: a log or a test sets it). */
export function kafkaBatchOf(values: readonly string[], baseOffset = 0n): Buffer {
  const batch = buildUncompressedBatch({
    producerId: -1n,
    producerEpoch: -1,
    baseSequence: -1,
    isTransactional: false,
    records: values.map((v) => ({ key: null, value: Buffer.from(v), headers: [], timestampMs: 0 })),
  });
  patchBatchOffsets(batch, baseOffset, 1);
  return batch;
}
