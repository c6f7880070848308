// What the host stores and sends as a group's snapshot data: the state machine's own snapshot
// plus the log entries at or below the snapshot index that the state machine still retains
// (StateMachine.retainFromIndex). A state machine that keeps its bulk (a partition's records)
// in the Raft log snapshots only its metadata; the entries travel with the snapshot only when
// a follower is sent one, or when this replica itself got its state from a snapshot and so
// holds no log for them. Layout: version u8, retainFromIndex u64, state length u32, state,
// entry count u32, then each entry as length u32 + the Raft codec's entry encoding.
import { CodecError, decodeEntry, encodeEntry } from "../raft/codec.js";
import type { Entry } from "../raft/types.js";

const ENVELOPE_VERSION = 1;
const HEADER_BYTES = 1 + 8 + 4;
/** A corrupt count fails fast instead of allocating. */
const ENTRIES_MAX = 10_000_000;
const TWO_POW_32 = 4294967296;

export interface SnapshotEnvelope {
  /** The state machine's snapshot() output. */
  readonly state: Uint8Array;
  /** The lowest index the state machine retained at the snapshot (index + 1 when none). */
  readonly retainFromIndex: number;
  /** Retained entries at or below the snapshot index, ascending (possibly none). */
  readonly entries: readonly Entry[];
}

export function encodeSnapshotEnvelope(e: SnapshotEnvelope): Uint8Array {
  const encoded = e.entries.map(encodeEntry);
  let size = HEADER_BYTES + e.state.byteLength + 4;
  for (const b of encoded) size += 4 + b.byteLength;
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  let pos = 0;
  view.setUint8(pos, ENVELOPE_VERSION);
  pos += 1;
  if (!Number.isSafeInteger(e.retainFromIndex) || e.retainFromIndex < 0) throw new CodecError(`snapshot envelope: bad retainFromIndex ${e.retainFromIndex}`);
  view.setUint32(pos, Math.floor(e.retainFromIndex / TWO_POW_32));
  view.setUint32(pos + 4, e.retainFromIndex >>> 0);
  pos += 8;
  view.setUint32(pos, e.state.byteLength);
  pos += 4;
  out.set(e.state, pos);
  pos += e.state.byteLength;
  view.setUint32(pos, encoded.length);
  pos += 4;
  for (const b of encoded) {
    view.setUint32(pos, b.byteLength);
    out.set(b, pos + 4);
    pos += 4 + b.byteLength;
  }
  return out;
}

/** Byte fields are views into data. Throws CodecError on anything malformed. */
export function decodeSnapshotEnvelope(data: Uint8Array): SnapshotEnvelope {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const need = (pos: number, n: number): void => {
    if (pos + n > data.byteLength) throw new CodecError(`snapshot envelope: truncated at byte ${pos} (${data.byteLength} bytes)`);
  };
  need(0, HEADER_BYTES);
  const version = view.getUint8(0);
  if (version !== ENVELOPE_VERSION) throw new CodecError(`snapshot envelope: unknown version ${version}`);
  const retainFromIndex = view.getUint32(1) * TWO_POW_32 + view.getUint32(5);
  const stateBytes = view.getUint32(9);
  let pos = HEADER_BYTES;
  need(pos, stateBytes + 4);
  const state = data.subarray(pos, pos + stateBytes);
  pos += stateBytes;
  const count = view.getUint32(pos);
  pos += 4;
  if (count > ENTRIES_MAX) throw new CodecError(`snapshot envelope: ${count} entries`);
  const entries: Entry[] = [];
  for (let i = 0; i < count; i++) {
    need(pos, 4);
    const n = view.getUint32(pos);
    need(pos + 4, n);
    const entry = decodeEntry(data.subarray(pos + 4, pos + 4 + n));
    if (entries.length > 0 && entry.index <= entries[entries.length - 1]!.index) throw new CodecError(`snapshot envelope: entry ${entry.index} after ${entries[entries.length - 1]!.index}`);
    entries.push(entry);
    pos += 4 + n;
  }
  if (pos !== data.byteLength) throw new CodecError(`snapshot envelope: ${data.byteLength - pos} trailing bytes`);
  return { state, retainFromIndex, entries };
}
