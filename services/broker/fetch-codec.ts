// The Fetch answer's record batches, encoded by hand. A fetch carries up to megabytes of
// records: by default each batch goes as its stored bytes (RecordBatch.kafka_batch, a Kafka
// record batch v2) copied once into the answer and patched there (baseOffset, partition leader
// epoch: outside its CRC). With FetchRequest.decode_records, the RecordBatch fields go straight
// from the records into the buffer: through proto-loader, protobufjs would build a message
// object per record and header and copy every value twice. The few partition-level fields
// (enums, endpoint) still use the generated serializer.
// Wire format: proto/tern/v1/common.proto RecordBatch/Record/RecordHeader; protobuf lets a
// repeated field follow the others, so the batches are appended after the serialized head.
// The answer's buffer keeps room for grpc's frame header, so it is sent uncopied
// (framed-response.ts).
import type * as grpc from "@grpc/grpc-js";
import type { PackageDefinition } from "@grpc/proto-loader";
import type { RecordData } from "./partition-entry.js";
import type { ReadBatch } from "./partition-state-machine.js";
import { bigVarintBytes, varintBytes } from "../../libs/common/varint-size.js";
import { allocFramed, installFramedResponses } from "./framed-response.js";
import { patchBatchOffsets } from "../../libs/records/batch-header.js";
import { batchBytes, controlBatchBytes } from "../kafka/record-batch.js";
import type { Record, RecordBatch } from "../../libs/common/proto-types/index.js";

/**
 * A fetched batch on its way out: proto-loader fields on demand, the records or stored bytes
 * kept by reference. With `asKafkaBatch` it goes as RecordBatch.kafka_batch alone.
 */
export class WireBatch implements RecordBatch {
  /** The v2 bytes to send (unpatched), when the batch goes as kafka_batch. */
  readonly kafkaBytes: Uint8Array | undefined;

  constructor(
    readonly batch: ReadBatch,
    asKafkaBatch = false,
  ) {
    this.kafkaBytes = asKafkaBatch ? kafkaBytesOf(batch) : undefined;
  }

  /** The bytes as sent: a patched copy (the hand-written encoder patches its own copy instead). */
  get kafkaBatch(): Buffer {
    if (this.kafkaBytes === undefined) return EMPTY;
    const copy = Buffer.from(this.kafkaBytes);
    patchBatchOffsets(copy, this.batch.baseOffset, LEADER_EPOCH_NOT_TRACKED);
    return copy;
  }
  get producerId(): string {
    return this.batch.producerId.toString();
  }
  get producerEpoch(): number {
    return this.batch.producerEpoch;
  }
  get baseSequence(): number {
    return this.batch.baseSequence;
  }
  get isTransactional(): boolean {
    return this.batch.isTransactional;
  }
  get isControl(): boolean {
    return false;
  }
  get baseOffset(): string {
    return this.batch.baseOffset.toString();
  }
  get controlType(): "CONTROL_TYPE_UNSPECIFIED" {
    return "CONTROL_TYPE_UNSPECIFIED";
  }
  get records(): Record[] {
    if (this.kafkaBytes !== undefined) return [];
    const base = this.batch.baseOffset;
    return this.batch.records.map((r, i) => ({
      key: asBuffer(r.key),
      value: asBuffer(r.value),
      headers: r.headers.map((h) => ({ key: h.key, value: asBuffer(h.value) })),
      timestampMs: String(r.timestampMs),
      offset: (base + BigInt(i)).toString(),
    }));
  }
  /** Plain-object form (what JSON, structured clones and equality checks see). */
  toJSON(): unknown {
    if (this.kafkaBytes !== undefined) return { kafkaBatch: this.kafkaBatch };
    const {
      producerId,
      producerEpoch,
      baseSequence,
      isTransactional,
      isControl,
      baseOffset,
      controlType,
      records,
    } = this;
    return {
      producerId,
      producerEpoch,
      baseSequence,
      isTransactional,
      isControl,
      baseOffset,
      controlType,
      records,
    };
  }
}

const EMPTY = Buffer.alloc(0);
/** The partition leader epoch a fetched batch carries (-1: not tracked, as the Kafka listener's). */
const LEADER_EPOCH_NOT_TRACKED = -1;

/**
 * A read batch as v2 bytes: stored ones as they are; a marker as Kafka's control batch; a
 * batch an older build stored decoded (partition-entry.ts kind "batch") encoded now, per fetch
 * (docs/storage.md, "Upgrade").
 */
