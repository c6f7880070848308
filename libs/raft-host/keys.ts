// Key layout of the one level database per process (binary keys, byte-wise order):
//
//   "g" <groupId utf8> 0x00 "c"               conf state          (disk-codec ConfState)
//   "g" <groupId utf8> 0x00 "e" <index u64be> log entry           (disk-codec Entry)
//   "g" <groupId utf8> 0x00 "h"               hard state          (term, vote, commit)
//   "g" <groupId utf8> 0x00 "k"               log start           (index, term of the last compacted entry)
//   "g" <groupId utf8> 0x00 "m"               snapshot metadata   (index, term, data size, conf state)
//   "g" <groupId utf8> 0x00 "s"               snapshot data       (state machine bytes)
//
// A group's whole key range is ["g" id 0x00, "g" id 0x01), so dropping a group is one range
// delete and reading it back is one ordered scan. Group ids never contain 0x00. Entry indexes
// are big-endian so that the scan returns entries in index order.
import { assert } from "../common/assert.js";

const GROUP_PREFIX = 0x67; // "g"
const SEPARATOR = 0x00;
const END = 0x01;
export const KIND_CONF = 0x63; // "c"
export const KIND_ENTRY = 0x65; // "e"
export const KIND_HARD = 0x68; // "h"
export const KIND_LOG_START = 0x6b; // "k"
export const KIND_SNAP_META = 0x6d; // "m"
export const KIND_SNAP_DATA = 0x73; // "s"
const GROUP_ID_BYTES_MAX = 512;

const encoder = new TextEncoder();

export function groupPrefix(groupId: string): Uint8Array {
  const id = encoder.encode(groupId);
  assert(
    id.byteLength > 0 && id.byteLength <= GROUP_ID_BYTES_MAX,
    () => `group id "${groupId}" must be 1..${GROUP_ID_BYTES_MAX} bytes`,
  );
  assert(!id.includes(SEPARATOR), () => `group id "${groupId}" contains a NUL byte`);
  const out = new Uint8Array(id.byteLength + 2);
  out[0] = GROUP_PREFIX;
  out.set(id, 1);
  out[id.byteLength + 1] = SEPARATOR;
  return out;
}

/** Keys of one group, built once per group. */
export class GroupKeys {
  readonly prefix: Uint8Array;
  readonly conf: Uint8Array;
  readonly hard: Uint8Array;
  readonly logStart: Uint8Array;
  readonly snapMeta: Uint8Array;
  readonly snapData: Uint8Array;
  /** Bounds of the group's whole range. */
  readonly rangeStart: Uint8Array;
  readonly rangeEnd: Uint8Array;
  /** Bounds of the entry range. */
  readonly entriesStart: Uint8Array;
  readonly entriesEnd: Uint8Array;

  constructor(readonly groupId: string) {
    this.prefix = groupPrefix(groupId);
    this.conf = this.kind(KIND_CONF);
    this.hard = this.kind(KIND_HARD);
    this.logStart = this.kind(KIND_LOG_START);
    this.snapMeta = this.kind(KIND_SNAP_META);
    this.snapData = this.kind(KIND_SNAP_DATA);
    this.rangeStart = this.prefix;
    this.rangeEnd = this.prefix.slice();
    this.rangeEnd[this.rangeEnd.byteLength - 1] = END;
    this.entriesStart = this.kind(KIND_ENTRY);
    this.entriesEnd = this.kind(KIND_ENTRY + 1);
  }

  private kind(kind: number): Uint8Array {
    const out = new Uint8Array(this.prefix.byteLength + 1);
    out.set(this.prefix);
    out[this.prefix.byteLength] = kind;
    return out;
  }

  entry(index: number): Uint8Array {
    assert(
      Number.isSafeInteger(index) && index > 0,
      () => `entry index ${index} must be a positive safe integer`,
    );
    const out = new Uint8Array(this.prefix.byteLength + 9);
    out.set(this.prefix);
    const at = this.prefix.byteLength;
    out[at] = KIND_ENTRY;
    const view = new DataView(out.buffer);
    view.setUint32(at + 1, Math.floor(index / 0x1_0000_0000));
    view.setUint32(at + 5, index >>> 0);
    return out;
  }

  /** The index of an entry key of this group. */
  indexOf(key: Uint8Array): number {
    const at = this.prefix.byteLength;
    assert(key.byteLength === at + 9 && key[at] === KIND_ENTRY, "not an entry key of this group");
    const view = new DataView(key.buffer, key.byteOffset, key.byteLength);
    return view.getUint32(at + 1) * 0x1_0000_0000 + view.getUint32(at + 5);
  }
}
