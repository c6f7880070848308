// The Fetch answer, read by hand on the consumer's side. Every batch comes as the broker stores
// it, a Kafka record batch v2 in RecordBatch.kafka_batch (FetchRequest.decode_records left
// false): the answer's framing is walked here without copying, each batch kept as a view into
// the answer's buffer, and fetchedRecords() reads a partition's batches with libs/records'
// reader (CRC-32C checked, inflated in their codec up to a bound, control batches skipped),
// each record built as its FetchedRecord in one pass, key and value copied once so that a kept
// record never pins the whole answer. The few partition-level fields still go through the
// generated decoder. (protobufjs would copy every batch into a fresh Buffer and turn each int64
// into a string.) Wire format: proto/tern/v1/broker.proto FetchResponse, common.proto RecordBatch.
import * as grpc from "@grpc/grpc-js";
import type { PackageDefinition } from "@grpc/proto-loader";
import { decompress } from "../../records/compression.js";
import {
  checkBatchCrc,
  INFLATED_BYTES_MAX,
  readCheckedHeader,
  readRecords,
  type RecordConstructor,
} from "../../records/batch-reader.js";
import { BATCH_HEADER_BYTES } from "../../records/batch-header.js";
import type { SectionHeader } from "../../records/records-section.js";

/** One record as the Consumer hands it out. */
export interface FetchedRecord {
  topic: string;
  partition: number;
  readonly offset: bigint;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers: Record<string, Buffer>;
  readonly timestampMs: number;
}

/** One batch of the answer: a Kafka record batch v2, a view into the answer's buffer. */
export interface FetchedBatch {
  readonly kafkaBatch: Buffer;
}

/** A FetchPartitionResult: the generated decoder's fields, with batches decoded by hand. */
export interface FetchedPartition {
  readonly topic: string;
  readonly partition: number;
  readonly errorCode: string;
  readonly nextFetchOffset: string;
  readonly batches: FetchedBatch[];
  readonly [field: string]: unknown;
}

/** A generated message decoder (proto-loader gives them untyped). */
type Deserialize = (b: Buffer) => any; // eslint-disable-line @typescript-eslint/no-explicit-any -- proto-loader's deserializers are untyped; the decoded fields are read by name

const WIRE_VARINT = 0;
const WIRE_I64 = 1;
const WIRE_LENGTH_DELIMITED = 2;
const WIRE_I32 = 5;
const FIELD_PARTITIONS = 1;
const FIELD_BATCHES = 8;
const FIELD_KAFKA_BATCH = 13;

class Reader {
  constructor(
    readonly b: Buffer,
    public pos: number,
    readonly end: number,
  ) {}

  /** An int64 as a number: exact below 2^53 (offsets, timestamps); longer varints (negatives) through BigInt. */
  varint(): number {
    const start = this.pos;
    let result = 0;
    let scale = 1;
    for (let i = 0; i < 7; i++) {
      if (this.pos >= this.end) throw new Error("fetch answer: varint past the end");
      const byte = this.b[this.pos++]!;
      result += (byte & 127) * scale;
      if (byte < 128) return result;
      scale *= 128;
    }
    this.pos = start;
    return Number(BigInt.asIntN(64, this.bigVarint()));
  }

  private bigVarint(): bigint {
    let result = 0n;
    for (let shift = 0n; shift < 70n; shift += 7n) {
      if (this.pos >= this.end) throw new Error("fetch answer: varint past the end");
      const byte = this.b[this.pos++]!;
      result |= BigInt(byte & 127) << shift;
      if (byte < 128) return result;
    }
    throw new Error("fetch answer: varint longer than 10 bytes");
  }

  /** The [start, end) of a length-delimited field's body; the reader moves past it. */
  delimited(): number {
    const length = this.varint();
    const start = this.pos;
    if (length < 0 || start + length > this.end)
      throw new Error("fetch answer: field past the end");
    this.pos = start + length;
    return start;
  }

  skip(wire: number): void {
    if (wire === WIRE_VARINT) this.varint();
    else if (wire === WIRE_LENGTH_DELIMITED) this.delimited();
    else if (wire === WIRE_I64) this.pos += 8;
    else if (wire === WIRE_I32) this.pos += 4;
    else throw new Error(`fetch answer: wire type ${wire} unsupported`);
    if (this.pos > this.end) throw new Error("fetch answer: field past the end");
  }
}

/** A FetchResponse deserializer: `{ partitions: FetchedPartition[] }`. */
export function fetchResponseDeserializer(deserializePartition: Deserialize): Deserialize {
  return (buf: Buffer) => {
    const r = new Reader(buf, 0, buf.byteLength);
    const partitions: FetchedPartition[] = [];
    while (r.pos < r.end) {
      const tag = r.varint();
      if (tag >>> 3 === FIELD_PARTITIONS && (tag & 7) === WIRE_LENGTH_DELIMITED) {
        const start = r.delimited();
        partitions.push(decodePartition(buf, start, r.pos, deserializePartition));
      } else r.skip(tag & 7);
    }
    return { partitions };
  };
}