function kafkaBytesOf(b: ReadBatch): Uint8Array {
  if (b.asSent !== undefined) return b.asSent.batch;
  if (b.control !== undefined)
    return controlBatchBytes({ ...b, ...b.control, baseOffset: b.baseOffset });
  // An older build kept a plain producer's epoch as sent; the batch format holds an int16.
  const epoch = b.producerEpoch >= -32768 && b.producerEpoch <= 32767 ? b.producerEpoch : -1;
  return batchBytes({ ...b, producerEpoch: epoch });
}

function asBuffer(b: Uint8Array | null): Buffer {
  if (b === null) return EMPTY;
  return Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength);
}

// Field tags: (field number << 3) | wire type (0 varint, 2 length-delimited).
const TAG_PARTITIONS = (1 << 3) | 2;
const TAG_BATCHES = (8 << 3) | 2;
const TAG_PRODUCER_ID = (1 << 3) | 0;
const TAG_PRODUCER_EPOCH = (2 << 3) | 0;
const TAG_BASE_SEQUENCE = (3 << 3) | 0;
const TAG_IS_TRANSACTIONAL = (4 << 3) | 0;
const TAG_RECORDS = (6 << 3) | 2;
const TAG_BASE_OFFSET = (7 << 3) | 0;
const TAG_KEY = (1 << 3) | 2;
const TAG_VALUE = (2 << 3) | 2;
const TAG_HEADERS = (3 << 3) | 2;
const TAG_TIMESTAMP = (4 << 3) | 0;
const TAG_OFFSET = (5 << 3) | 0;
const TAG_HEADER_KEY = (1 << 3) | 2;
const TAG_HEADER_VALUE = (2 << 3) | 2;
const TAG_KAFKA_BATCH = (13 << 3) | 2;

class Out {
  position = 0;
  constructor(readonly buffer: Buffer) {}

  varint(n: number): void {
    if (n < 0) {
      this.bigVarint(BigInt(n));
      return;
    }
    while (n >= 128) {
      this.buffer[this.position++] = (n % 128) | 128;
      n = Math.floor(n / 128);
    }
    this.buffer[this.position++] = n;
  }

  bigVarint(v: bigint): void {
    let u = BigInt.asUintN(64, v);
    while (u >= 128n) {
      this.buffer[this.position++] = Number(u & 127n) | 128;
      u >>= 7n;
    }
    this.buffer[this.position++] = Number(u);
  }

  bytes(tag: number, b: Uint8Array): void {
    this.buffer[this.position++] = tag;
    this.varint(b.byteLength);
    this.buffer.set(b, this.position);
    this.position += b.byteLength;
  }
}

function lengthDelimitedBytes(bodyBytes: number): number {
  return 1 + varintBytes(bodyBytes) + bodyBytes;
}

/** Sizes of one record's body and of its headers' bodies (the second pass writes with them). */
function recordSizes(r: RecordData, offset: number, headerSizes: number[]): number {
  let size =
    lengthDelimitedBytes(r.key?.byteLength ?? 0) + lengthDelimitedBytes(r.value?.byteLength ?? 0);
  for (const h of r.headers) {
    const hs =
      lengthDelimitedBytes(Buffer.byteLength(h.key)) +
      lengthDelimitedBytes(h.value?.byteLength ?? 0);
    headerSizes.push(hs);
    size += lengthDelimitedBytes(hs);
  }
  return size + 1 + varintBytes(r.timestampMs) + 1 + varintBytes(offset);
}

function batchHeadBytes(b: ReadBatch): number {
  return (
    1 +
    bigVarintBytes(b.producerId) +
    1 +
    varintBytes(b.producerEpoch) +
    1 +
    varintBytes(b.baseSequence) +
    (b.isTransactional ? 2 : 0) +
    1 +
    varintBytes(Number(b.baseOffset))
  );
}

interface BatchSizes {
  readonly totalBytes: number;
  readonly batch: number[];
  readonly record: number[];
  readonly header: number[];
}

/** First pass: the size of every length-delimited body, so the second pass writes in place. */
function sizeBatches(batches: readonly WireBatch[]): BatchSizes {
  const sizes: BatchSizes = { totalBytes: 0, batch: [], record: [], header: [] };
  let total = 0;
  for (const w of batches) {
    if (w.kafkaBytes !== undefined) {
      const size = lengthDelimitedBytes(w.kafkaBytes.byteLength);
      sizes.batch.push(size);
      total += lengthDelimitedBytes(size);
      continue;
    }
    const b = w.batch;
    const base = Number(b.baseOffset);
    let size = batchHeadBytes(b);
    for (let i = 0; i < b.records.length; i++) {
      const rs = recordSizes(b.records[i]!, base + i, sizes.header);
      sizes.record.push(rs);
      size += lengthDelimitedBytes(rs);
    }
    sizes.batch.push(size);
    total += lengthDelimitedBytes(size);
  }
  return { ...sizes, totalBytes: total };
}

