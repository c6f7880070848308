// The entries of a __consumer_offsets/N Raft log and their byte encoding. Everything the state
// machine needs to apply an entry travels inside it (the commit time included), so every
// replica computes the same state. Encoding: one format byte, then UTF-8 JSON with 64-bit
// numbers (offsets, producer ids) as decimal strings.
import { assert } from "../../libs/common/assert.js";
import { decodeGroupEntry, type GroupEntry } from "./group-codec.js";
import { decodeClassicGroupEntry, type ClassicGroupEntry } from "./classic-groups-state.js";
import { DecodeError } from "../../libs/common/decode-error.js";
import {
  big,
  bool,
  int,
  object,
  str,
  type GenerationFields,
  type OffsetCommitItem,
} from "./entry-fields.js";

export {
  bool,
  int,
  object,
  parseInt64,
  str,
  type GenerationFields,
  type OffsetCommitItem,
} from "./entry-fields.js";

export const ENTRY_FORMAT_V1 = 1;

/** OffsetCommit: visible as soon as applied. */
export interface CommitEntry extends GenerationFields {
  readonly type: "commit";
  readonly groupId: string;
  /** Leader's wall clock when proposed: the commit time stored with the offsets. */
  readonly timestampMs: number;
  readonly offsets: readonly OffsetCommitItem[];
}

/** TxnOffsetCommit: pending until a marker of the same producer id arrives. */
export interface TxnCommitEntry extends GenerationFields {
  readonly type: "txn-commit";
  readonly transactionalId: string;
  readonly groupId: string;
  readonly producerId: bigint;
  readonly producerEpoch: number;
  /** The leader's verification guard (offsets-state-machine.ts checkTxnGuard); absent in entries written before guards. */
  readonly txnGuard?: number;
  readonly timestampMs: number;
  readonly offsets: readonly OffsetCommitItem[];
}

/** A COMMIT or ABORT control marker from the transaction coordinator (via WriteTxnMarkers). */
export interface MarkerEntry {
  readonly type: "marker";
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly committed: boolean;
  /** Raft term of the coordinator's __transaction_state partition. */
  readonly coordinatorEpoch: number;
  /** The epoch is one above the transaction's (partition-entry.ts MarkerEntry); absent: false. */
  readonly epochBumped?: boolean;
  readonly timestampMs: number;
}

/**
 * Housekeeping proposed by the leader: drops simple-group offsets older than retentionMs and
 * idle producer records older than producerExpirationMs, as of nowMs. The durations travel in
 * the entry so that replicas with different configuration still agree.
 */
export interface ExpireEntry {
  readonly type: "expire";
  readonly nowMs: number;
  readonly offsetsRetentionMs: number;
  readonly producerExpirationMs: number;
}

export type OffsetsEntry =
  CommitEntry | TxnCommitEntry | MarkerEntry | ExpireEntry | GroupEntry | ClassicGroupEntry;

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

export function encodeEntry(entry: OffsetsEntry): Uint8Array {
  const json = JSON.stringify(entry, (_key, value: unknown) =>
    typeof value === "bigint" ? value.toString() : value,
  );
  const body = encoder.encode(json);
  const out = new Uint8Array(1 + body.length);
  out[0] = ENTRY_FORMAT_V1;
  out.set(body, 1);
  return out;
}

export function decodeEntry(data: Uint8Array): OffsetsEntry {
  if (data.length < 2 || data[0] !== ENTRY_FORMAT_V1)
    throw new DecodeError("offsets", `unknown entry format ${data[0]}`);
  let raw: unknown;
  try {
    raw = JSON.parse(decoder.decode(data.subarray(1)));
  } catch (e) {
    throw new DecodeError("offsets", `entry is not valid JSON: ${(e as Error).message}`);
  }
  const o = object(raw, "entry");
  switch (o.type) {
    case "commit":
      return {
        type: "commit",
        groupId: str(o.groupId, "groupId"),
        ...generation(o),
        timestampMs: int(o.timestampMs, "timestampMs"),
        offsets: items(o.offsets),
      };
    case "txn-commit":
      return {
        type: "txn-commit",
        transactionalId: str(o.transactionalId, "transactionalId"),
        groupId: str(o.groupId, "groupId"),
        producerId: big(o.producerId, "producerId"),
        producerEpoch: int(o.producerEpoch, "producerEpoch"),
        ...(o.txnGuard !== undefined ? { txnGuard: int(o.txnGuard, "txnGuard") } : {}),
        ...generation(o),
        timestampMs: int(o.timestampMs, "timestampMs"),
        offsets: items(o.offsets),
      };
    case "marker":
      return {
        type: "marker",
        producerId: big(o.producerId, "producerId"),
        producerEpoch: int(o.producerEpoch, "producerEpoch"),
        committed: bool(o.committed, "committed"),
        coordinatorEpoch: int(o.coordinatorEpoch, "coordinatorEpoch"),
        ...(o.epochBumped === true ? { epochBumped: true } : {}),
        timestampMs: int(o.timestampMs, "timestampMs"),
      };
    case "expire":
      return {
        type: "expire",
        nowMs: int(o.nowMs, "nowMs"),
        offsetsRetentionMs: int(o.offsetsRetentionMs, "offsetsRetentionMs"),
        producerExpirationMs: int(o.producerExpirationMs, "producerExpirationMs"),
      };
    case "group-heartbeat":
    case "group-fence":
    case "group-delete":
    case "offset-delete":
      return decodeGroupEntry(o);
    case "classic-group":
      return decodeClassicGroupEntry(o);
    default:
      throw new DecodeError("offsets", `unknown entry type ${JSON.stringify(o.type)}`);
  }
}

function generation(o: Record<string, unknown>): GenerationFields {
  return {
    generationId: int(o.generationId, "generationId"),
    memberId: str(o.memberId, "memberId"),
    groupInstanceId: str(o.groupInstanceId, "groupInstanceId"),
  };
}

function items(v: unknown): OffsetCommitItem[] {
  if (!Array.isArray(v)) throw new DecodeError("offsets", "offsets must be an array");
  return v.map((raw) => {
    const o = object(raw, "offset");
    return {
      topic: str(o.topic, "topic"),
      partition: int(o.partition, "partition"),
      offset: big(o.offset, "offset"),
      leaderEpoch: int(o.leaderEpoch, "leaderEpoch"),
      metadata: str(o.metadata, "metadata"),
    };
  });
}

assert(ENTRY_FORMAT_V1 > 0 && ENTRY_FORMAT_V1 < 256, "entry format must fit one byte");
