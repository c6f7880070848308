// The gRPC Produce handler: an adapter over the partition service (partition-service/produce.ts).
// It reads each RecordBatch into the service's terms: kafka_batch (a v2 batch its producer
// built) is checked as the Kafka listener checks a Kafka producer's (magic, CRC-32C, records
// against the header; record-batch.ts), decoded on the spot when uncompressed and at its
// producer's turn, within the broker's inflation budget, when compressed; the simple form
// (records, or compressed_records inflated off the event loop: simple-batch.ts) becomes
// records. A batch that cannot be read is refused after the partition's own checks.
import { inflateRecords, wireCompression } from "./simple-batch.js";
import {
  BatchRefusal,
  decodeOnlyBatch,
  decodeOnlyPlainBatch,
  inflationBound,
  type DecodedBatch,
} from "../kafka/record-batch.js";
import { InflationBudget } from "../kafka/inflation-budget.js";
import { AT_PRODUCER_ID } from "../../libs/records/batch-header.js";
import { isTernError, type ErrorName } from "../../libs/common/errors.js";
import type { RecordData } from "./partition-entry.js";
import type { PartitionService } from "./partition-service/partition-service.js";
import type { AppendBatch, ArrivingBatch } from "./partition-service/produce.js";
import { errorFields, int32, int64, recordFromWire } from "./wire.js";
import type {
  ProduceRequest__Output,
  ProduceResponse__Output,
  RecordBatch__Output,
} from "../../libs/common/proto-types/index.js";

/** The broker's bound on inflated gRPC kafka_batch records held at once (as the Kafka listener's default). */
export const KAFKA_BATCH_INFLATION_BYTES_MAX = 256 * 1024 * 1024;

type WireBatch = Partial<RecordBatch__Output>;

export function createProduceHandler(
  service: Pick<PartitionService, "produce">,
  /** Bytes gRPC producers' compressed kafka_batch records may inflate to at once. */
  inflation = new InflationBudget(KAFKA_BATCH_INFLATION_BYTES_MAX),
): (request: ProduceRequest__Output) => Promise<ProduceResponse__Output> {
  return async (request) => {
    const partitions = Array.isArray(request?.partitions) ? request.partitions : [];
    const outcomes = await service.produce({
      transactionalId: typeof request?.transactionalId === "string" ? request.transactionalId : "",
      addPartitions: request?.addPartitionsToTxn === true,
      acks: int32(request?.acks),
      timeoutMs: int32(request?.timeoutMs),
      partitions: partitions.map((p) => ({
        topic: String(p?.topic ?? ""),
        partition: int32(p?.partition, -1),
        batch: arriving(p?.batch, inflation),
      })),
    });
    return {
      partitions: outcomes.map((o) => ({
        topic: o.topic,
        partition: o.partition,
        ...errorFields(o.error, o.message),
        baseOffset: o.baseOffset.toString(),
        logAppendTimeMs: String(o.appendTimeMs),
        logStartOffset: o.logStartOffset.toString(),
        leader: o.leader ?? null,
      })),
    };
  };
}

function refused(error: ErrorName, message: string): ArrivingBatch {
  return { kind: "refused", error, message };
}

/** A wire batch in the service's terms (refusals are answered after the partition's checks). */
function arriving(raw: WireBatch | null | undefined, inflation: InflationBudget): ArrivingBatch {
  if (raw === null || raw === undefined) return refused("INVALID_RECORD", "missing batch");
  const built: unknown = raw.kafkaBatch;
  if (Buffer.isBuffer(built) && built.byteLength > 0) return arrivingBuilt(built, inflation);
  const codec = wireCompression(raw);
  if (codec === "unknown")
    return refused(
      "UNSUPPORTED_COMPRESSION_TYPE",
      `compression ${String(raw.compression)} is not one of none, gzip, snappy, lz4, zstd`,
    );
  if (codec === "none") {
    const batch = readSimpleBatch(raw);
    return "error" in batch ? refused(batch.error, batch.message) : { kind: "ready", batch };
  }
  let producerId: bigint;
  try {
    producerId = int64(raw.producerId, "producer_id");
  } catch (e) {
    if (isTernError(e)) return refused(e.errorName, e.message);
    throw e;
  }
  // Inflates in the thread pool from now on; awaited at the producer's turn.
  const inflating = inflateRecords(raw, codec);
  // Handled where it is made: awaited only at its turn, or never (the partition refused first).
  inflating.catch(() => undefined);
  return {
    kind: "pending",
    producerId,
    decode: async () => {
      const inflated = await inflating;
      if ("error" in inflated) return inflated;
      const batch = readSimpleBatch(raw, inflated.records);
      return "error" in batch ? batch : { ...batch, compressed: inflated.section };
    },
  };
}

/** The simple form's producer fields and records (given when inflated from compressed_records). */
export function readSimpleBatch(
  raw: WireBatch,
  inflated?: RecordData[],
): AppendBatch | { error: ErrorName; message: string } {
  try {
    const producerId = int64(raw.producerId, "producer_id");
    if (inflated === undefined && !Array.isArray(raw.records))
      return { error: "CORRUPT_MESSAGE", message: "records is not a list" };
    return {
      producerId,
      producerEpoch: int32(raw.producerEpoch),
      baseSequence: int32(raw.baseSequence),
      isTransactional: raw.isTransactional === true,
      isControl: raw.isControl === true,
      records: inflated ?? (raw.records ?? []).map(recordFromWire),
    };
  } catch (e) {
    if (isTernError(e)) return { error: e.errorName, message: e.message };
    throw e;
  }
}

/** RecordBatch.kafka_batch (then the batch's other fields are ignored). */
function arrivingBuilt(bytes: Buffer, inflation: InflationBudget): ArrivingBatch {
  let plain: DecodedBatch | undefined;
  try {
    plain = decodeOnlyPlainBatch(bytes);
  } catch (e) {
    if (e instanceof BatchRefusal) return refused(e.errorName, e.message);
    throw e;
  }
  if (plain !== undefined) return { kind: "ready", batch: plain };
  // Compressed: inflates at its producer's turn, the bound from its header reserved first.
  return {
    kind: "pending",
    // decodeOnlyPlainBatch checked the header's bytes are there.
    producerId: bytes.readBigInt64BE(AT_PRODUCER_ID),
    decode: async () => {
      const hold = await inflation.acquire(inflationBound(bytes));
      try {
        return await decodeOnlyBatch(bytes);
      } catch (e) {
        if (e instanceof BatchRefusal) return { error: e.errorName, message: e.message };
        throw e;
      } finally {
        hold.release();
      }
    },
  };
}
