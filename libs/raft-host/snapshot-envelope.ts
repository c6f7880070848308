// What the host stores and sends as a group's snapshot data: the state machine's snapshot()
// output in a small envelope. Layout (version 1): version u8, u64 (formerly retainFromIndex),
// state length u32, state, entry count u32.
//
// The envelope once also carried log entries a state machine retained below the snapshot
// (StateMachine.retainFromIndex, removed: partitions keep their records in segment files,
// docs/storage.md). The byte layout is kept as it was, so snapshots written by earlier builds
// (envelopes with zero entries) still load and builds on either side of the change exchange
// snapshots: this build writes index + 1 in the u64 (what an earlier build reads as "nothing
// retained") and a zero entry count, ignores the u64 on read, and refuses a nonzero entry
// count (nothing here could hand retained entries back to a state machine).
import { DecodeError } from "../common/decode-error.js";

const ENVELOPE_VERSION = 1;
const HEADER_BYTES = 1 + 8 + 4;
const TWO_POW_32 = 4294967296;

/** Wraps a state machine's snapshot at `index` for storage and transfer. */
export function encodeSnapshotEnvelope(state: Uint8Array, index: number): Uint8Array {
  if (!Number.isSafeInteger(index) || index < 0)
    throw new DecodeError("raft", `snapshot envelope: bad index ${index}`);
  const out = new Uint8Array(HEADER_BYTES + state.byteLength + 4);
  const view = new DataView(out.buffer);
  const noneRetained = index + 1;
  view.setUint8(0, ENVELOPE_VERSION);
  view.setUint32(1, Math.floor(noneRetained / TWO_POW_32));
  view.setUint32(5, noneRetained >>> 0);
  view.setUint32(9, state.byteLength);
  out.set(state, HEADER_BYTES);
  view.setUint32(HEADER_BYTES + state.byteLength, 0);
  return out;
}

/** The state machine's snapshot, a view into data. Throws DecodeError on anything malformed. */
export function decodeSnapshotEnvelope(data: Uint8Array): Uint8Array {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  if (data.byteLength < HEADER_BYTES)
    throw new DecodeError(
      "raft",
      `snapshot envelope: truncated at byte 0 (${data.byteLength} bytes)`,
    );
  const version = view.getUint8(0);
  if (version !== ENVELOPE_VERSION)
    throw new DecodeError("raft", `snapshot envelope: unknown version ${version}`);
  const stateBytes = view.getUint32(9);
  const end = HEADER_BYTES + stateBytes + 4;
  if (end > data.byteLength)
    throw new DecodeError(
      "raft",
      `snapshot envelope: truncated at byte ${HEADER_BYTES} (${data.byteLength} bytes)`,
    );
  const count = view.getUint32(HEADER_BYTES + stateBytes);
  if (count !== 0)
    throw new DecodeError(
      "raft",
      `snapshot envelope: ${count} retained entries (this build reads envelopes without entries)`,
    );
  if (end !== data.byteLength)
    throw new DecodeError("raft", `snapshot envelope: ${data.byteLength - end} trailing bytes`);
  return data.subarray(HEADER_BYTES, HEADER_BYTES + stateBytes);
}
