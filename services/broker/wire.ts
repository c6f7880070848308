// Conversions between the proto-loader objects (camelCase, int64 as decimal strings, enums as
// names, bytes as Buffer) and the broker's internal types.
import { TernError, errorSpec, type ErrorName } from "../../libs/common/errors.js";
import { BROKER_LIMITS } from "./broker-limits.js";
import type { RecordData } from "./partition-entry.js";
import type { Isolation, ReadBatch } from "./partition-state-machine.js";
import { WireBatch } from "./fetch-codec.js";
import type { Record__Output } from "../../libs/common/proto-types/index.js";

const INT64_RE = /^-?\d{1,19}$/;

/** An int64 field (decimal string, number, or Long-like) as bigint; throws CORRUPT_MESSAGE. */
export function int64(value: unknown, what: string): bigint {
  if (typeof value === "bigint") return value;
  if (typeof value === "number" && Number.isSafeInteger(value)) return BigInt(value);
  if (typeof value === "string" && INT64_RE.test(value)) return BigInt(value);
  if (value === undefined || value === null || value === "") return 0n;
  throw new TernError("CORRUPT_MESSAGE", `${what}: not a 64-bit integer: ${String(value)}`);
}

export function int32(value: unknown, fallback = 0): number {
  return typeof value === "number" && Number.isInteger(value) ? value : fallback;
}

export interface WireEndpoint {
  nodeId: number;
  address: string;
}

export function errorFields(
  error: ErrorName,
  message = "",
): { errorCode: ErrorName; errorMessage: string } {
  if (error === "NONE") return { errorCode: "NONE", errorMessage: "" };
  // Cut: messages may quote request fields, and every partition's answer has a bounded size.
  const text = message.length > 0 ? message : errorSpec(error).message;
  return {
    errorCode: error,
    errorMessage:
      text.length > BROKER_LIMITS.errorMessageCharsMax
        ? `${text.slice(0, BROKER_LIMITS.errorMessageCharsMax - 3)}...`
        : text,
  };
}

/** An enum field given as name or number. */
export function enumName(value: unknown, names: readonly string[]): string | undefined {
  if (typeof value === "string") return value;
  if (typeof value === "number") return names[value];
  return undefined;
}

export const ISOLATION_NAMES = ["READ_UNCOMMITTED", "READ_COMMITTED"] as const;
/** The isolation_level field (unset: READ_UNCOMMITTED); throws INVALID_REQUEST for another value. */
export function parseIsolation(value: unknown): Isolation {
  const name = enumName(value, ISOLATION_NAMES) ?? "READ_UNCOMMITTED";
  if (name !== "READ_UNCOMMITTED" && name !== "READ_COMMITTED")
    throw new TernError("INVALID_REQUEST", `unknown isolation level ${String(value)}`);
  return name;
}

export const CONTROL_TYPE_NAMES = ["CONTROL_TYPE_UNSPECIFIED", "COMMIT", "ABORT"] as const;

function bytesOrNull(value: unknown): Uint8Array | null {
  if (value instanceof Uint8Array) return value.length === 0 ? null : value;
  return null;
}

/** A wire record as RecordData; proto3 cannot tell empty from absent, so empty bytes mean null. */
export function recordFromWire(r: Record__Output): RecordData {
  const headers = Array.isArray(r?.headers)
    ? r.headers.map((h) => ({ key: String(h?.key ?? ""), value: bytesOrNull(h?.value) }))
    : [];
  const timestampMs = Number(int64(r?.timestampMs, "record timestamp_ms"));
  return { key: bytesOrNull(r?.key), value: bytesOrNull(r?.value), headers, timestampMs };
}

/** The proto-loader view of a fetched batch (as kafka_batch, or as records); fetch-codec.ts encodes it without that view. */
export function batchToWire(b: ReadBatch, asKafkaBatch: boolean): WireBatch {
  return new WireBatch(b, asKafkaBatch);
}