/** Second pass: the repeated `batches` field (number 8) of a FetchPartitionResult. */
function writeBatches(out: Out, batches: readonly WireBatch[], sizes: BatchSizes): void {
  let ri = 0;
  let hi = 0;
  batches.forEach((w, bi) => {
    const b = w.batch;
    const base = Number(b.baseOffset);
    out.buffer[out.position++] = TAG_BATCHES;
    out.varint(sizes.batch[bi]!);
    if (w.kafkaBytes !== undefined) {
      const at = out.position + 1 + varintBytes(w.kafkaBytes.byteLength);
      out.bytes(TAG_KAFKA_BATCH, w.kafkaBytes);
      patchBatchOffsets(
        out.buffer.subarray(at, out.position),
        b.baseOffset,
        LEADER_EPOCH_NOT_TRACKED,
      );
      return;
    }
    out.buffer[out.position++] = TAG_PRODUCER_ID;
    out.bigVarint(b.producerId);
    out.buffer[out.position++] = TAG_PRODUCER_EPOCH;
    out.varint(b.producerEpoch);
    out.buffer[out.position++] = TAG_BASE_SEQUENCE;
    out.varint(b.baseSequence);
    if (b.isTransactional) {
      out.buffer[out.position++] = TAG_IS_TRANSACTIONAL;
      out.buffer[out.position++] = 1;
    }
    out.buffer[out.position++] = TAG_BASE_OFFSET;
    out.varint(base);
    for (let i = 0; i < b.records.length; i++) {
      const r = b.records[i]!;
      out.buffer[out.position++] = TAG_RECORDS;
      out.varint(sizes.record[ri++]!);
      out.bytes(TAG_KEY, r.key ?? EMPTY);
      out.bytes(TAG_VALUE, r.value ?? EMPTY);
      for (const h of r.headers) {
        out.buffer[out.position++] = TAG_HEADERS;
        out.varint(sizes.header[hi++]!);
        out.bytes(TAG_HEADER_KEY, Buffer.from(h.key, "utf8"));
        out.bytes(TAG_HEADER_VALUE, h.value ?? EMPTY);
      }
      out.buffer[out.position++] = TAG_TIMESTAMP;
      out.varint(r.timestampMs);
      out.buffer[out.position++] = TAG_OFFSET;
      out.varint(base + i);
    }
  });
}

type Serialize = (value: unknown) => Buffer;

/**
 * A FetchResponse serializer: partitions whose batches are all WireBatch get their batches
 * written by hand; any other shape goes to the generated serializer unchanged.
 */
export function fetchResponseSerializer(
  serializePartition: Serialize,
  serializeResponse: Serialize,
): Serialize {
  return (response: unknown) => {
    const partitions: unknown = (response as { partitions?: unknown } | null | undefined)
      ?.partitions;
    if (
      !Array.isArray(partitions) ||
      !partitions.every(
        (p) => Array.isArray(p?.batches) && p.batches.every((b: unknown) => b instanceof WireBatch),
      )
    ) {
      return serializeResponse(response);
    }
    const parts = partitions.map((p) => {
      const batches = p.batches as WireBatch[];
      const head = serializePartition({ ...p, batches: [] });
      const sizes = sizeBatches(batches);
      return { head, batches, sizes, bodyBytes: head.length + sizes.totalBytes };
    });
    const totalBytes = parts.reduce((n, p) => n + lengthDelimitedBytes(p.bodyBytes), 0);
    // Room for grpc's 5-byte frame header in front: the answer is sent uncopied (framed-response.ts).
    const out = new Out(allocFramed(totalBytes));
    for (const p of parts) {
      out.buffer[out.position++] = TAG_PARTITIONS;
      out.varint(p.bodyBytes);
      out.buffer.set(p.head, out.position);
      out.position += p.head.length;
      writeBatches(out, p.batches, p.sizes);
    }
    if (out.position !== totalBytes)
      throw new Error(`fetch codec: wrote ${out.position} bytes, sized ${totalBytes}`);
    return out.buffer;
  };
}

/** The Broker service definition with the hand-written Fetch answer encoder (or unchanged if the proto lacks what it needs). */
export function withFetchCodec(
  definition: grpc.ServiceDefinition,
  packageDefinition: PackageDefinition,
): grpc.ServiceDefinition {
  const fetch = definition.Fetch;
  const partition = packageDefinition["tern.v1.FetchPartitionResult"] as
    { serialize?: Serialize } | undefined;
  if (fetch === undefined || typeof partition?.serialize !== "function") return definition;
  installFramedResponses();
  return {
    ...definition,
    Fetch: {
      ...fetch,
      responseSerialize: fetchResponseSerializer(
        partition.serialize,
        fetch.responseSerialize as Serialize,
      ),
    },
  };
}
