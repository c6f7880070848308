// The Fetch answer's records, decoded by hand on the consumer's side (the broker encodes them by
// hand too: services/broker/fetch-codec.ts). Through proto-loader, protobufjs builds a message
// object per record and header, turns every int64 into a string and every bytes field into a
// fresh Buffer, and the consumer then converted each record once more: about 10 µs per 1 KiB
// record, the read-back ceiling. Here each record becomes its ConsumerRecord in one pass (key
// and value copied once, so a kept record never pins the whole answer); the few
// partition-level fields still go through the generated decoder.
// Wire format: proto/tern/v1/broker.proto FetchResponse, common.proto RecordBatch/Record.
import * as grpc from "@grpc/grpc-js";
import type { PackageDefinition } from "@grpc/proto-loader";

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

export interface FetchedBatch {
  readonly isControl: boolean;
  readonly records: FetchedRecord[];
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
const FIELD_IS_CONTROL = 5;
const FIELD_RECORDS = 6;
const FIELD_KEY = 1;
const FIELD_VALUE = 2;
const FIELD_HEADERS = 3;
const FIELD_TIMESTAMP = 4;
const FIELD_OFFSET = 5;

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
  const head = deserializePartition(rest.length === 1 ? rest[0]! : Buffer.concat(rest));
  const topic: string = head.topic;
  const partition: number = head.partition;
  for (const b of batches) {
    for (const rec of b.records) {
      rec.topic = topic;
      rec.partition = partition;
    }
  }
  return { ...head, batches };
}

function decodeBatch(buf: Buffer, start: number, end: number): FetchedBatch {
  const r = new Reader(buf, start, end);
  let isControl = false;
  const records: FetchedRecord[] = [];
  while (r.pos < end) {
    const tag = r.varint();
    const field = tag >>> 3;
    if (field === FIELD_RECORDS && (tag & 7) === WIRE_LENGTH_DELIMITED) {
      const s = r.delimited();
      records.push(decodeRecord(buf, s, r.pos));
    } else if (field === FIELD_IS_CONTROL && (tag & 7) === WIRE_VARINT)
      isControl = r.varint() !== 0;
    else r.skip(tag & 7);
  }
  return { isControl, records };
}

function decodeRecord(buf: Buffer, start: number, end: number): FetchedRecord {
  const r = new Reader(buf, start, end);
  let key: Buffer | null = null;
  let value: Buffer | null = null;
  let headers: Record<string, Buffer> | undefined;
  let timestampMs = 0;
  let offset = 0;
  while (r.pos < end) {
    const tag = r.varint();
    const field = tag >>> 3;
    const wire = tag & 7;
    if (field === FIELD_KEY && wire === WIRE_LENGTH_DELIMITED) {
      const s = r.delimited();
      key = r.pos > s ? Buffer.from(buf.subarray(s, r.pos)) : null;
    } else if (field === FIELD_VALUE && wire === WIRE_LENGTH_DELIMITED) {
      const s = r.delimited();
      value = Buffer.from(buf.subarray(s, r.pos));
    } else if (field === FIELD_HEADERS && wire === WIRE_LENGTH_DELIMITED) {
      const s = r.delimited();
      headers ??= {};
      decodeHeader(buf, s, r.pos, headers);
    } else if (field === FIELD_TIMESTAMP && wire === WIRE_VARINT) timestampMs = r.varint();
    else if (field === FIELD_OFFSET && wire === WIRE_VARINT) offset = r.varint();
    else r.skip(wire);
  }
  return {
    topic: "",
    partition: 0,
    offset: BigInt(offset),
    key,
    value: value ?? Buffer.alloc(0),
    headers: headers ?? {},
    timestampMs,
  };
}

function decodeHeader(buf: Buffer, start: number, end: number, into: Record<string, Buffer>): void {
  const r = new Reader(buf, start, end);
  let key = "";
  let value = Buffer.alloc(0);
  while (r.pos < end) {
    const tag = r.varint();
    const field = tag >>> 3;
    if (field === 1 && (tag & 7) === WIRE_LENGTH_DELIMITED) {
      const s = r.delimited();
      key = buf.toString("utf8", s, r.pos);
    } else if (field === 2 && (tag & 7) === WIRE_LENGTH_DELIMITED) {
      const s = r.delimited();
      value = Buffer.from(buf.subarray(s, r.pos));
    } else r.skip(tag & 7);
  }
  into[key] = value;
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
