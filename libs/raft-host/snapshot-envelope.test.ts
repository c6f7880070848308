import { describe, expect, it } from "vitest";
import { decodeSnapshotEnvelope, encodeSnapshotEnvelope } from "./snapshot-envelope.js";
import { DecodeError } from "../common/decode-error.js";

const bytes = (...b: number[]): Uint8Array => new Uint8Array(b);

/**
 * An envelope exactly as the build before retained entries were removed wrote it (state 42 43,
 * retainFromIndex 8 = snapshot index 7 + 1, no entries), and one with an empty entry at index 1.
 */
const PREVIOUS_BUILD = bytes(1, 0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 2, 42, 43, 0, 0, 0, 0);
const PREVIOUS_BUILD_WITH_ENTRY = bytes(
  1,
  0,
  0,
  0,
  0,
  0,
  0,
  0,
  7,
  0,
  0,
  0,
  2,
  42,
  43,
  0,
  0,
  0,
  1,
  0,
  0,
  0,
  21,
  0,
  0,
  0,
  0,
  0,
  0,
  0,
  1,
  0,
  0,
  0,
  0,
  0,
  0,
  0,
  1,
  0,
  0,
  0,
  0,
  0,
);

describe("snapshot envelope", () => {
  it("round-trips the state, at indexes beyond 32 bits", () => {
    for (const index of [0, 7, 2 ** 40]) {
      expect([...decodeSnapshotEnvelope(encodeSnapshotEnvelope(bytes(42, 43), index))]).toEqual([
        42, 43,
      ]);
    }
    expect([...decodeSnapshotEnvelope(encodeSnapshotEnvelope(bytes(), 3))]).toEqual([]);
  });

  it("writes the previous build's layout and reads what it wrote", () => {
    expect([...encodeSnapshotEnvelope(bytes(42, 43), 7)]).toEqual([...PREVIOUS_BUILD]);
    expect([...decodeSnapshotEnvelope(PREVIOUS_BUILD)]).toEqual([42, 43]);
  });

  it("refuses truncated, trailing, unknown-version data and envelopes with retained entries", () => {
    const good = encodeSnapshotEnvelope(bytes(1), 1);
    expect(() => decodeSnapshotEnvelope(good.subarray(0, good.byteLength - 1))).toThrow(
      DecodeError,
    );
    expect(() => decodeSnapshotEnvelope(good.subarray(0, 5))).toThrow(/truncated/);
    const trailing = new Uint8Array(good.byteLength + 1);
    trailing.set(good);
    expect(() => decodeSnapshotEnvelope(trailing)).toThrow(/trailing/);
    const version = Uint8Array.from(good);
    version[0] = 9;
    expect(() => decodeSnapshotEnvelope(version)).toThrow(/version 9/);
    expect(() => decodeSnapshotEnvelope(PREVIOUS_BUILD_WITH_ENTRY)).toThrow(/1 retained entries/);
    expect(() => encodeSnapshotEnvelope(bytes(), -1)).toThrow(DecodeError);
  });
});
