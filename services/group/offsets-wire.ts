// group.proto messages as proto-loader hands them over (camelCase, int64 as decimal strings,
// enums as names) and their conversion to and from the state machine's types.
import { TernError, type ErrorName } from "../../libs/common/errors.js";
import { parseInt64, type OffsetCommitItem } from "./offsets-codec.js";
import type { FetchedOffset, PartitionOutcome } from "./offsets-state-machine.js";
import type { Refusal } from "./offsets-validation.js";

export interface WireCommitPartition {
  topic?: string;
  partition?: number;
  offset?: string | number;
  leaderEpoch?: number;
  metadata?: string;
}

export interface WireOffsetCommitRequest {
  groupId?: string;
  generationId?: number;
  memberId?: string;
  groupInstanceId?: string;
  partitions?: WireCommitPartition[];
}

export interface WireTxnOffsetCommitRequest extends WireOffsetCommitRequest {
  transactionalId?: string;
  producerId?: string | number;
  producerEpoch?: number;
  /** Transactions V2: the group's partition joins the transaction here (no AddOffsetsToTxn). */
  addOffsetsToTxn?: boolean;
}

export interface WireOffsetFetchRequest {
  groupId?: string;
  partitions?: Array<{ topic?: string; partition?: number }>;
  requireStable?: boolean;
}

export interface WirePartitionResult {
  topic: string;
  partition: number;
  errorCode: ErrorName;
  errorMessage: string;
}

export interface WireFetchedOffset {
  topic: string;
  partition: number;
  offset: string;
  leaderEpoch: number;
  metadata: string;
  commitTimestampMs: string;
  errorCode: ErrorName;
  errorMessage: string;
}

/** A request partition parsed into an item, or refused (malformed int64) with its identity kept. */
export type ParsedItem =
  | { readonly item: OffsetCommitItem; readonly refusal?: undefined }
  | { readonly item: OffsetCommitItem; readonly refusal: Refusal };

export function parseCommitPartitions(
  partitions: readonly WireCommitPartition[] | undefined,
): ParsedItem[] {
  return (partitions ?? []).map((p) => {
    const offset = parseInt64(p.offset ?? "0");
    const item: OffsetCommitItem = {
      topic: p.topic ?? "",
      partition: p.partition ?? 0,
      offset: offset ?? -1n,
      // Proto3 cannot tell "unset" from 0; clients send -1 for "unknown" explicitly.
      leaderEpoch: p.leaderEpoch ?? -1,
      metadata: p.metadata ?? "",
    };
    if (offset === undefined)
      return {
        item,
        refusal: {
          error: "INVALID_REQUEST",
          message: `offset ${String(p.offset)} is not an int64`,
        },
      };
    return { item };
  });
}

export function parseProducerId(value: string | number | undefined): bigint {
  const producerId = parseInt64(value ?? "-1");
  if (producerId === undefined)
    throw new TernError("INVALID_REQUEST", `producer id ${String(value)} is not an int64`);
  return producerId;
}

export function partitionResult(o: PartitionOutcome): WirePartitionResult {
  return { topic: o.topic, partition: o.partition, errorCode: o.error, errorMessage: o.message };
}

export function fetchedOffset(o: FetchedOffset): WireFetchedOffset {
  return {
    topic: o.topic,
    partition: o.partition,
    offset: o.offset.toString(),
    leaderEpoch: o.leaderEpoch,
    metadata: o.metadata,
    commitTimestampMs: String(o.commitTimestampMs),
    errorCode: o.error,
    errorMessage: o.message,
  };
}
