// Codec of the entries of a __transaction_state/N Raft group (Kafka's TransactionLog). One byte
// of version, then UTF-8 JSON with 64-bit ids as decimal strings. Every decoded value is checked:
// a malformed entry is a programmer or disk error and crashes loudly.
import { assert } from "../../libs/common/assert.js";
import type { EndReason, TopicPartitionRef, TxnRecord, TxnState } from "./transaction-metadata.js";

export const TXN_LOG_VERSION = 1;
/** Bound on the ids one expire entry may remove. */
export const EXPIRE_IDS_MAX = 500;

export type TxnLogEntry =
  /** The full latest state of one transactional id. */
  | { readonly kind: "txn"; readonly record: TxnRecord }
  /** Proposed by a new leader; applying it proves the replica has applied everything before its term. */
  | { readonly kind: "noop"; readonly nowMs: number }
  /** Forget idle ids: each is removed only if it is still idle at nowMs (checked on apply). */
  | {
      readonly kind: "expire";
      readonly nowMs: number;
      readonly expirationMs: number;
      readonly transactionalIds: readonly string[];
    };

const STATES: readonly TxnState[] = [
  "Empty",
  "Ongoing",
  "PrepareCommit",
  "PrepareAbort",
  "CompleteCommit",
  "CompleteAbort",
];
const REASONS: readonly EndReason[] = ["client", "fence", "timeout", "admin"];

export function encodeRecordJson(r: TxnRecord): unknown {
  return {
    id: r.transactionalId,
    pid: r.producerId.toString(),
    epoch: r.producerEpoch,
    lastPid: r.lastProducerId.toString(),
    lastEpoch: r.lastProducerEpoch,
    timeoutMs: r.timeoutMs,
    state: r.state,
    partitions: r.partitions.map((tp) => [tp.topic, tp.partition]),
    startMs: r.txnStartTimeMs,
    updateMs: r.updateTimeMs,
    reason: r.endReason,
  };
}

export function decodeRecordJson(j: unknown): TxnRecord {
  assert(typeof j === "object" && j !== null, "txn record is an object");
  const o = j as Record<string, unknown>;
  const partitions = o.partitions;
  assert(Array.isArray(partitions), "txn record partitions is an array");
  const record: TxnRecord = {
    transactionalId: str(o.id, "id"),
    producerId: big(o.pid, "pid"),
    producerEpoch: int(o.epoch, "epoch"),
    lastProducerId: big(o.lastPid, "lastPid"),
    lastProducerEpoch: int(o.lastEpoch, "lastEpoch"),
    timeoutMs: int(o.timeoutMs, "timeoutMs"),
    state: oneOf(o.state, STATES, "state"),
    partitions: partitions.map((p): TopicPartitionRef => {
      assert(Array.isArray(p) && p.length === 2, "partition is a [topic, partition] pair");
      return { topic: str(p[0], "topic"), partition: int(p[1], "partition") };
    }),
    txnStartTimeMs: int(o.startMs, "startMs"),
    updateTimeMs: int(o.updateMs, "updateMs"),
    endReason: o.reason === null ? null : oneOf(o.reason, REASONS, "reason"),
  };
  assert(record.transactionalId.length > 0, "txn record has a transactional id");
  assert(
    record.producerId >= 0n && record.producerEpoch >= 0,
    "txn record has a producer id and epoch",
  );
  return record;
}

export function encodeEntry(entry: TxnLogEntry): Uint8Array {
  let body: unknown;
  switch (entry.kind) {
    case "txn":
      body = { kind: "txn", record: encodeRecordJson(entry.record) };
      break;
    case "noop":
      body = { kind: "noop", nowMs: entry.nowMs };
      break;
    case "expire":
      assert(entry.transactionalIds.length <= EXPIRE_IDS_MAX, "expire entry within its bound");
      body = {
        kind: "expire",
        nowMs: entry.nowMs,
        expirationMs: entry.expirationMs,
        ids: entry.transactionalIds,
      };
      break;
  }
  const json = new TextEncoder().encode(JSON.stringify(body));
  const out = new Uint8Array(json.length + 1);
  out[0] = TXN_LOG_VERSION;
  out.set(json, 1);
  return out;
}

export function decodeEntry(data: Uint8Array): TxnLogEntry {
  assert(
    data.length > 1 && data[0] === TXN_LOG_VERSION,
    () => `txn log entry version ${data[0]} is not ${TXN_LOG_VERSION}`,
  );
  const o = JSON.parse(new TextDecoder().decode(data.subarray(1))) as Record<string, unknown>;
  switch (o.kind) {
    case "txn":
      return { kind: "txn", record: decodeRecordJson(o.record) };
    case "noop":
      return { kind: "noop", nowMs: int(o.nowMs, "nowMs") };
    case "expire": {
      const ids = o.ids;
      assert(Array.isArray(ids) && ids.length <= EXPIRE_IDS_MAX, "expire ids within bound");
      return {
        kind: "expire",
        nowMs: int(o.nowMs, "nowMs"),
        expirationMs: int(o.expirationMs, "expirationMs"),
        transactionalIds: ids.map((i) => str(i, "id")),
      };
    }
    default:
      throw new Error(`unknown txn log entry kind ${String(o.kind)}`);
  }
}

function str(v: unknown, what: string): string {
  assert(typeof v === "string", () => `${what} is a string`);
  return v;
}
function int(v: unknown, what: string): number {
  assert(typeof v === "number" && Number.isSafeInteger(v), () => `${what} is an integer`);
  return v;
}
function big(v: unknown, what: string): bigint {
  assert(typeof v === "string" && /^-?\d+$/.test(v), () => `${what} is a decimal string`);
  return BigInt(v);
}
function oneOf<T extends string>(v: unknown, values: readonly T[], what: string): T {
  assert(
    typeof v === "string" && (values as readonly string[]).includes(v),
    () => `${what} is one of ${values.join("|")}`,
  );
  return v as T;
}