function decodePartition(
  buf: Buffer,
  start: number,
  end: number,
  deserializePartition: Deserialize,
): FetchedPartition {
  const r = new Reader(buf, start, end);
  const batches: FetchedBatch[] = [];
  const rest: Buffer[] = [];
  while (r.pos < end) {
    const fieldStart = r.pos;
    const tag = r.varint();
    if (tag >>> 3 === FIELD_BATCHES && (tag & 7) === WIRE_LENGTH_DELIMITED) {
      const s = r.delimited();
      batches.push(decodeBatch(buf, s, r.pos));
      continue;
    }
    r.skip(tag & 7);
    rest.push(buf.subarray(fieldStart, r.pos));
  }
  return { ...deserializePartition(rest.length === 1 ? rest[0]! : Buffer.concat(rest)), batches };
}

function decodeBatch(buf: Buffer, start: number, end: number): FetchedBatch {
  const r = new Reader(buf, start, end);
  let kafkaBatch: Buffer | undefined;
  while (r.pos < end) {
    const tag = r.varint();
    if (tag >>> 3 === FIELD_KAFKA_BATCH && (tag & 7) === WIRE_LENGTH_DELIMITED) {
      const s = r.delimited();
      kafkaBatch = buf.subarray(s, r.pos);
    } else r.skip(tag & 7);
  }
  if (kafkaBatch === undefined)
    throw new Error(
      "fetch answer: a batch without kafka_batch (a broker older than this client answers proto records)",
    );
  return { kafkaBatch };
}

/**
 * The records of a partition's batches from fetchOffset on, in offset order: control batches
 * (transaction markers) skipped, as is any record before fetchOffset (a batch is sent whole).
 * Uncompressed batches are read at once; compressed ones inflate off the event loop. A batch
 * that does not check out is a DecodeError naming it.
 */
export async function fetchedRecords(
  p: FetchedPartition,
  fetchOffset: bigint,
  options: { checkCrcs: boolean },
): Promise<FetchedRecord[]> {
  const make = recordOf(p.topic, p.partition);
  const out: FetchedRecord[] = [];
  for (const { kafkaBatch } of p.batches) {
    let records: FetchedRecord[];
    try {
      const header = readCheckedHeader(kafkaBatch, false);
      if (header.isControl || header.recordCount === 0) continue;
      if (header.baseOffset + BigInt(header.lastOffsetDelta) < fetchOffset) continue;
      if (options.checkCrcs) checkBatchCrc(kafkaBatch);
      records =
        header.codec === "none"
          ? readRecords(kafkaBatch.subarray(BATCH_HEADER_BYTES), header, make)
          : readRecords(
              await decompress(
                header.codec,
                kafkaBatch.subarray(BATCH_HEADER_BYTES),
                INFLATED_BYTES_MAX,
              ),
              header,
              make,
            );
    } catch (e) {
      throw new BatchDecodeError(p.topic, p.partition, kafkaBatch, e);
    }
    for (const r of records) if (r.offset >= fetchOffset) out.push(r);
  }
  return out;
}

/** A fetched batch that does not decode (damaged in transit or on disk). */
export class BatchDecodeError extends Error {
  constructor(topic: string, partition: number, batch: Buffer, cause: unknown) {
    const at = batch.byteLength >= 8 ? ` at offset ${batch.readBigInt64BE(0)}` : "";
    super(`record batch of ${topic}/${partition}${at}: ${(cause as Error).message}`, { cause });
    this.name = "BatchDecodeError";
  }
}

const EMPTY = Buffer.alloc(0);

function recordOf(topic: string, partition: number): RecordConstructor<FetchedRecord> {
  return (offset, timestampMs, key, value, headers) => ({
    topic,
    partition,
    offset,
    key,
    value,
    headers: headers.length === 0 ? {} : headersOf(headers),
    timestampMs,
  });
}

/** Headers by key (the last of duplicates wins); a null header value reads as empty. */
function headersOf(headers: readonly SectionHeader[]): Record<string, Buffer> {
  const out: Record<string, Buffer> = {};
  for (const h of headers) out[h.key] = h.value === null ? EMPTY : (h.value as Buffer);
  return out;
}

/** A Broker client constructor whose Fetch answers come through the hand-written decoder. */
export function brokerClientWithFetchDecoder(
  brokerCtor: grpc.ServiceClientConstructor,
  packageDefinition: PackageDefinition,
): grpc.ServiceClientConstructor {
  const definition = brokerCtor.service;
  const partition = packageDefinition["tern.v1.FetchPartitionResult"] as
    { deserialize?: Deserialize } | undefined;
  if (definition.Fetch === undefined || typeof partition?.deserialize !== "function")
    return brokerCtor;
  return grpc.makeGenericClientConstructor(
    {
      ...definition,
      Fetch: {
        ...definition.Fetch,
        responseDeserialize: fetchResponseDeserializer(partition.deserialize),
      },
    },
    "Broker",
  );
}
