// Encoded sizes of protobuf varints, for the hand-written wire encoders (Raft frames, Fetch
// answers) that size their buffer before writing. Pure.

/** A negative int32/int64 is a 10-byte varint (two's complement, sign-extended to 64 bits). */
const NEGATIVE_VARINT_BYTES = 10;

/** Bytes of the varint of a non-negative safe integer, or of any negative one (int32/int64). */
export function varintBytes(n: number): number {
  if (n < 0) return NEGATIVE_VARINT_BYTES;
  let bytes = 1;
  while (n >= 128) {
    n = Math.floor(n / 128);
    bytes++;
  }
  return bytes;
}

/** Bytes of the varint of a 64-bit value (negative values as their two's complement). */
export function bigVarintBytes(v: bigint): number {
  let u = BigInt.asUintN(64, v);
  let bytes = 1;
  while (u >= 128n) {
    u >>= 7n;
    bytes++;
  }
  return bytes;
}
