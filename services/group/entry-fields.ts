// The fields the __consumer_offsets entries share (offsets-codec.ts, group-codec.ts,
// classic-groups-state.ts) and the checks that read them from decoded JSON. A leaf: it imports
// none of the codecs, so they can all import it.
import { DecodeError } from "../../libs/common/decode-error.js";

export interface OffsetCommitItem {
  readonly topic: string;
  readonly partition: number;
  readonly offset: bigint;
  /** -1 when unknown. */
  readonly leaderEpoch: number;
  readonly metadata: string;
}

export interface GenerationFields {
  /** -1 for simple groups. */
  readonly generationId: number;
  readonly memberId: string;
  readonly groupInstanceId: string;
}

export function object(v: unknown, what: string): Record<string, unknown> {
  if (typeof v !== "object" || v === null || Array.isArray(v))
    throw new DecodeError("offsets", `${what} must be an object`);
  return v as Record<string, unknown>;
}

export function str(v: unknown, what: string): string {
  if (typeof v !== "string") throw new DecodeError("offsets", `${what} must be a string`);
  return v;
}

export function int(v: unknown, what: string): number {
  if (typeof v !== "number" || !Number.isSafeInteger(v))
    throw new DecodeError("offsets", `${what} must be a safe integer`);
  return v;
}

export function bool(v: unknown, what: string): boolean {
  if (typeof v !== "boolean") throw new DecodeError("offsets", `${what} must be a boolean`);
  return v;
}

export function big(v: unknown, what: string): bigint {
  if (typeof v !== "string" || !/^-?\d{1,20}$/.test(v))
    throw new DecodeError("offsets", `${what} must be a decimal int64 string`);
  const n = BigInt(v);
  if (n < -(1n << 63n) || n >= 1n << 63n)
    throw new DecodeError("offsets", `${what} is outside int64`);
  return n;
}

/** Parses a wire int64 (decimal string from proto-loader, or number) into a bigint; undefined when malformed. */
export function parseInt64(v: unknown): bigint | undefined {
  if (typeof v === "bigint") return v;
  if (typeof v === "number") return Number.isSafeInteger(v) ? BigInt(v) : undefined;
  if (typeof v !== "string" || !/^-?\d{1,20}$/.test(v)) return undefined;
  const n = BigInt(v);
  return n < -(1n << 63n) || n >= 1n << 63n ? undefined : n;
}
