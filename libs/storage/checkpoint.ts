// The state just before a segment's first entry, kept beside it (<base>.checkpoint): the Raft
// index and term of the entry before, the next offset, the membership, and the state machine's
// snapshot at that index. It is what a follower whose log ends before this segment installs
// (then the leader streams it the entries), and where a segment's offsets start. Written once,
// atomically (temporary file, fsync, rename), when the segment is created; a new log's first
// checkpoint skips the fsyncs and is synced with the segment's first sync (segment.ts).
import { open } from "node:fs/promises";
import { noteSynced } from "../common/sync-manifest.js";
import {
  closeSync,
  existsSync,
  fsyncSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  writeSync,
} from "node:fs";
import { dirname } from "node:path";
import { crc32 } from "node:zlib";
import { corrupt } from "./log-record.js";

const CHECKPOINT_VERSION = 1;
const MEMBERS_MAX = 1024;

export interface Checkpoint {
  /** The Raft index before the segment's first entry, and its term. */
  readonly index: number;
  readonly term: number;
  /** The next offset at that point: the segment's first offset. */
  readonly nextOffset: bigint;
  readonly voters: readonly number[];
  readonly learners: readonly number[];
  /** The state machine's snapshot at `index` (empty for a log's very first segment). */
  readonly state: Uint8Array;
}

export function encodeCheckpoint(c: Checkpoint): Buffer {
  const size =
    4 +
    1 +
    8 +
    8 +
    8 +
    4 +
    c.voters.length * 4 +
    4 +
    c.learners.length * 4 +
    4 +
    c.state.byteLength;
  const out = Buffer.allocUnsafe(size);
  let at = 4;
  at = out.writeUInt8(CHECKPOINT_VERSION, at);
  at = out.writeBigUInt64BE(BigInt(c.index), at);
  at = out.writeBigUInt64BE(BigInt(c.term), at);
  at = out.writeBigInt64BE(c.nextOffset, at);
  at = out.writeUInt32BE(c.voters.length, at);
  for (const v of c.voters) at = out.writeInt32BE(v, at);
  at = out.writeUInt32BE(c.learners.length, at);
  for (const v of c.learners) at = out.writeInt32BE(v, at);
  at = out.writeUInt32BE(c.state.byteLength, at);
  out.set(c.state, at);
  out.writeUInt32BE(crc32(out.subarray(4)) >>> 0, 0);
  return out;
}

export function decodeCheckpoint(buf: Buffer, what: string): Checkpoint {
  if (buf.byteLength < 4 + 1 + 24 + 12) throw corrupt(`${what}: ${buf.byteLength} bytes`);
  if (crc32(buf.subarray(4)) >>> 0 !== buf.readUInt32BE(0))
    throw corrupt(`${what}: checksum mismatch`);
  let at = 4;
  const version = buf.readUInt8(at);
  at += 1;
  if (version !== CHECKPOINT_VERSION) throw corrupt(`${what}: version ${version}`);
  const index = Number(buf.readBigUInt64BE(at));
  const term = Number(buf.readBigUInt64BE(at + 8));
  const nextOffset = buf.readBigInt64BE(at + 16);
  at += 24;
  const members = (): number[] => {
    const n = buf.readUInt32BE(at);
    at += 4;
    if (n > MEMBERS_MAX) throw corrupt(`${what}: ${n} members`);
    const out: number[] = [];
    for (let i = 0; i < n; i++, at += 4) out.push(buf.readInt32BE(at));
    return out;
  };
  const voters = members();
  const learners = members();
  const stateBytes = buf.readUInt32BE(at);
  at += 4;
  if (at + stateBytes !== buf.byteLength)
    throw corrupt(`${what}: state of ${stateBytes} bytes in ${buf.byteLength - at}`);
  return { index, term, nextOffset, voters, learners, state: buf.subarray(at) };
}

export function writeCheckpoint(path: string, c: Checkpoint): void {
  writeFileDurably(path, encodeCheckpoint(c));
}

/**
 * Writes a checkpoint atomically (temporary file, rename) but not durably: a crash may lose it,
 * or leave it empty. syncFileAndDirectory makes it durable later.
 */
export function writeCheckpointUnsynced(path: string, c: Checkpoint): void {
  const tmp = `${path}.tmp`;
  const fd = openSync(tmp, "w");
  try {
    writeSync(fd, encodeCheckpoint(c));
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
}

/** fsync of a file and of its directory in the thread pool (what writeFileDurably does inline). */
export async function syncFileAndDirectory(path: string): Promise<void> {
  for (const p of [path, dirname(path)]) {
    const handle = await open(p, "r");
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  }
  noteSynced(path, sizeOf(path));
}

/** syncFileAndDirectory on the event loop (once per partition, when its first segment is sealed). */
export function syncFileAndDirectoryNow(path: string): void {
  const fd = openSync(path, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  syncDirectory(dirname(path));
  noteSynced(path, sizeOf(path));
}

/**
 * Replaces path's content atomically and durably: a temporary file beside it, fsync, rename,
 * directory fsync. A crash leaves the old content or the new one (and maybe `path.tmp`).
 */
export function writeFileDurably(path: string, bytes: Uint8Array): void {
  const tmp = `${path}.tmp`;
  const fd = openSync(tmp, "w");
  try {
    writeSync(fd, bytes);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
  syncDirectory(dirname(path));
  noteSynced(path, bytes.byteLength);
}

export function readCheckpoint(path: string): Checkpoint | undefined {
  if (!existsSync(path)) return undefined;
  return decodeCheckpoint(readFileSync(path), path);
}

function sizeOf(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

/** Makes a rename or unlink in dir durable. */
export function syncDirectory(dir: string): void {
  const fd = openSync(dir, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
